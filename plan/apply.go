package plan

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ctxkit/ctxkit/patch"
)

// MaxFileBytes is the largest file a plan may change.
const MaxFileBytes = 64 << 20

// Strategy says what Apply does with the new content: DryRun, Write or
// WriteBackup.
type Strategy interface{ strategy() string }

// DryRun computes every outcome and writes nothing.
type DryRun struct{}

// Write replaces each changed file.
type Write struct{}

// WriteBackup replaces each changed file and keeps its previous content
// next to it, at its path with Suffix appended. A backup never overwrites
// an existing file: the plan fails before anything is written.
type WriteBackup struct{ Suffix string }

func (DryRun) strategy() string      { return "dry-run" }
func (Write) strategy() string       { return "write" }
func (WriteBackup) strategy() string { return "write-backup" }

// StrategyName is "dry-run", "write" or "write-backup" (nil: dry-run).
func StrategyName(s Strategy) string {
	if s == nil {
		return DryRun{}.strategy()
	}
	return s.strategy()
}

// Options tune Apply. The zero value is a dry run.
type Options struct {
	// Strategy is DryRun when nil.
	Strategy Strategy
	// Logger receives a debug line per file written or restored.
	Logger *slog.Logger

	// hook, in tests, runs before each write step and fails it with its
	// error.
	hook func(step, name string) error
}

// Status is a diff's outcome.
type Status string

// Statuses.
const (
	StatusApplied Status = "applied" // the diff applies (and was written unless the plan failed or this is a dry run)
	StatusNoop    Status = "noop"    // the diff was already applied
	StatusFailed  Status = "failed"
)

