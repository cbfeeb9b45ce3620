package zkserver

import (
	"runtime"
	"syscall"
	"time"
)

// preciseThread gives the calling goroutine a thread of its own until it
// calls the function returned, with the kernel's timer slack at its least
// (1 ns; the default 50 µs is added to every sleep), so that sleepUntil
// wakes within microseconds. The goroutine must call that function before
// it ends: a goroutine that ends locked to its thread ends the thread, and
// the kernel then kills every server started from that thread (they are
// started with Pdeathsig, which follows the thread that forked them, not
// the process) — the runtime forks from whatever thread it runs on.
func preciseThread() (release func()) {
	runtime.LockOSThread()
	const prSetTimerSlack = 29
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	return runtime.UnlockOSThread
}

// sleepUntil returns at t. The runtime's timers round a sleep up to the
// next millisecond when nothing else wakes the scheduler; nanosleep on the
// goroutine's own thread does not (the runtime hands the thread's P to
// another thread meanwhile).
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		if d > 3*time.Millisecond {
			time.Sleep(d - 2*time.Millisecond)
			continue
		}
		ts := syscall.NsecToTimespec(int64(d))
		_ = syscall.Nanosleep(&ts, nil)
	}
}
