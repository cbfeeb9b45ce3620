package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// famService is a service directory of curator-x-discovery's layout,
// <base>/<service>/<id> nodes holding instances' JSON (recipes/discovery).
// Its number is apart from the lock families' (inspect_look.go).
const famService family = 100

func init() {
	kindOf[famService] = "service"
	nameOf[famService] = "service"
}

// serviceInfo is a service's instances in inspect's JSON.
type serviceInfo struct {
	Name      string               `json:"name"`
	Instances []discovery.Instance `json:"instances"` // as Curator writes them
	Enabled   int                  `json:"enabled"`
	Invalid   []invalidNode        `json:"invalid,omitempty"`

	count int // brief: the children, not read
}

// invalidNode is a child of a service that holds no instance.
type invalidNode struct {
	Node  string `json:"node"`
	Error string `json:"error"`
}

// serviceProbe is how many children lookService reads to recognise a
// service (in a listing, one): an instance among them whose name is the
// directory's.
const serviceProbe = 3

// lookService reports whether dir, whose children are kids (sorted or
// not), is a service, and if so fills v: with brief, the number of its
// children only; otherwise every instance, as a participant each (role
// "instance", or "disabled"), and the instances' JSON.
func lookService(ctx context.Context, r *reader, v *view, kids []string, brief bool, now time.Time) (bool, error) {
	name := path.Base(v.Path)
	kids = slices.Clone(kids)
	slices.Sort(kids)
	found := false
	probe := serviceProbe
	if brief {
		probe = 1 // a listing looks at every directory: one read each
	}
	for _, k := range kids[:min(len(kids), probe)] {
		data, _, err := r.client.Get(ctx, path.Join(v.Path, k))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		if i, err := discovery.Decode(data); err == nil && i.Name == name {
			found = true
			break
		}
	}
	if !found {
		return false, nil
	}
	info := &serviceInfo{Name: name, Instances: []discovery.Instance{}, count: len(kids)}
	v.Service, v.fams, v.Kind = info, []family{famService}, kindOf[famService]
	if brief {
		return true, nil
	}
	info.count = 0
	for _, k := range kids {
		p := path.Join(v.Path, k)
		data, st, err := r.get(ctx, p, true)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing: the child watch says so
		}
		if err != nil {
			return false, err
		}
		i, err := discovery.Decode(data)
		if err != nil {
			info.Invalid = append(info.Invalid, invalidNode{Node: k, Error: strings.TrimPrefix(err.Error(), "discovery: ")})
			v.Notes = append(v.Notes, fmt.Sprintf("%s holds no service instance: %s", k, strings.TrimPrefix(err.Error(), "discovery: ")))
			continue
		}
		role := "instance"
		if i.Disabled {
			role = "disabled"
		} else {
			info.Enabled++
		}
		info.Instances = append(info.Instances, i)
		pt := newParticipant(p, famService, layout.Unknown, len(v.Participants), role, nil, st, now)
		pt.Recipe, pt.Kind, pt.Data = "service instance", "service-instance", instanceLine(i)
		v.Participants = append(v.Participants, pt)
	}
	info.count = len(info.Instances)
	return true, nil
}

// serviceTally sums a service up for a listing's line.
func serviceTally(v *view) tally {
	s := v.Service
	if s == nil {
		return tally{}
	}
	t := tally{holders: s.count}
	if len(s.Instances) == 0 && s.count > 0 {
		t.summary = fmt.Sprintf("%d instance(s)", s.count)
	} else {
		t.summary = fmt.Sprintf("%d instance(s), %d enabled", s.count, s.Enabled)
	}
	return t
}
