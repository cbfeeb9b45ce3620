package connection_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/retry"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestDeleteCreatedNeverDeletesANodeMadeAgainByAnother: a node made by
// the client is deleted by an operator, and another session makes a node
// again at the same path. DeleteCreated with the czxid of the client's
// node must leave the other session's node alone: it deletes "the node
// created at czxid, and no other node".
func TestDeleteCreatedNeverDeletesANodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/n"
	obs := ens.Conn(t)
	other := ens.Conn(t)
	ctx := ctxFor(t, 20*time.Second)
	c := open(t, ens.Servers())
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := obs.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	mine := st.Czxid
	if err := obs.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	derr := c.DeleteCreated(ctx, p, mine)
	ok, st, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || st.EphemeralOwner != other.SessionID() {
		t.Errorf("DeleteCreated(czxid %#x) = %v deleted the node another session made at %s (exists %v)", mine, derr, p, ok)
	}
}

// TestDeleteCreatedNeverDeletesANodeMadeAgainThatItsServerHasNotSeen: the
// client is connected to a follower that is behind the leader (links
// between servers slow, as across datacenters). An operator deletes the
// client's node and another session makes a node again at the same path,
// both on the leader; the follower has not applied them yet. DeleteCreated
// with the czxid of the client's node must leave the other session's node
// alone: a read on the follower alone would still show the client's node,
// at the version the other's has (0).
func TestDeleteCreatedNeverDeletesANodeMadeAgainThatItsServerHasNotSeen(t *testing.T) {
	t.Parallel()
	ens := testkit.NewLagging(t)
	p := ens.Root(t) + "/n"
	ctx := ctxFor(t, time.Minute)
	c := open(t, ens.Follower, connection.WithSessionTimeout(10*time.Second))
	mine := createOwn(ctx, t, c, p)
	operator, other := ens.OnLeader(t), ens.OnLeader(t)
	const lag = 300 * time.Millisecond
	ens.Lag(t, lag)
	if err := operator.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	made := make(chan error, 1)
	go func() {
		_, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		made <- err
	}()
	time.Sleep(lag / 6) // the other's create reaches the leader first
	derr := c.DeleteCreated(ctx, p, mine)
	if err := <-made; err != nil {
		t.Fatalf("the other session's create: %v", err)
	}
	ens.Lag(t, 0)
	if _, err := operator.Sync(p); err != nil {
		t.Fatal(err)
	}
	ok, st, err := operator.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || st.EphemeralOwner != other.SessionID() {
		t.Errorf("DeleteCreated(czxid %#x) = %v deleted the node another session made at %s after ours was deleted (exists %v)", mine, derr, p, ok)
	}
}

// TestDeleteCreatedNeverResendsADeleteWhoseAnswerWasLost: DeleteCreated's
// delete applies and its answer is lost; before the client reconnects,
// another session makes a node at the path, at the same version (0). The
// retry must prove the node before it deletes: the other's node stays.
func TestDeleteCreatedNeverResendsADeleteWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	lost := testkit.NewLostDelete(proxy, obs, other, p)
	c := open(t, proxy.Servers(), connection.WithObserver(lost.Observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	lost.Arm()
	derr := c.DeleteCreated(ctx, p, czxid)
	lost.Made(t)
	ok, got, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || got.EphemeralOwner != other.SessionID() {
		t.Errorf("DeleteCreated = %v: the node another session made after the lost answer is gone (exists %v)", derr, ok)
	}
}

// TestDeleteCreatedDeletesItsNodeWrittenBetweenItsReadAndItsDelete: a
// write to the node (a revocation's) lands between DeleteCreated's read
// and its delete at the version read. The delete fails with BadVersion;
// DeleteCreated must read again and delete its node, and report nil.
func TestDeleteCreatedDeletesItsNodeWrittenBetweenItsReadAndItsDelete(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/n"
	obs := ens.Conn(t)
	var armed atomic.Bool
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op != "exists" || r.Path != p || !armed.CompareAndSwap(true, false) {
			return nil
		}
		return func(connection.RequestDone) {
			if _, err := obs.Set(p, []byte("__REVOKE__"), -1); err != nil {
				t.Errorf("the write between the read and the delete: %v", err)
			}
		}
	}}
	c := open(t, ens.Servers(), connection.WithObserver(observer))
	ctx := ctxFor(t, 20*time.Second)
	czxid := createOwn(ctx, t, c, p)
	armed.Store(true)
	derr := c.DeleteCreated(ctx, p, czxid)
	if armed.Load() {
		t.Fatal("DeleteCreated sent no read: not the case under test")
	}
	ok, _, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if derr != nil || ok {
		t.Errorf("DeleteCreated after a write between its read and its delete = %v, node still there %v", derr, ok)
	}
}