// HunkOutcome is how one hunk was placed or why it was not.
type HunkOutcome struct {
	Index int `json:"index"`
	// Match is the pass that placed it: exact, offset, whitespace or
	// "fuzz N".
	Match  string `json:"match,omitempty"`
	Offset int    `json:"offset"`
	// Line is the 1-based line of the file before where the hunk's old
	// lines start (the closest region for a hunk not found).
	Line  int    `json:"line,omitempty"`
	Code  Code   `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// Outcome is one diff's result.
type Outcome struct {
	Index        int           `json:"index"`
	Path         string        `json:"path"`
	Status       Status        `json:"status"`
	Hunks        []HunkOutcome `json:"hunks,omitempty"`
	SHA256Before string        `json:"sha256_before,omitempty"`
	SHA256After  string        `json:"sha256_after,omitempty"`
	BackupPath   string        `json:"backup_path,omitempty"`
	Created      bool          `json:"created,omitempty"`
	Deleted      bool          `json:"deleted,omitempty"`
	Warnings     []string      `json:"warnings,omitempty"`
	Code         Code          `json:"code,omitempty"`
	Error        string        `json:"error,omitempty"`
}

// Report is the outcome of Apply.
type Report struct {
	Strategy string    `json:"strategy"`
	Diffs    []Outcome `json:"diffs"`
	// Written is true when the files were changed on disk: a write
	// strategy and every diff applied (or was already applied).
	Written bool `json:"written"`
	// RollbackIncomplete is true when a write failed and restoring the
	// files already written failed too: Unrestored lists the paths that
	// may hold new content, be missing, or be left behind (a backup, a
	// directory created).
	RollbackIncomplete bool     `json:"rollback_incomplete,omitempty"`
	Unrestored         []string `json:"unrestored,omitempty"`
}

// Failed counts the diffs that failed.
func (r *Report) Failed() int {
	n := 0
	for _, o := range r.Diffs {
		if o.Status == StatusFailed {
			n++
		}
	}
	return n
}

// change is a diff applied in memory.
type change struct {
	index   int
	path    string
	before  []byte
	exists  bool
	perm    fs.FileMode
	after   []byte
	delete  bool
	backup  string
	changes bool
	// fi is the file read (when it exists) and f, for a write, the file
	// still open, to check it again just before it is replaced.
	fi fs.FileInfo
	f  *os.File
}

// closeFiles closes the files changes keep open.
func closeFiles(changes []*change) {
	for _, c := range changes {
		if c != nil && c.f != nil {
			c.f.Close()
			c.f = nil
		}
	}
}

// Apply applies p's diffs to the files under root. Every diff is applied
// in memory first, each after its file's checksum is checked; files are
// written only when all of them succeed, each through a temporary file,
// synced before it is renamed over the file, and only after the file's
// content is checked once more. If a write fails midway, the files
// already written are restored. The report holds every diff's outcome;
// the error is the first failure. commitAll says what is synced when.
func Apply(ctx context.Context, root *os.Root, p *Plan, opts Options) (*Report, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	strategy := opts.Strategy
	if strategy == nil {
		strategy = DryRun{}
	}
	if wb, ok := strategy.(WriteBackup); ok {
		if wb.Suffix == "" || strings.ContainsAny(wb.Suffix, "/\\\x00") {
			return nil, &Error{Code: CodeField, Field: "backup suffix", Msg: fmt.Sprintf("%q must be non-empty and hold no slash", wb.Suffix)}
		}
	}
	rep := &Report{Strategy: strategy.strategy(), Diffs: make([]Outcome, len(p.Diffs))}
	// The directories are opened once for the run; each use checks again
	// that the path still leads to them through real directories only
	// (dirs.verify): a directory renamed or replaced since the files were
	// read is not written into.
	d := newDirs(root)
	defer d.close()
	_, dry := strategy.(DryRun)
	changes, err := prepareAll(ctx, d, p.Diffs, rep.Diffs, !dry)
	defer closeFiles(changes)
	if err != nil {
		return rep, err
	}
	if dry {
		return rep, nil
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	w := &writer{root: root, dirs: d, opts: opts, made: map[string]bool{}}
	if wb, ok := strategy.(WriteBackup); ok {
		for _, c := range changes {
			if !c.changes || !c.exists {
				continue
			}
			c.backup = c.path + wb.Suffix
			if err := CheckPath(c.backup); err != nil {
				err.Field = fmt.Sprintf("diffs[%d]", c.index)
				return rep, err
			}
			if _, err := w.dirs.lstat(c.backup); err == nil || !errors.Is(err, fs.ErrNotExist) {
				return rep, &Error{Code: CodeBackupExists, Field: fmt.Sprintf("diffs[%d]", c.index), Path: c.path,
					Msg: fmt.Sprintf("the backup %s already exists: move it away or choose another suffix", c.backup)}
			}
		}
	}
	if err := w.commitAll(changes); err != nil {
		if failed := w.rollback(); len(failed) > 0 {
			rep.RollbackIncomplete = true
			errs := []error{err}
			for _, f := range failed {
				rep.Unrestored = append(rep.Unrestored, f.path)
				errs = append(errs, fmt.Errorf("restoring %s: %w", f.path, f.err))
			}
			err = &Error{Code: CodeRollbackIncomplete, Path: rep.Unrestored[0],
				Msg: fmt.Sprintf("the write failed and restoring failed for %s: check them (they may hold new content or be missing)", strings.Join(rep.Unrestored, ", ")),
				Err: errors.Join(errs...)}
		}
		return rep, err
	}
	for _, c := range changes {
		rep.Diffs[c.index].BackupPath = c.backup
	}
	rep.Written = true
	return rep, nil
}

// prepareAll prepares every diff, a few at a time (reading, hashing and
// patching are independent per file), filling outs. The error is the
// failure of the first diff in the plan's order that failed. With keep,
// each existing file a diff changes stays open (change.f).
func prepareAll(ctx context.Context, d *dirs, diffs []Diff, outs []Outcome, keep bool) ([]*change, error) {
	prepared := make([]*change, len(diffs))
	errs := make([]error, len(diffs))
	workers := min(runtime.GOMAXPROCS(0), len(diffs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(diffs) {
					return
				}
				if errs[i] = ctx.Err(); errs[i] != nil {
					continue
				}
				prepared[i], errs[i] = prepare(d, i, diffs[i], &outs[i], keep)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		closeFiles(prepared)
		return nil, err
	}
	var (
		changes []*change
		first   error
		failed  int
	)
	for i, err := range errs {
		if err != nil {
			out := &outs[i]
			out.Status, out.Code, out.Error = StatusFailed, CodeOf(err), err.Error()
			failed++
			if first == nil {
				first = err
			}
			continue
		}
		changes = append(changes, prepared[i])
	}
	if first != nil {
		closeFiles(prepared)
		if failed > 1 {
			first = fmt.Errorf("%w (and %d more diffs failed)", first, failed-1)
		}
		return nil, first
	}
	return changes, nil
}

// prepare reads a diff's file, checks it and applies the diff in memory.
// With keep, the file stays open when the diff changes it.
func prepare(dirs *dirs, i int, d Diff, out *Outcome, keep bool) (c *change, err error) {
	field := fmt.Sprintf("diffs[%d]", i)
	*out = Outcome{Index: i, Path: d.Path}
	fail := func(code Code, err error, format string, args ...any) error {
		return &Error{Code: code, Field: field, Path: d.Path, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	c = &change{index: i, path: d.Path, perm: 0o644}
	cur, err := dirs.readFile(d.Path, keep)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			pe.Field = field
			return nil, pe
		}
		return nil, fail(CodeIO, err, "")
	}
	before, exists := cur.data, cur.exists
	c.before, c.exists, c.fi, c.f = before, exists, cur.fi, cur.f
	if exists {
		c.perm = cur.perm
	}
	// The file stays open only for a write of it.
	defer func() {
		if cur.f != nil && (err != nil || c == nil || !c.changes) {
			cur.f.Close()
			if c != nil {
				c.f = nil
			}
		}
	}()
	out.SHA256Before = Checksum(before)
	if out.SHA256Before != d.Checksum {
		if !exists {
			return nil, fail(CodeChecksumMismatch, nil, "the file does not exist, but the plan's checksum %s is not that of empty input: the plan expects a file that is not there", short(d.Checksum))
		}
		return nil, fail(CodeChecksumMismatch, nil, "the file's SHA-256 is %s, the plan's checksum is %s: the plan was written against another version of the file", short(out.SHA256Before), short(d.Checksum))
	}
	f, err := patch.Parse(d.UnifiedDiff)
	if err != nil {
		return nil, fail(codeOfPatch(err), err, "unified_diff")
	}
	if err := CheckHeaders(f, d.Path); err != nil {
		err.Field = field + ".unified_diff"
		return nil, err
	}
	res, err := patch.Apply(before, f)
	if res != nil {
		for h, hr := range res.Hunks {
			ho := HunkOutcome{Index: h, Match: hr.Match.String(), Offset: hr.Match.Offset, Line: hr.Match.Line}
			if hr.Err != nil {
				ho = HunkOutcome{Index: h, Line: hr.Err.FileLine, Code: Code(hr.Err.Code), Error: hr.Err.Error()}
			}
			out.Hunks = append(out.Hunks, ho)
		}
		out.Warnings = res.Warnings
	}
	if err != nil {
		return nil, fail(codeOfPatch(err), err, "")
	}
	c.after = res.Content
	out.SHA256After = Checksum(res.Content)
	out.Status = StatusApplied
	if res.Status == patch.Noop {
		out.Status = StatusNoop
		return c, nil
	}
	c.changes = true
	switch {
	case f.IsDelete():
		if len(res.Content) > 0 {
			return nil, fail(Code(patch.CodeNotFound), nil, "the diff deletes the file, but %d bytes of it are not in the diff", len(res.Content))
		}
		c.delete, out.Deleted = true, true
		out.SHA256After = ""
	case !exists:
		out.Created = true
	}
	return c, nil
}

func codeOfPatch(err error) Code {
	var pe *patch.Error
	if errors.As(err, &pe) {
		return Code(pe.Code)
	}
	return CodeIO
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "…"
	}
	return sum
}

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
			return nil, nil, &Error{Code: CodePathRejected, Path: dir, Msg: "leads outside the root through a symbolic link"}
		}
		return nil, nil, err
	}
	ofi, err := r.Stat(".")
	if err != nil || !os.SameFile(fi, ofi) {
		r.Close()
		return nil, nil, &Error{Code: CodePathRejected, Path: dir, Msg: "the directory was replaced while it was opened"}
	}
	return r, ofi, nil
}

// realDir refuses fi, the Lstat of dir through its parent's handle,
// unless it is a directory.
func realDir(parent *os.Root, dir string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, err := parent.Stat(path.Base(dir)); err != nil && strings.Contains(err.Error(), "escapes") {
			return &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s leads outside the root through a symbolic link", dir)}
		}
		return &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s is a symbolic link: a plan changes files through real directories only", dir)}
	case !fi.IsDir():
		return &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s is not a directory", dir)}
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
			return &Error{Code: CodePathRejected, Path: dir, Msg: "the directory was not opened"}
		}
		fi, err := pr.Lstat(path.Base(dir))
		if errors.Is(err, fs.ErrNotExist) {
			// Not fs.ErrNotExist: this directory was there, it is not
			// one to create again.
			return &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s was moved or removed while the plan was being applied", dir)}
		}
		if err != nil {
			return err
		}
		if err := realDir(pr, dir, fi); err != nil {
			return err
		}
		if !os.SameFile(fi, e.fi) {
			return &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s was moved or replaced while the plan was being applied", dir)}
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
		return &Error{Code: CodePathRejected, Path: name, Msg: fmt.Sprintf(format, args...)}
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
		return current{}, &Error{Code: CodeTooLarge, Path: name, Msg: fmt.Sprintf("the file is %d bytes, more than %d", fi.Size(), MaxFileBytes)}
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
	b := make([]byte, 0, size+1)
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
			return nil, &Error{Code: CodeTooLarge, Path: name, Msg: fmt.Sprintf("the file is more than %d bytes", MaxFileBytes)}
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// unchanged reports whether c's file, base in dir (its directory, just
// checked), is still what c was planned against, just before it is
// replaced: missing if it was missing; otherwise the very file read (the
// path names the same file as the handle kept open: a regular file, not
// a link, not another file renamed over it) with the same content, read
// again from its start through that handle.
func unchanged(c *change, dir *os.Root, base string) (bool, error) {
	fi, err := dir.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return !c.exists, nil
	case err != nil:
		return false, err
	case !c.exists || c.f == nil || !fi.Mode().IsRegular() || !os.SameFile(fi, c.fi):
		return false, nil
	}
	now, err := readAll(c.f, int64(len(c.before)), c.path)
	if err != nil {
		return false, err
	}
	return bytes.Equal(now, c.before), nil
}

// writer commits changes and remembers how to undo them.
type writer struct {
	root *os.Root
	dirs *dirs
	opts Options
	undo []undoStep
	made map[string]bool // directories known to exist
}

// undoStep undoes one write step on path.
type undoStep struct {
	path string
	fn   func() error
}

// undoFailure is an undo step that failed.
type undoFailure struct {
	path string
	err  error
}

func (w *writer) onUndo(path string, fn func() error) {
	w.undo = append(w.undo, undoStep{path, fn})
}

func (w *writer) step(step, name string) error {
	if w.opts.hook != nil {
		return w.opts.hook(step, name)
	}
	return nil
}

func (w *writer) logf(msg string, args ...any) {
	if w.opts.Logger != nil {
		w.opts.Logger.Debug(msg, args...)
	}
}

// staged is a file written but not yet synced and renamed.
type staged struct {
	f    *os.File // open until synced
	name string   // the temporary file (the backup for a backup)
}

// commitAll writes the changed files in four steps, so that the costly
// syncs run together:
//
//  1. every backup and temporary file is written (each temporary file
//     beside the file it replaces), once every step and new directory
//     before them is done, each created (O_EXCL) through its directory's
//     handle, checked just before (dirs.dir); the files are taken
//     directory by directory, two directories at a time (files created
//     in one directory wait on each other);
//  2. their contents are made durable: with one syncfs of each file
//     system they are on when the kernel reports writeback errors through
//     syncfs (Linux 5.8 and later) and there are at least syncfsMin files
//     (each file is then closed once written: syncfs goes through a
//     directory of each file system, opened before anything was written,
//     so that it reports every writeback error since); otherwise with an
//     fsync of each file;
//  3. each file's directories are checked once more (dirs.dir), the
//     file is checked to be the very file read (the path names the file
//     still open from the read, or is still missing) and its content,
//     read once more through that handle, compared with what the diff was
//     applied to, then its temporary file is renamed over it (or the file
//     deleted);
//  4. the renames, deletions and new directories are made durable: with
//     syncfs again when step 2 used it, otherwise with an fsync of each
//     directory whose entries changed (the files' directories and the
//     parents of the directories created).
//
// So a file is only ever replaced by content already on stable storage:
// after a crash each file holds its old or its new content, never a part.
// When commitAll returns nil, every new content, backup and directory
// entry of the plan is on stable storage.
func (w *writer) commitAll(changes []*change) error {
	var files []staged
	defer func() {
		for _, s := range files {
			if s.f != nil {
				s.f.Close()
			}
		}
	}()
	n := 0
	for _, c := range changes {
		if c.changes && c.backup != "" {
			n++
		}
		if c.changes && !c.delete {
			n++
		}
	}
	batch := testNoSync != "1" && batched(n)
	var syncers []staged
	defer func() {
		for _, s := range syncers {
			s.f.Close()
		}
	}()
	if batch {
		var err error
		if syncers, err = w.openSyncers(syncers); err != nil {
			return err
		}
	}
	temps := map[*change]string{}
	changed := map[string]bool{} // directories whose entries change
	// First what each file needs (its directories created, its steps
	// run), in the plan's order; then every backup and temporary file is
	// created (each is a file of its own, in a directory that exists by
	// then).
	var jobs []createJob
	for _, c := range changes {
		if !c.changes {
			continue
		}
		if c.backup != "" {
			if err := w.step("backup", c.backup); err != nil {
				return fileErr(c, err, "writing the backup")
			}
			jobs = append(jobs, createJob{c: c, name: c.backup, data: c.before, backup: true})
		}
		changed[path.Dir(c.path)] = true
		if c.delete {
			continue
		}
		if err := w.step("write", c.path); err != nil {
			return fileErr(c, err, "writing the file")
		}
		if err := w.mkdirs(path.Dir(c.path), changed); err != nil {
			return fileErr(c, err, "creating the file's directory")
		}
		jobs = append(jobs, createJob{c: c, name: tempName(c.path), data: c.after})
	}
	if batch {
		// A directory missing when the files were read may have appeared
		// since, on a file system of its own.
		var err error
		if syncers, err = w.openSyncers(syncers); err != nil {
			return err
		}
	}
	w.createAll(jobs, !batch && testNoSync != "1")
	// Every file created is removed by a rollback (through the handle it
	// was created with: it is this run's own file, in the directory it
	// was created in), also when another failed.
	var first error
	for _, j := range jobs {
		if j.err != nil {
			if first == nil {
				switch {
				case j.backup && errors.Is(j.err, fs.ErrExist):
					first = &Error{Code: CodeBackupExists, Field: fmt.Sprintf("diffs[%d]", j.c.index), Path: j.c.path, Msg: fmt.Sprintf("the backup %s already exists", j.name)}
				case j.backup:
					first = fileErr(j.c, j.err, "writing the backup")
				default:
					first = fileErr(j.c, j.err, "writing the file")
				}
			}
			continue
		}
		files = append(files, staged{f: j.f, name: j.name})
		dir, base := j.dir, path.Base(j.name)
		if j.backup {
			w.onUndo(j.name, func() error { return dir.Remove(base) })
			continue
		}
		temps[j.c] = j.name
		w.onUndo(j.name, func() error {
			if err := dir.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		})
	}
	if first != nil {
		return first
	}
	if testNoSync == "1" {
		return w.renameAll(changes, temps)
	}
	if batch {
		if err := w.syncAll(syncers); err != nil {
			return err
		}
	} else {
		for _, s := range files {
			if err := w.step("fsync", s.name); err != nil {
				return &Error{Code: CodeIO, Path: s.name, Msg: "syncing " + s.name, Err: err}
			}
		}
		if err := syncEach(files); err != nil {
			return err
		}
	}
	if err := w.renameAll(changes, temps); err != nil {
		return err
	}
	if batch {
		return w.syncAll(syncers)
	}
	var ds []staged
	for d := range changed {
		f, err := w.openDir(d)
		if err != nil {
			return &Error{Code: CodeIO, Path: d, Msg: "syncing the directory " + d, Err: err}
		}
		ds = append(ds, staged{f: f, name: d})
	}
	return syncEach(ds)
}

// openSyncers adds to have, for each file system the directories opened
// so far are on (the root's among them) that none of have is on, one of
// those directories, opened to syncfs it. Every directory a plan writes
// into is one of them or a new directory created in one (on its file
// system). A syncfs reports every writeback error of its file system
// since the directory was opened, the plan's or not: an error that is
// not the plan's fails the plan too.
func (w *writer) openSyncers(have []staged) ([]staged, error) {
	type dir struct {
		name string
		r    *os.Root
		fi   fs.FileInfo
	}
	rfi, err := w.root.Stat(".")
	if err != nil {
		return have, &Error{Code: CodeIO, Msg: "examining the root", Err: err}
	}
	all := []dir{{".", w.root, rfi}}
	w.dirs.mu.Lock()
	for name, e := range w.dirs.open {
		if e.r != nil {
			all = append(all, dir{name, e.r, e.fi})
		}
	}
	w.dirs.mu.Unlock()
	out := have
	seen := map[uint64]bool{}
	for _, s := range have {
		if fi, err := s.f.Stat(); err == nil {
			if dev, ok := deviceOf(fi); ok {
				seen[dev] = true
			}
		}
	}
	for _, d := range all {
		// A directory whose file system is not known is synced itself.
		dev, ok := deviceOf(d.fi)
		if ok && seen[dev] {
			continue
		}
		seen[dev] = ok
		f, err := d.r.Open(".")
		if err != nil {
			return out, &Error{Code: CodeIO, Path: d.name, Msg: "opening " + d.name + " to sync its file system", Err: err}
		}
		out = append(out, staged{f: f, name: d.name})
	}
	return out, nil
}

// syncAll syncs the file system of each of files (syncfs).
func (w *writer) syncAll(files []staged) error {
	for _, s := range files {
		err := w.step("syncfs", s.name)
		if err == nil {
			err = syncfs(s.f)
		}
		if err != nil {
			return &Error{Code: CodeIO, Path: s.name, Msg: "syncing the file system of " + s.name, Err: err}
		}
	}
	return nil
}

// createJob is a backup or temporary file to create, and the outcome.
type createJob struct {
	c      *change
	name   string
	data   []byte
	backup bool
	f      *os.File
	dir    *os.Root
	err    error
}

// createAll creates the files of jobs directory by directory, two
// directories (or as many as there are processors) at a time, keeping
// each file open when keep is true.
func (w *writer) createAll(jobs []createJob, keep bool) {
	groups := byDir(len(jobs), func(i int) string { return jobs[i].name })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(groups)) {
		wg.Go(func() {
			for {
				g := int(next.Add(1) - 1)
				if g >= len(groups) {
					return
				}
				for _, i := range groups[g] {
					j := &jobs[i]
					j.f, j.dir, j.err = w.create(j.name, j.data, j.c.perm, keep)
				}
			}
		})
	}
	wg.Wait()
}

// fileErr is err, a failure to write c's file, with c's field and path.
func fileErr(c *change, err error, what string) error {
	field := fmt.Sprintf("diffs[%d]", c.index)
	var pe *Error
	if errors.As(err, &pe) && pe.Code == CodePathRejected {
		pe.Field, pe.Path = field, c.path
		return pe
	}
	return &Error{Code: CodeIO, Field: field, Path: c.path, Msg: what, Err: err}
}

// testNoSync, set to "1" at link time by a benchmark only (never by a
// flag), leaves out the syncs of commitAll, to measure what durability
// costs.
var testNoSync string

// renameAll checks each changed file once more and renames its temporary
// file over it (or deletes it).
func (w *writer) renameAll(changes []*change, temps map[*change]string) error {
	for _, c := range changes {
		if !c.changes {
			continue
		}
		if err := w.rename(c, temps[c]); err != nil {
			return err
		}
	}
	return nil
}

// byDir groups the indexes of n files (name(i) is the path of the i-th)
// by directory, in the order of each directory's first file.
func byDir(n int, name func(int) string) [][]int {
	var groups [][]int
	at := map[string]int{}
	for i := range n {
		d := path.Dir(name(i))
		g, ok := at[d]
		if !ok {
			g = len(groups)
			at[d] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// rename checks c's file once more and renames its temporary file, temp,
// over it (or deletes it).
func (w *writer) rename(c *change, temp string) error {
	field := fmt.Sprintf("diffs[%d]", c.index)
	ioErr := func(err error, what string) error { return fileErr(c, err, what) }
	if err := w.step("rename", c.path); err != nil {
		return ioErr(err, "writing the file")
	}
	// The file's directories must still be real ones and the ones
	// opened (checked by split), and the file what was planned
	// against.
	dir, base, err := w.dirs.split(c.path)
	if err != nil {
		return ioErr(err, "checking the file's directory")
	}
	same, err := unchanged(c, dir, base)
	if err != nil {
		return ioErr(err, "reading the file again")
	}
	if !same {
		return &Error{Code: CodeChecksumMismatch, Field: field, Path: c.path, Msg: "the file changed while the plan was being applied"}
	}
	if c.delete {
		err = dir.Remove(base)
	} else {
		err = dir.Rename(path.Base(temp), base)
	}
	if err != nil {
		return ioErr(err, "replacing the file")
	}
	w.logf("wrote", "path", c.path, "bytes", len(c.after), "deleted", c.delete)
	w.onUndo(c.path, func() error {
		w.logf("restoring", "path", c.path)
		if !c.exists {
			return w.remove(c.path)
		}
		return w.replace(c.path, c.before, c.perm)
	})
	return nil
}

// syncEach fsyncs files concurrently (a few at a time), closing each.
func syncEach(files []staged) error {
	sem := make(chan struct{}, 16)
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i := range files {
		if files[i].f == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = files[i].f.Sync()
			if cerr := files[i].f.Close(); errs[i] == nil {
				errs[i] = cerr
			}
			files[i].f = nil
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return &Error{Code: CodeIO, Path: files[i].name, Msg: "syncing " + files[i].name, Err: err}
		}
	}
	return nil
}

// rollback undoes every step done, last first, and returns the steps
// that failed (every one is tried).
func (w *writer) rollback() []undoFailure {
	var failed []undoFailure
	for i := len(w.undo) - 1; i >= 0; i-- {
		u := w.undo[i]
		if err := u.fn(); err != nil {
			failed = append(failed, undoFailure{u.path, err})
		}
	}
	w.undo = nil
	return failed
}

// mkdirs creates dir and its missing parents, remembering to remove them
// and adding the parent of each to changed. An existing directory must be
// a real one, opened and checked again here (dirs.dir), just before it is
// written into; a new one is created through its parent's handle, checked
// just before.
func (w *writer) mkdirs(dir string, changed map[string]bool) error {
	if dir == "." || w.made[dir] {
		return nil
	}
	// A directory missing when the files were read may exist by now.
	w.dirs.forgetMissing(dir)
	_, err := w.dirs.dir(dir)
	if err == nil {
		w.made[dir] = true
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent, base := path.Dir(dir), path.Base(dir)
	if err := w.mkdirs(parent, changed); err != nil {
		return err
	}
	pr, err := w.dirs.dir(parent)
	if err != nil {
		return err
	}
	if err := pr.Mkdir(base, 0o755); err != nil {
		return err
	}
	w.made[dir] = true
	w.dirs.forget(dir)
	changed[parent] = true
	w.onUndo(dir, func() error {
		pr, err := w.dirs.dir(parent)
		if err != nil {
			return err
		}
		return pr.Remove(base)
	})
	return nil
}

// openDir opens dir, checked (dirs.dir), to sync it.
func (w *writer) openDir(dir string) (*os.File, error) {
	r, err := w.dirs.dir(dir)
	if err != nil {
		return nil, err
	}
	return r.Open(".")
}

func tempName(name string) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return path.Join(path.Dir(name), "."+path.Base(name)+".ctxkit-"+hex.EncodeToString(r[:])+".tmp")
}

// remove removes name under the root.
func (w *writer) remove(name string) error {
	dir, base, err := w.dirs.split(name)
	if err != nil {
		return err
	}
	return dir.Remove(base)
}

// replace writes data to name through a temporary file beside it, fsync
// and rename, then syncs the directory.
func (w *writer) replace(name string, data []byte, perm fs.FileMode) error {
	tmp := tempName(name)
	f, _, err := w.create(tmp, data, perm, true)
	if err == nil {
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		_ = w.remove(tmp)
		return err
	}
	dir, base, err := w.dirs.split(name)
	if err == nil {
		err = dir.Rename(path.Base(tmp), base)
	}
	if err != nil {
		_ = w.remove(tmp)
		return err
	}
	if d, err := w.openDir(path.Dir(name)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// create writes a new file, failing if name exists, through its
// directory's handle (checked just before, dirs.dir), and
// returns it open (not yet synced) with that handle when keep is true,
// closed otherwise.
func (w *writer) create(name string, data []byte, perm fs.FileMode, keep bool) (*os.File, *os.Root, error) {
	dir, base, err := w.dirs.split(name)
	if err != nil {
		return nil, nil, err
	}
	f, err := dir.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, nil, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && !keep {
		err = f.Close()
		f = nil
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		_ = dir.Remove(base)
		return nil, nil, err
	}
	return f, dir, nil
}
