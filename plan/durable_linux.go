package plan

import (
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

// syncBatch, when the open files among files number at least min and
// syncfs reports errors, syncs the file system of each with one syncfs
// per file system, closes every file but one per file system (left open
// in files, for a later syncBatch), and reports true. Otherwise it does
// nothing and reports false.
func syncBatch(files []staged, min int) (bool, error) {
	open := 0
	for _, s := range files {
		if s.f != nil {
			open++
		}
	}
	if open == 0 || open < min || !syncfsReportsErrors() {
		return false, nil
	}
	kept := map[uint64]int{} // device → the file kept open on it
	devs := make([]uint64, len(files))
	for i, s := range files {
		if s.f == nil {
			continue
		}
		fi, err := s.f.Stat()
		if err != nil {
			return false, &Error{Code: CodeIO, Path: s.name, Msg: "syncing " + s.name, Err: err}
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return false, nil
		}
		devs[i] = uint64(st.Dev)
		if _, ok := kept[devs[i]]; !ok {
			kept[devs[i]] = i
		}
	}
	for _, i := range kept {
		if err := syncfs(files[i].f); err != nil {
			return false, &Error{Code: CodeIO, Path: files[i].name, Msg: "syncing the file system of " + files[i].name, Err: err}
		}
	}
	var first error
	for i := range files {
		if files[i].f == nil || kept[devs[i]] == i {
			continue
		}
		if err := files[i].f.Close(); err != nil && first == nil {
			first = &Error{Code: CodeIO, Path: files[i].name, Msg: "closing " + files[i].name, Err: err}
		}
		files[i].f = nil
	}
	return true, first
}

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
