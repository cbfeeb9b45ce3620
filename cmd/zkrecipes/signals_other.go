//go:build !linux

package main

import "syscall"

// defaultAction reports whether Go's runtime, with sig no longer notified
// (signal.Reset), ends the process by sig's default action: it does for
// SIGINT, SIGTERM and SIGHUP; for SIGQUIT it dumps its goroutines and
// exits 2, so zkrecipes exits with its status instead.
func defaultAction(sig syscall.Signal) bool { return sig != syscall.SIGQUIT }
