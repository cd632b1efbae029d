//go:build !linux

package openloop

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
