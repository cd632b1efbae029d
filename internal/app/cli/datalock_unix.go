//go:build unix

package cli

import (
	"errors"
	"os"
	"syscall"
)

// errLocked: another process holds the lock.
var errLocked = errors.New("locked")

// lockFile takes an exclusive flock on f without waiting. The kernel
// releases it when the process ends, however it ends, so a crash leaves
// no stale lock.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
