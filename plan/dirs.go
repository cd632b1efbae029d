package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
)

// dirs opens each directory of a plan's files once per run, component by
// component, each as a root of its own opened through its parent's (so
// confined as the plan's root is), and keeps it: each file operation is
// then one system call on a base name instead of a walk from the root,
// component by component, per operation.
//
// A directory reached through a symbolic link is refused, even one that
// stays inside the root: a link could lead into .git, which a plan may
// not change, and a path names the file it changes only when every one of
// its directories is a real one. Each directory is checked when it is
// opened, and every later use (split) checks again, with one Lstat per
// component through the parent's handle, that each component still is
// the very directory opened: a directory renamed, moved away or replaced
// (by a link or another directory) since is not read from or written into.
type dirs struct {
	root *os.Root
	mu   sync.Mutex
	open map[string]*dirEntry
}

// dirEntry is an opened directory, or why it could not be opened.
type dirEntry struct {
	r   *os.Root
	fi  fs.FileInfo // the opened directory's (an open directory's identity does not change)
	err error
}

func newDirs(root *os.Root) *dirs {
	return &dirs{root: root, open: map[string]*dirEntry{}}
}

// get is the directory dir (relative to the root, "." for the root),
// opened once: each of its components was a real directory, not a
// symbolic link, when it was opened. The error of a missing one is
// fs.ErrNotExist.
func (d *dirs) get(dir string) (*os.Root, error) {
	if dir == "." {
		return d.root, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.getLocked(dir)
	if e.err != nil {
		var pe *Error
		if errors.As(e.err, &pe) {
			cp := *pe // each caller fills in its own field
			return nil, &cp
		}
		return nil, e.err
	}
	return e.r, nil
}

// getLocked opens dir through its parent, remembering the outcome at the
// first component that fails (a missing directory's children are not
// remembered: once it is created they are looked up again).
func (d *dirs) getLocked(dir string) *dirEntry {
	if e, ok := d.open[dir]; ok {
		return e
	}
	parent, base := path.Dir(dir), path.Base(dir)
	pr := d.root
	if parent != "." {
		pe := d.getLocked(parent)
		if pe.err != nil {
			return pe
		}
		pr = pe.r
	}
	e := &dirEntry{}
	e.r, e.fi, e.err = openDir(pr, dir, base)
	d.open[dir] = e
	return e
}

// openDir opens base in parent (whose path is that of dir's parent) once
// Lstat has found it a real directory, and checks that the directory
// opened is the one examined.
func openDir(parent *os.Root, dir, base string) (*os.Root, fs.FileInfo, error) {
	fi, err := parent.Lstat(base)
	if err != nil {
		return nil, nil, err
	}
	if err := realDir(parent, dir, fi); err != nil {
		return nil, nil, err
	}
	r, err := parent.OpenRoot(base)
	if err != nil {
		if strings.Contains(err.Error(), "escapes") {
			return nil, nil, &Error{Code: CodePathRejected, File: dir, Msg: "leads outside the root through a symbolic link"}
		}
		return nil, nil, err
	}
	ofi, err := r.Stat(".")
	if err != nil || !os.SameFile(fi, ofi) {
		r.Close()
		return nil, nil, &Error{Code: CodePathRejected, File: dir, Msg: "the directory was replaced while it was opened"}
	}
	return r, ofi, nil
}

// realDir refuses fi, the Lstat of dir through its parent's handle,
// unless it is a directory.
func realDir(parent *os.Root, dir string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, err := parent.Stat(path.Base(dir)); err != nil && strings.Contains(err.Error(), "escapes") {
			return &Error{Code: CodePathRejected, File: dir, Msg: fmt.Sprintf("%s leads outside the root through a symbolic link", dir)}
		}
		return &Error{Code: CodePathRejected, File: dir, Msg: fmt.Sprintf("%s is a symbolic link: a plan changes files through real directories only", dir)}
	case !fi.IsDir():
		return &Error{Code: CodePathRejected, File: dir, Msg: fmt.Sprintf("%s is not a directory", dir)}
	}
	return nil
}

// verify checks that each component of dir, opened by get, is still the
// directory opened: looked up with Lstat through its parent's handle, it
// is a real directory (not a link) and the same one. So the path, from
// the root, still leads to the directory handle through real directories
// only.
func (d *dirs) verify(dir string) error {
	for dir != "." {
		d.mu.Lock()
		e := d.open[dir]
		var pr *os.Root
		if parent := path.Dir(dir); parent == "." {
			pr = d.root
		} else if pe := d.open[parent]; pe != nil {
			pr = pe.r
		}
		d.mu.Unlock()
		if e == nil || e.err != nil || pr == nil {
			return &Error{Code: CodePathRejected, File: dir, Msg: "the directory was not opened"}
		}
		fi, err := pr.Lstat(path.Base(dir))
		if errors.Is(err, fs.ErrNotExist) {
			// Not fs.ErrNotExist: this directory was there, it is not
			// one to create again.
			return &Error{Code: CodePathRejected, File: dir, Msg: fmt.Sprintf("%s was moved or removed while the plan was being applied", dir)}
		}
		if err != nil {
			return err
		}
		if err := realDir(pr, dir, fi); err != nil {
			return err
		}
		if !os.SameFile(fi, e.fi) {
			return &Error{Code: CodePathRejected, File: dir, Msg: fmt.Sprintf("%s was moved or replaced while the plan was being applied", dir)}
		}
		dir = path.Dir(dir)
	}
	return nil
}

