//go:build !linux

package zkserver

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
