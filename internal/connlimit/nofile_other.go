//go:build !unix

package connlimit

// FileLimit returns a conservative descriptor limit where the system has no
// RLIMIT_NOFILE to read.
func FileLimit() (uint64, error) { return 2048, nil }
