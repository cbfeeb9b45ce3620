package main

import (
	"syscall"
	"unsafe"
)

// defaultAction sets the action of sig to the default (SIG_DFL), past Go's
// runtime, which otherwise keeps its own handler: for SIGQUIT a dump of the
// goroutines and exit status 2 rather than the death by the signal.
func defaultAction(sig syscall.Signal) bool {
	var act [4]uint64 // a struct sigaction of zeros: SIG_DFL, no flags, no mask, on every architecture
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	return e == 0
}
