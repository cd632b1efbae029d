//go:build !unix

package cli

import (
	"errors"
	"os"
)

// errLocked: another process holds the lock.
var errLocked = errors.New("locked")

// lockFile: flock is a unix call; elsewhere the data directory is not
// locked, and running one server per directory is the operator's to
// ensure.
func lockFile(*os.File) error { return nil }
