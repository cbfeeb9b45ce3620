//go:build !linux

package zktest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
