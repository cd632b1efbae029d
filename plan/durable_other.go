//go:build !linux

package plan

import (
	"errors"
	"io/fs"
	"os"
)

// batched reports false: without syncfs each file is synced on its own.
func batched(n int) bool { return false }

func deviceOf(fi fs.FileInfo) (uint64, bool) { return 0, false }

func syncfs(f *os.File) error { return errors.ErrUnsupported }
