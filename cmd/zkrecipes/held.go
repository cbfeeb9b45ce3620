package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Why a hold was lost, in the words of what happened: a hold's cause wraps
// connection.ErrSuspended, connection.ErrSessionLost or
// connection.ErrNodeDeleted, and the command says it for a reader who may
// not know ZooKeeper's states.
var (
	errLostSuspended = errors.New("connection suspended — counted as lost under the standard policy")
	errLostSession   = errors.New("session lost (expired, or cut off from the servers for longer than the session timeout)")
	errLostNode      = errors.New("its node was deleted (by another client, or an operator)")
)

// lossCause maps the cause of a hold's end to what happened: the node
// deleted, the connection suspended under the standard policy (the
// session may live on), or the session lost. A cause that is none of
// them (a release) is kept.
func lossCause(cause error) error {
	switch {
	case errors.Is(cause, connection.ErrNodeDeleted):
		return errLostNode
	case errors.Is(cause, connection.ErrSuspended):
		return errLostSuspended
	case errors.Is(cause, connection.ErrSessionLost):
		return errLostSession
	}
	return cause
}

// explained is a hold whose Context's cause, once it is lost, is
// lossCause's: what runUnder and holdUntilSignal report.
type explained struct {
	hold
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stop    func() bool
	timeout time.Duration // the session's negotiated timeout, 0 if unknown
	client  *connection.Client
	sess    *connection.Session // the session h was taken in; nil if h was over already
}

// explainLoss wraps h, just taken on c. The session it was taken in is
// the client's current one, unless h is already over (then trustedNow
// says no).
func explainLoss(h hold, c *connection.Client) *explained {
	sess := c.Session()
	select {
	case <-h.Done():
		sess = nil
	default:
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	e := &explained{hold: h, ctx: ctx, cancel: cancel, client: c, sess: sess}
	if sess != nil {
		e.timeout = sess.Timeout()
	}
	e.stop = context.AfterFunc(h.Context(), func() {
		cancel(lossCause(context.Cause(h.Context())))
	})
	return e
}

// trustedNow reports whether the hold can still be trusted at this
// moment, not only whether it has been found lost: what runUnder asks
// before it continues a stopped CMD, since while zkrecipes was stopped
// nothing noticed anything. It asks the server a question in the hold's
// session (up to the session timeout): ZooKeeper answers it only after
// the notifications it sent before, such as the deletion of the hold's
// node, which have then ended the hold. Then it asks the client whether
// the session's silence still allows trust now (Client.TrustedNow), which
// its watchdog, stopped with zkrecipes, may not have looked at yet. A
// question the server does not answer in time counts as untrusted.
func (e *explained) trustedNow() bool {
	if e.sess == nil || holdOver(e.hold) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.sess.Timeout())
	defer cancel()
	_, _, err := e.client.Exists(ctx, "/")
	return err == nil && !holdOver(e.hold) && e.client.TrustedNow(e.sess)
}

// holdOver reports whether h has ended, asking the hold's context itself,
// which the hold's end cancels at once (a Done may close a moment later).
func holdOver(h hold) bool {
	if o, ok := h.(interface{ over() bool }); ok {
		return o.over()
	}
	return h.Context().Err() != nil
}

func (e *explained) Done() <-chan struct{}    { return e.ctx.Done() }
func (e *explained) Context() context.Context { return e.ctx }

func (e *explained) sessionTimeout() time.Duration { return e.timeout }

// close stops following the hold.
func (e *explained) close() {
	e.stop()
	e.cancel(context.Canceled)
}

// runHeld is what lock, semaphore and elect do once they hold h: run CMD
// under it, or without CMD say what is held and keep it until a signal.
func runHeld(ctx context.Context, c *connection.Client, h hold, r underRun, holding string, out, errOut io.Writer) error {
	e := explainLoss(h, c)
	defer e.close()
	if len(r.cmdArgs) == 0 {
		return holdUntilSignal(ctx, e, holding, r.what, out)
	}
	return runUnder(e, r, out, errOut)
}

// holdUntilSignal prints what is held ("holding /x: token 12, node
// /x/_c_...-lock-0000000003") and waits, as etcdctl lock NAME does, for
// ctx to end (a signal: the caller releases, exit 0) or for the hold to
// be lost (exit 4, saying why).
func holdUntilSignal(ctx context.Context, h hold, holding, what string, out io.Writer) error {
	fmt.Fprintf(out, "%s: token %d, node %s\n", holding, h.Token(), h.Node())
	select {
	case <-ctx.Done():
		return nil
	case <-h.Done():
		return &exitError{exitLost, fmt.Sprintf("%s lost: %v", what, context.Cause(h.Context()))}
	}
}
