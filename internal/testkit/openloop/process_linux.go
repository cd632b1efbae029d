package openloop

import "syscall"

// sysProcAttr has the kernel kill a program under test when the test
// process dies, so that a crashed benchmark leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
