package lockcore

import (
	"context"
	"sync"
)

// AnyLost is one lost signal for several holds: Done closes, and Context
// is cancelled, when the first of them is lost. It owns a goroutine per
// hold, which Stop ends.
type AnyLost struct {
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	wg     sync.WaitGroup
}

// NewAnyLost watches dones; when dones[i] closes first, Done closes and
// Context's cause is cause(i).
func NewAnyLost(dones []<-chan struct{}, cause func(i int) error) *AnyLost {
	a := &AnyLost{done: make(chan struct{}), stop: make(chan struct{})}
	a.ctx, a.cancel = context.WithCancelCause(context.Background())
	var once sync.Once
	for i, d := range dones {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			select {
			case <-d:
				once.Do(func() {
					a.cancel(cause(i))
					close(a.done)
				})
			case <-a.stop:
			}
		}()
	}
	return a
}

// Done is closed when one of the holds is lost.
func (a *AnyLost) Done() <-chan struct{} { return a.done }

// Context is cancelled when Done closes, or at Stop with why.
func (a *AnyLost) Context() context.Context { return a.ctx }

// Stop ends the watching goroutines and cancels Context with why, unless a
// loss came first. Call it once.
func (a *AnyLost) Stop(why error) {
	close(a.stop)
	a.wg.Wait()
	a.cancel(why)
}
