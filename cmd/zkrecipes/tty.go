package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// terminal is zkrecipes' controlling terminal, if it has one. CMD runs in
// a process group of its own, and only the terminal's foreground group
// may read it (others get SIGTTIN and stop) and gets its Ctrl-C, Ctrl-Z and
// Ctrl-\. So whenever zkrecipes' group has the terminal, zkrecipes hands
// it to CMD's group, as a shell does for a job: at the start, and when
// continued in the foreground (fg). Ctrl-C then reaches CMD once, from the
// terminal, and zkrecipes gets nothing to pass on. zkrecipes takes the
// terminal back when CMD stops (to stop itself: job control) and when
// CMD's group is gone.
type terminal struct {
	f *os.File // nil: no controlling terminal
	// cmdHas: zkrecipes handed the terminal to CMD's group (at the start
	// or on fg) and has not taken it back since. After a hangup the
	// terminal's foreground group cannot be asked any more: this is
	// what it was.
	cmdHas bool
}

// openTerminal opens zkrecipes' controlling terminal, if it has one.
func openTerminal() *terminal {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return &terminal{}
	}
	return &terminal{f: f}
}

func (t *terminal) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// ours returns the terminal's descriptor when zkrecipes' process group is
// its foreground group, else -1.
func (t *terminal) ours() int {
	if t.f == nil {
		return -1
	}
	fd := int(t.f.Fd())
	if pgrp, err := tcgetpgrp(fd); err != nil || pgrp != syscall.Getpgrp() {
		return -1
	}
	return fd
}

// foreground reports whether group pgid is the terminal's foreground group.
func (t *terminal) foreground(pgid int) bool {
	if t.f == nil {
		return false
	}
	pgrp, err := tcgetpgrp(int(t.f.Fd()))
	return err == nil && pgrp == pgid
}

// handTo gives the terminal to group pgid if zkrecipes' group has it.
func (t *terminal) handTo(pgid int) {
	if fd := t.ours(); fd >= 0 && tcsetpgrp(fd, pgid) == nil {
		t.cmdHas = true
	}
}

// hungUpOnCommand reports whether the terminal has hung up while CMD's
// group was its foreground group. The kernel then sends SIGHUP to that
// group itself (when the session leader exits), so a SIGHUP that
// zkrecipes gets then (the shell's, passed to its jobs) is the same
// hangup and is not passed on: CMD hears of it once. A hung-up terminal
// answers every request on a descriptor opened before with EIO (ENOTTY
// for some); a live one answers tcgetpgrp, and a kill -HUP of zkrecipes
// there is passed on as any other signal.
func (t *terminal) hungUpOnCommand() bool {
	if t.f == nil || !t.cmdHas {
		return false
	}
	_, err := tcgetpgrp(int(t.f.Fd()))
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOTTY)
}

// takeBack gives the terminal back to zkrecipes' group if group pgid has it.
// zkrecipes is then in the background, where changing the foreground group
// raises SIGTTOU unless that is ignored: it is, for the call.
func (t *terminal) takeBack(pgid int) {
	if t.f == nil {
		return
	}
	fd := int(t.f.Fd())
	if pgrp, err := tcgetpgrp(fd); err != nil || pgrp != pgid {
		return
	}
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	if tcsetpgrp(fd, syscall.Getpgrp()) == nil {
		t.cmdHas = false
	}
}

func tcgetpgrp(fd int) (int, error) {
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return 0, e
	}
	return int(pgrp), nil
}

func tcsetpgrp(fd, pgrp int) error {
	p := int32(pgrp)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&p))); e != 0 {
		return e
	}
	return nil
}
