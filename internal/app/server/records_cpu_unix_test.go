//go:build unix

package server

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time the test process has used (user and
// system): a cost figure that, unlike wall time, hardly depends on what
// else the machine runs.
func ProcessCPU() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
