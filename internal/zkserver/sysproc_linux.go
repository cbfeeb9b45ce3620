package zkserver

import "syscall"

// sysProcAttr makes the kernel kill a server when the test binary dies, so
// that an interrupted test leaves no JVM behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