// slowDone is a context whose Done, once armed, takes a while to answer:
// a caller's context may do work in Done, and a goroutine may be
// descheduled anywhere (the OS preempts it, a busy machine runs others).
type slowDone struct {
	context.Context
	armed *atomic.Bool
	delay time.Duration
}

func (c slowDone) Done() <-chan struct{} {
	if c.armed.CompareAndSwap(true, false) {
		time.Sleep(c.delay)
	}
	return c.Context.Done()
}

// TestDeleteCreatedReadsTheNodeWhenItsSyncIsAnsweredBeforeItLooks: the
// goroutine that sent DeleteCreated's sync is slow to look at it again
// (here its context's Done takes 100ms, as a descheduled goroutine would):
// by then the sync was written and answered. DeleteCreated must still
// read the node before it deletes it, and delete it: no panic, no delete
// of a node never read.
func TestDeleteCreatedReadsTheNodeWhenItsSyncIsAnsweredBeforeItLooks(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	var armed atomic.Bool
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op == "sync" && strings.HasPrefix(r.Path, root) {
			armed.Store(true) // the next Done is the one syncedRead's select calls
		}
		return nil
	}}
	c := open(t, ens.Servers(), connection.WithObserver(observer))
	base := ctxFor(t, 60*time.Second)
	for i := 0; i < 16; i++ {
		p := fmt.Sprintf("%s/n%d", root, i)
		czxid := createOwn(base, t, c, p)
		var derr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("DeleteCreated, its sync answered before its goroutine looked (try %d): panic: %v", i, r)
				}
			}()
			derr = c.DeleteCreated(slowDone{base, &armed, 100 * time.Millisecond}, p, czxid)
		}()
		armed.Store(false)
		if derr != nil {
			t.Fatalf("DeleteCreated (try %d) = %v", i, derr)
		}
		if ok, _, err := c.Exists(base, p); err != nil || ok {
			t.Fatalf("DeleteCreated (try %d) = nil, node still there %v (%v)", i, ok, err)
		}
	}
}

