package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
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
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return s.String()
}

// signalContext returns a context that SIGINT, SIGTERM, SIGHUP or SIGQUIT
// cancels with a signalCause (SIGQUIT, Ctrl-\\, would otherwise end
// zkrecipes with a dump of its goroutines, leaving its waiting node to the
// session's expiry). After the first signal zkrecipes stops catching
// them (unless CMD runs, as it then passes them on): a second one ends it
// at once, without the release of the first. A signal the process was
// started ignoring (nohup, a background job) stays ignored.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
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

// dieOf ends zkrecipes by the signal of d, as its default action does (a
// SIGQUIT without a core dump), so that whoever waits for zkrecipes sees
// it died of it (see diesOfSignal). Everything must be released before:
// nothing runs after it. If the signal cannot kill it (it was started
// ignoring it), it exits with code.
//
// A SIGINT that ended CMD while CMD's group had the terminal was, most
// likely, a Ctrl-C, which the terminal sent to CMD's group alone: the
// shell that runs zkrecipes (in zkrecipes' process group when it does no
// job control, as a script's shell) did not get it, and a shell stops its
// script on a Ctrl-C only when it got the SIGINT itself and its command
// died of it (bash's "wait and cooperative exit"). So zkrecipes then
// sends the SIGINT to its own process group, as the terminal would have
// had CMD not been given it, and dies of it with the rest of its group.
// A kill -INT aimed at CMD alone cannot be told apart from a Ctrl-C: a
// shell running CMD itself would take it for one in the same way.
func dieOf(d *signalExit, code int) {
	sig := d.sig
	signal.Reset(sig)
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}) // as timeout(1) does before it dies of its command's signal
	if !signal.Ignored(sig) && defaultAction(sig) {
		if sig == syscall.SIGINT && d.onTerminal {
			_ = syscall.Kill(0, sig)
		}
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // the signal is pending: it ends the process at once
	}
	os.Exit(code)
}