// forgetMissing drops what get remembers of a directory on the way to
// dir that was missing or could not be opened, so that it is looked up
// again.
func (d *dirs) forgetMissing(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for ; dir != "."; dir = path.Dir(dir) {
		if e, ok := d.open[dir]; ok && e.err != nil && errors.Is(e.err, fs.ErrNotExist) {
			delete(d.open, dir)
		}
	}
}

// forget drops what get remembers of dir and of the directories under it
// (after dir was created).
func (d *dirs) forget(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, e := range d.open {
		if name == dir || strings.HasPrefix(name, dir+"/") {
			if e.r != nil {
				e.r.Close()
			}
			delete(d.open, name)
		}
	}
}

func (d *dirs) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for dir, e := range d.open {
		if e.r != nil {
			e.r.Close()
		}
		delete(d.open, dir)
	}
}

// dir is dir opened (get) and checked once more (verify).
func (d *dirs) dir(dir string) (*os.Root, error) {
	r, err := d.get(dir)
	if err != nil {
		return nil, err
	}
	if err := d.verify(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// split is name's directory, opened and checked (dir), and base name.
func (d *dirs) split(name string) (*os.Root, string, error) {
	r, err := d.dir(path.Dir(name))
	return r, path.Base(name), err
}

func (d *dirs) lstat(name string) (fs.FileInfo, error) {
	r, base, err := d.split(name)
	if err != nil {
		return nil, err
	}
	return r.Lstat(base)
}

// current is a file as read: its content, whether it exists, its
// permissions and identity, and, when kept, the file still open (to check
// it again before it is replaced without opening it again).
type current struct {
	data   []byte
	exists bool
	perm   fs.FileMode
	fi     fs.FileInfo
	f      *os.File
}

// readFile reads name under the root, keeping the file open when keep is
// true and it exists. A symbolic link, a non-regular file, a path that
// escapes the root and a file past MaxFileBytes are refused.
func (d *dirs) readFile(name string, keep bool) (current, error) {
	rejected := func(format string, args ...any) error {
		return &Error{Code: CodePathRejected, File: name, Msg: fmt.Sprintf(format, args...)}
	}
	r, base, err := d.split(name)
	var fi fs.FileInfo
	if err == nil {
		fi, err = r.Lstat(base)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return current{}, nil
	case err != nil && strings.Contains(err.Error(), "escapes"):
		return current{}, rejected("leads outside the root through a symbolic link")
	case err != nil:
		return current{}, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return current{}, rejected("is a symbolic link: a plan changes regular files only")
	case !fi.Mode().IsRegular():
		return current{}, rejected("is not a regular file")
	case fi.Size() > MaxFileBytes:
		return current{}, &Error{Code: CodeTooLarge, File: name, Msg: fmt.Sprintf("the file is %d bytes, more than %d", fi.Size(), MaxFileBytes)}
	}
	f, err := r.Open(base)
	if err != nil {
		return current{}, err
	}
	// The file opened is the one examined: not a link put in its place
	// since.
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		f.Close()
		return current{}, rejected("was replaced while it was read")
	}
	b, err := readAll(f, fi.Size(), name)
	if err != nil || !keep {
		f.Close()
		f = nil
	}
	if err != nil {
		return current{}, err
	}
	return current{data: b, exists: true, perm: fi.Mode().Perm(), fi: fi, f: f}, nil
}

// readAll reads f from its start (a file of size bytes when it was
// examined), up to MaxFileBytes.
func readAll(f *os.File, size int64, name string) ([]byte, error) {
	b := reuse(int(min(size, MaxFileBytes)) + 1)
	for {
		n, err := f.ReadAt(b[len(b):cap(b)], int64(len(b)))
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) > MaxFileBytes {
			return nil, &Error{Code: CodeTooLarge, File: name, Msg: fmt.Sprintf("the file is more than %d bytes", MaxFileBytes)}
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// readBufs holds the buffers of contents a run is done with (recycle),
// for the next files it reads or patches: a dry run of hundreds of diffs
// in a short process otherwise takes fresh pages for every file, and
// pays for each page as a fault.
var readBufs sync.Pool

// maxRecycled is the largest buffer kept for reuse: a huge file's
// buffer is left to the collector rather than held for small ones.
const maxRecycled = 1 << 20

// reuse is an empty buffer of at least n bytes' capacity, recycled when
// one large enough is at hand.
func reuse(n int) []byte {
	if p, _ := readBufs.Get().(*[]byte); p != nil && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

// recycle hands b back for reuse; nothing may use b after.
func recycle(b []byte) {
	if cap(b) == 0 || cap(b) > maxRecycled {
		return
	}
	readBufs.Put(&b)
}
