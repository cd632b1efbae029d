//go:build unix

package connlimit

import "syscall"

// FileLimit returns the process's limit on open file descriptors (the soft
// RLIMIT_NOFILE, which the Go runtime raises to the hard limit at start).
func FileLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	return r.Cur, nil
}