// TestDeleteCreatedNeverDeletesANodeMadeAgainWhileItsDeleteWaitedForAConnection:
// DeleteCreated read its node (synced) and hands its delete, at the
// version read, to go-zookeeper just as the connection drops: go-zookeeper
// keeps a request queued while it reconnects, and sends it on the next
// connection of the session. Meanwhile an operator deletes the client's
// node and another session makes one at the path, at the same version
// (0). The delete must never be written on another connection than the
// read it was decided on: the other's node stays.
func TestDeleteCreatedNeverDeletesANodeMadeAgainWhileItsDeleteWaitedForAConnection(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	cut := testkit.NewCutDelete(proxy, obs, other, p)
	c := open(t, proxy.Servers(), connection.WithObserver(cut.Observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	cut.Arm()
	derr := c.DeleteCreated(ctx, p, czxid)
	cut.Made(t)
	if !ownedBy(t, obs, p, other.SessionID()) {
		t.Errorf("DeleteCreated = %v: the node another session made while its delete waited for a connection is gone (requests sent: %v)", derr, cut.Sent())
	}
}

// TestDeleteCreatedWhoseContextEndedNeverDeletesANodeMadeAgainLater: as
// above, but the caller's context ends while the connection is down:
// DeleteCreated returns (its outcome unknown), and the caller moves on.
// Only then does an operator delete the node and another session make one
// at the path. Nothing DeleteCreated sent may delete it once the client is
// back.
func TestDeleteCreatedWhoseContextEndedNeverDeletesANodeMadeAgainLater(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	other := ens.Conn(t)
	var armed atomic.Bool
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op != "delete" || r.Path != p || !armed.CompareAndSwap(true, false) {
			return nil
		}
		proxy.Cut()
		proxy.Blackhole()
		time.Sleep(200 * time.Millisecond)
		return nil
	}}
	c := open(t, proxy.Servers(), connection.WithObserver(observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	armed.Store(true)
	short, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	derr := c.DeleteCreated(short, p, czxid)
	cancel()
	if !errors.Is(derr, context.DeadlineExceeded) {
		t.Fatalf("DeleteCreated whose context ended while its connection was down = %v, want context.DeadlineExceeded", derr)
	}
	// The caller has its answer. Now the operator and the other session.
	if err := obs.Delete(p, -1); err != nil {
		t.Fatalf("the operator's delete: %v", err)
	}
	if _, err := other.Create(p, []byte("theirs"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()
	if _, _, err := c.Exists(ctx, "/"); err != nil { // reconnected
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	ok, got, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || got.EphemeralOwner != other.SessionID() {
		t.Errorf("DeleteCreated returned %v; after it, the node another session made at %s is gone (exists %v)", derr, p, ok)
	}
}

// TestDeleteCreatedTellsTheObserverEachRequestOnceWhenItsConnectionDropsBetweenSyncAndRead:
// the connection drops after DeleteCreated's sync is sent and as its read
// is handed to the connection. Every request — the sync that is never
// answered, the read, the retry's — is told to the observer once, with
// one outcome; the sync's failure says the connection was lost; and the
// node is deleted.
func TestDeleteCreatedTellsTheObserverEachRequestOnceWhenItsConnectionDropsBetweenSyncAndRead(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	var (
		watching atomic.Bool
		armed    atomic.Bool
		mu       sync.Mutex
		log      []string
		outcomes = map[int]int{}
		errs     = map[int]error{}
	)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if !watching.Load() || r.Path != p {
			return nil
		}
		mu.Lock()
		i := len(log)
		log = append(log, fmt.Sprintf("%s#%d", r.Op, r.Attempt))
		mu.Unlock()
		if r.Op == "exists" && armed.CompareAndSwap(true, false) {
			proxy.Cut() // the sync is written, the read not yet
			proxy.Restore()
		}
		return func(d connection.RequestDone) {
			mu.Lock()
			outcomes[i]++
			errs[i] = d.Err
			mu.Unlock()
		}
	}}
	c := open(t, proxy.Servers(), connection.WithObserver(observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	watching.Store(true)
	armed.Store(true)
	derr := c.DeleteCreated(ctx, p, czxid)
	zktest.Eventually(t, 10*time.Second, "every request told its outcome", func() error {
		mu.Lock()
		defer mu.Unlock()
		for i := range log {
			if outcomes[i] != 1 {
				return fmt.Errorf("%s told %d outcomes (requests %v)", log[i], outcomes[i], log)
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(log) == 0 || log[0] != "sync#1" {
		t.Fatalf("requests %v, want the sync first", log)
	}
	if !errors.Is(errs[0], zk.ErrConnectionClosed) && errs[0] != nil {
		t.Errorf("the first sync's outcome = %v, want success or zk.ErrConnectionClosed", errs[0])
	}
	if ok, _, err := obs.Exists(p); derr != nil || err != nil || ok {
		t.Errorf("DeleteCreated across a drop between its sync and its read = %v, node still there %v (%v); requests %v", derr, ok, err, log)
	}
	t.Logf("requests %v, outcomes %v", log, errs)
}

// TestDeleteCreatedWhoseContextEndedBeforeItsReadWasWrittenSendsNoDelete:
// the caller's context ends as DeleteCreated's read is handed to the
// connection, before it is written, and the goroutine looks at the read's
// answer only once it is in (its context's Done is slow, as a descheduled
// goroutine is). The deadline was shorter than the read's reply: no
// delete may be written after it, and the call must not say that one may
// have applied (ErrOutcomeUnknown).
func TestDeleteCreatedWhoseContextEndedBeforeItsReadWasWrittenSendsNoDelete(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	var (
		armed   atomic.Bool
		mu      sync.Mutex
		cur     string
		cancel  context.CancelFunc
		ended   bool
		deletes int // delete requests handed over after the context ended
	)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		mu.Lock()
		defer mu.Unlock()
		if r.Path != cur {
			return nil
		}
		switch {
		case r.Op == "exists" && !ended:
			ended = true
			cancel()
			armed.Store(true) // the next Done is the one the read's select calls
		case r.Op == "delete" && ended:
			deletes++
		}
		return nil
	}}
	c := open(t, ens.Servers(), connection.WithObserver(observer))
	base := ctxFor(t, 60*time.Second)
	for i := 0; i < 16; i++ {
		p := fmt.Sprintf("%s/n%d", root, i)
		czxid := createOwn(base, t, c, p)
		ctx, cancelCtx := context.WithCancel(base)
		mu.Lock()
		cur, cancel, ended, deletes = p, cancelCtx, false, 0
		mu.Unlock()
		derr := c.DeleteCreated(slowDone{ctx, &armed, 100 * time.Millisecond}, p, czxid)
		armed.Store(false)
		cancelCtx()
		mu.Lock()
		n, wasEnded := deletes, ended
		cur = ""
		mu.Unlock()
		if !wasEnded {
			t.Fatalf("try %d: DeleteCreated sent no read: not the case under test", i)
		}
		if n > 0 || errors.Is(derr, connection.ErrOutcomeUnknown) {
			t.Fatalf("try %d: context ended before DeleteCreated's read was written; it then sent %d delete(s) and returned %v", i, n, derr)
		}
	}
}

// TestDeleteCreatedWhoseReadWasLostWithItsConnectionNeverSaysAWriteMayHaveApplied:
// the answers to DeleteCreated's sync and read are lost, then the
// connection drops and the client cannot reconnect before the caller's
// deadline. No delete was ever sent: the error must not say that one may
// have applied (ErrOutcomeUnknown), and the node is still there.
func TestDeleteCreatedWhoseReadWasLostWithItsConnectionNeverSaysAWriteMayHaveApplied(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	var (
		armed, watching atomic.Bool
		mu              sync.Mutex
		ops             []string
	)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Path != p || !watching.Load() {
			return nil
		}
		mu.Lock()
		ops = append(ops, fmt.Sprintf("%s#%d", r.Op, r.Attempt))
		mu.Unlock()
		if r.Op == "exists" && armed.CompareAndSwap(true, false) {
			proxy.DropReplies() // the read is written, its answer lost
			go func() {
				time.Sleep(200 * time.Millisecond)
				proxy.Cut() // the connection drops; no other until Restore
			}()
		}
		return nil
	}}
	c := open(t, proxy.Servers(), connection.WithObserver(observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	watching.Store(true)
	armed.Store(true)
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	derr := c.DeleteCreated(short, p, czxid)
	cancel()
	watching.Store(false)
	proxy.Restore()
	mu.Lock()
	sent := append([]string(nil), ops...)
	mu.Unlock()
	for _, op := range sent {
		if strings.HasPrefix(op, "delete") {
			t.Fatalf("DeleteCreated sent a delete (requests %v): not the case under test", sent)
		}
	}
	if ok, _, err := obs.Exists(p); err != nil || !ok {
		t.Fatalf("node gone (%v) though no delete was sent (requests %v)", err, sent)
	}
	if errors.Is(derr, connection.ErrOutcomeUnknown) {
		t.Errorf("DeleteCreated sent no delete (requests %v) and returned %v", sent, derr)
	}
}

// TestDeleteCreatedThatSentNothingBeforeCloseNeverSaysAWriteMayHaveApplied:
// DeleteCreated is called while the client is cut off; it sends nothing
// and waits for the connection. The client is closed meanwhile: the error
// is ErrClosed, and must not say that a write may have applied.
func TestDeleteCreatedThatSentNothingBeforeCloseNeverSaysAWriteMayHaveApplied(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	var (
		watching atomic.Bool
		mu       sync.Mutex
		ops      []string
	)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Path == p && watching.Load() {
			mu.Lock()
			ops = append(ops, fmt.Sprintf("%s#%d", r.Op, r.Attempt))
			mu.Unlock()
		}
		return nil
	}}
	c := open(t, proxy.Servers(), connection.WithObserver(observer), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	sess := c.Session()
	proxy.Cut()
	defer proxy.Restore()
	select {
	case <-sess.Untrusted():
	case <-time.After(5 * time.Second):
		t.Fatal("the client never saw its connection drop")
	}
	watching.Store(true)
	res := make(chan error, 1)
	go func() { res <- c.DeleteCreated(ctx, p, czxid) }()
	time.Sleep(500 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	var derr error
	select {
	case derr = <-res:
	case <-time.After(10 * time.Second):
		t.Fatal("DeleteCreated never returned after Close")
	}
	mu.Lock()
	sent := append([]string(nil), ops...)
	mu.Unlock()
	if len(sent) > 0 {
		t.Fatalf("DeleteCreated sent %v while cut off: not the case under test", sent)
	}
	if !errors.Is(derr, connection.ErrClosed) || errors.Is(derr, connection.ErrOutcomeUnknown) {
		t.Errorf("DeleteCreated that sent nothing, client closed = %v; want ErrClosed, not ErrOutcomeUnknown", derr)
	}
}

// TestDeleteCreatedWhoseOnlyDeleteWasRefusedForItsVersionNeverSaysItMayHaveApplied:
// a write to the node lands between DeleteCreated's read and its delete;
// the delete is answered BadVersion (it did not apply), and the caller's
// context ends before the next read. The one delete sent was answered:
// the outcome is known, the node is there, and the error must not say
// that a write may have applied.
func TestDeleteCreatedWhoseOnlyDeleteWasRefusedForItsVersionNeverSaysItMayHaveApplied(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Root(t) + "/n"
	obs := ens.Conn(t)
	var (
		armed   atomic.Bool
		mu      sync.Mutex
		cancel  context.CancelFunc
		answers []error
	)
	observer := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Path != p || !armed.Load() {
			return nil
		}
		switch r.Op {
		case "exists":
			return func(connection.RequestDone) {
				if _, err := obs.Set(p, []byte("__REVOKE__"), -1); err != nil {
					t.Errorf("the write between the read and the delete: %v", err)
				}
			}
		case "delete":
			armed.Store(false)
			return func(d connection.RequestDone) {
				mu.Lock()
				answers = append(answers, d.Err)
				cancelf := cancel
				mu.Unlock()
				go func() { time.Sleep(20 * time.Millisecond); cancelf() }()
			}
		}
		return nil
	}}
	c := open(t, ens.Servers(), connection.WithObserver(observer))
	base := ctxFor(t, 20*time.Second)
	czxid := createOwn(base, t, c, p)
	ctx, cancelCtx := context.WithCancel(base)
	defer cancelCtx()
	mu.Lock()
	cancel = cancelCtx
	mu.Unlock()
	armed.Store(true)
	derr := c.DeleteCreated(ctx, p, czxid)
	mu.Lock()
	got := append([]error(nil), answers...)
	mu.Unlock()
	if len(got) != 1 || !errors.Is(got[0], zk.ErrBadVersion) {
		t.Fatalf("delete answers %v, want one BadVersion: not the case under test (DeleteCreated = %v)", got, derr)
	}
	if ok, _, err := obs.Exists(p); err != nil || !ok {
		t.Fatalf("node gone (%v) after a delete refused for its version (DeleteCreated = %v)", err, derr)
	}
	if errors.Is(derr, connection.ErrOutcomeUnknown) {
		t.Errorf("DeleteCreated whose one delete was answered BadVersion, then its context ended = %v", derr)
	}
}

// TestDeleteCreatedCalledWhileCutOffCompletesPromptlyOnceReconnected: with
// Curator's recommended backoff (1 s base), DeleteCreated is called while
// the client is cut off; the cut is short. Once the session is trusted
// again, the delete must go at once, not after a backoff of the policy's.
func TestDeleteCreatedCalledWhileCutOffCompletesPromptlyOnceReconnected(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	p := ens.Root(t) + "/n"
	proxy := ens.Proxy(t)
	obs := ens.Conn(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(10*time.Second),
		connection.WithRetryPolicy(retry.BoundedExponentialBackoff(time.Second, 10, 5*time.Second)))
	ctx := ctxFor(t, 30*time.Second)
	czxid := createOwn(ctx, t, c, p)
	sess := c.Session()
	proxy.Cut()
	select {
	case <-sess.Untrusted():
	case <-time.After(5 * time.Second):
		proxy.Restore()
		t.Fatal("the client never saw its connection drop")
	}
	res := make(chan error, 1)
	go func() { res <- c.DeleteCreated(ctx, p, czxid) }()
	time.Sleep(300 * time.Millisecond)
	proxy.Restore()
	if _, err := sess.Trusted(ctx); err != nil {
		t.Fatal(err)
	}
	trusted := time.Now()
	derr := <-res
	after := time.Since(trusted)
	if derr != nil {
		t.Fatalf("DeleteCreated after a short cut = %v", derr)
	}
	if ok, _, err := obs.Exists(p); err != nil || ok {
		t.Fatalf("DeleteCreated = nil, node still there %v (%v)", ok, err)
	}
	if after > 500*time.Millisecond {
		t.Errorf("DeleteCreated returned %v after the session was trusted again, want it at once (< 500ms)", after.Round(time.Millisecond))
	}
}

// createOwn makes an ephemeral node at p on c and returns its czxid.
func createOwn(ctx context.Context, t *testing.T, c *connection.Client, p string) int64 {
	t.Helper()
	if _, err := c.Create(ctx, p, []byte("mine"), connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Czxid
}

// ownedBy reports whether the node at p, read through obs, is an
// ephemeral node of session.
func ownedBy(t *testing.T, obs *zk.Conn, p string, session int64) bool {
	t.Helper()
	ok, st, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	return ok && st.EphemeralOwner == session
}
