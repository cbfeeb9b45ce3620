package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// signalCause is the cause of the context of a run that a signal ended:
// the exit status is then 128+n, as shells report a command a signal
// ended.
type signalCause struct{ sig syscall.Signal }

func (s signalCause) Error() string { return fmt.Sprintf("interrupted by %v", signalName(s.sig)) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// signalContext returns a context that SIGINT, SIGTERM or SIGHUP cancels
// with a signalCause. After the first signal zkrecipes stops catching
// them (unless CMD runs, as it then passes them on): a second one ends it
// at once, without the release of the first. A signal the process was
// started ignoring (nohup, a background job) stays ignored.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-c:
			signal.Stop(c)
			cancel(signalCause{s.(syscall.Signal)})
		case <-quit:
		}
	}()
	return ctx, func() {
		signal.Stop(c)
		close(quit)
		<-done
		cancel(context.Canceled)
	}
}
