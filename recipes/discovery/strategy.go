package discovery

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// A Strategy picks one of the instances a provider offers (enabled, not
// reported down). Curator's ProviderStrategy.
type Strategy interface {
	// Pick returns one of instances, or false when there is none.
	Pick(instances []Instance) (Instance, bool)
}

// Random picks an instance at random each time.
func Random() Strategy { return randomStrategy{} }

type randomStrategy struct{}

func (randomStrategy) Pick(is []Instance) (Instance, bool) {
	if len(is) == 0 {
		return Instance{}, false
	}
	return is[rand.IntN(len(is))], true
}

// RoundRobin picks the instances in turn, in the order the provider lists
// them (by ID).
func RoundRobin() Strategy { return &roundRobin{} }

type roundRobin struct{ next atomic.Uint64 }

func (r *roundRobin) Pick(is []Instance) (Instance, bool) {
	if len(is) == 0 {
		return Instance{}, false
	}
	n := r.next.Add(1) - 1
	return is[n%uint64(len(is))], true
}

// Sticky picks an instance with master once and keeps it while it is
// offered (the same name and ID; its newest fields are returned); when it
// goes, master picks again.
func Sticky(master Strategy) Strategy { return &sticky{master: master} }

type sticky struct {
	master Strategy
	mu     sync.Mutex
	ours   *Instance
}

func (s *sticky) Pick(is []Instance) (Instance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ours != nil {
		for _, i := range is {
			if i.Name == s.ours.Name && i.ID == s.ours.ID {
				return i, true
			}
		}
		s.ours = nil
	}
	i, ok := s.master.Pick(is)
	if ok {
		s.ours = &i
	}
	return i, ok
}

// DownPolicy says when an instance reported down (Provider.NoteError) is
// left out: once it has been reported Threshold times, until Timeout after
// the first report. Curator's DownInstancePolicy.
type DownPolicy struct {
	Timeout   time.Duration
	Threshold int
}

// DefaultDownPolicy is Curator's default: two reports, 30 seconds.
var DefaultDownPolicy = DownPolicy{Timeout: 30 * time.Second, Threshold: 2}

// downList is a DownPolicy at work: the instances reported down, by name
// and ID.
type downList struct {
	policy DownPolicy
	now    func() time.Time
	mu     sync.Mutex
	down   map[instanceKey]*downStatus
}

type instanceKey struct{ name, id string }

type downStatus struct {
	first  time.Time
	errors int
}

func newDownList(p DownPolicy, now func() time.Time) *downList {
	if now == nil {
		now = time.Now
	}
	return &downList{policy: p, now: now, down: map[instanceKey]*downStatus{}}
}

// note records a report that i is down.
func (d *downList) note(i Instance) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.purgeLocked(now)
	k := instanceKey{i.Name, i.ID}
	st := d.down[k]
	if st == nil {
		st = &downStatus{first: now}
		d.down[k] = st
	}
	st.errors++
}

// up reports whether i may be offered.
func (d *downList) up(i Instance) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.purgeLocked(d.now())
	st := d.down[instanceKey{i.Name, i.ID}]
	return st == nil || st.errors < d.policy.Threshold
}

func (d *downList) purgeLocked(now time.Time) {
	for k, st := range d.down {
		if now.Sub(st.first) >= d.policy.Timeout {
			delete(d.down, k)
		}
	}
}
