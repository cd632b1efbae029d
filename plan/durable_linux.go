package plan

import (
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// syncfsMin is the number of files from which syncing their file system
// once (syncfs) replaces an fsync of each.
const syncfsMin = 8

// syncfsReportsErrors reports whether syncfs returns writeback errors,
// as it does from Linux 5.8 on; before, it could report success for data
// that failed to reach the disk, and each file is synced on its own.
var syncfsReportsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	release := unix.ByteSliceToString(u.Release[:])
	major, rest, _ := strings.Cut(release, ".")
	minorText, _, _ := strings.Cut(rest, ".")
	maj, err1 := strconv.Atoi(major)
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(minorText, func(r rune) bool { return r < '0' || r > '9' }))
	return err1 == nil && err2 == nil && (maj > 5 || maj == 5 && minor >= 8)
})

// batched reports whether n files are made durable with a syncfs of their
// file systems rather than an fsync of each.
func batched(n int) bool {
	return n >= syncfsMin && syncfsReportsErrors()
}

// deviceOf is the device fi's file is on.
func deviceOf(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true
}

// syncfs syncs the file system f is on. It reports the writeback errors
// of that file system since f was opened.
func syncfs(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = unix.Syncfs(int(fd)); serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
