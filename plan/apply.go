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
	changes, err := prepareAll(ctx, root, p.Diffs, rep.Diffs)
	if err != nil {
		return rep, err
	}
	if _, dry := strategy.(DryRun); dry {
		return rep, nil
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	// The directories are opened again for writing: a directory renamed
	// or replaced since the files were read is not written into.
	w := &writer{root: root, dirs: newDirs(root), opts: opts, made: map[string]bool{}}
	defer w.dirs.close()
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
// failure of the first diff in the plan's order that failed.
func prepareAll(ctx context.Context, root *os.Root, diffs []Diff, outs []Outcome) ([]*change, error) {
	d := newDirs(root)
	defer d.close()
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
				prepared[i], errs[i] = prepare(d, i, diffs[i], &outs[i])
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
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
		if failed > 1 {
			first = fmt.Errorf("%w (and %d more diffs failed)", first, failed-1)
		}
		return nil, first
	}
	return changes, nil
}

// prepare reads a diff's file, checks it and applies the diff in memory.
func prepare(dirs *dirs, i int, d Diff, out *Outcome) (*change, error) {
	field := fmt.Sprintf("diffs[%d]", i)
	*out = Outcome{Index: i, Path: d.Path}
	fail := func(code Code, err error, format string, args ...any) error {
		return &Error{Code: code, Field: field, Path: d.Path, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	c := &change{index: i, path: d.Path, perm: 0o644}
	before, exists, perm, err := dirs.readFile(d.Path)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			pe.Field = field
			return nil, pe
		}
		return nil, fail(CodeIO, err, "")
	}
	c.before, c.exists = before, exists
	if exists {
		c.perm = perm
	}
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

// dirs opens each directory of a plan's files once, as a root of its own
// opened through the plan's root (so confined as the root is), and keeps
// it: each file operation is then one system call on a base name instead
// of a walk from the root, component by component, per operation.
type dirs struct {
	root *os.Root
	mu   sync.Mutex
	open map[string]dirEntry
}

type dirEntry struct {
	r   *os.Root
	err error
}

func newDirs(root *os.Root) *dirs {
	return &dirs{root: root, open: map[string]dirEntry{}}
}

// get is the directory dir (relative to the root, "." for the root). A
// directory reached through a symbolic link is refused, even one that
// stays inside the root: a link could lead into .git, which a plan may
// not change, and a path names the file it changes only when every one
// of its directories is a real one.
func (d *dirs) get(dir string) (*os.Root, error) {
	if dir == "." {
		return d.root, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.open[dir]
	if !ok {
		e.r, e.err = d.openDir(dir)
		d.open[dir] = e
	}
	var pe *Error
	if errors.As(e.err, &pe) {
		cp := *pe // each caller fills in its own field
		return nil, &cp
	}
	return e.r, e.err
}

// openDir opens dir once checkDir has found it a real directory, and
// checks that the directory opened is the one examined.
func (d *dirs) openDir(dir string) (*os.Root, error) {
	fi, err := checkDir(d.root, dir)
	if err != nil {
		return nil, err
	}
	r, err := d.root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if ofi, err := r.Stat("."); err != nil || !os.SameFile(fi, ofi) {
		r.Close()
		return nil, &Error{Code: CodePathRejected, Path: dir, Msg: "the directory was replaced while it was opened"}
	}
	return r, nil
}

// checkDir checks that dir (relative to root, not ".") and each of its
// parents is a directory and not a symbolic link, and returns dir's
// information. The error of a missing one is fs.ErrNotExist.
func checkDir(root *os.Root, dir string) (fs.FileInfo, error) {
	for i := 0; ; {
		j := strings.IndexByte(dir[i:], '/')
		prefix := dir
		if j >= 0 {
			prefix = dir[:i+j]
		}
		fi, err := root.Lstat(prefix)
		switch {
		case err != nil && strings.Contains(err.Error(), "escapes"):
			return nil, &Error{Code: CodePathRejected, Path: dir, Msg: "leads outside the root through a symbolic link"}
		case err != nil:
			return nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			if _, err := root.Stat(prefix); err != nil && strings.Contains(err.Error(), "escapes") {
				return nil, &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s leads outside the root through a symbolic link", prefix)}
			}
			return nil, &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s is a symbolic link: a plan changes files through real directories only", prefix)}
		case !fi.IsDir():
			return nil, &Error{Code: CodePathRejected, Path: dir, Msg: fmt.Sprintf("%s is not a directory", prefix)}
		}
		if j < 0 {
			return fi, nil
		}
		i += j + 1
	}
}

// forget drops what get remembers of dir (after it was created).
func (d *dirs) forget(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.open[dir]; ok && e.r != nil {
		e.r.Close()
	}
	delete(d.open, dir)
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

// split is name's directory, opened, and base name.
func (d *dirs) split(name string) (*os.Root, string, error) {
	r, err := d.get(path.Dir(name))
	return r, path.Base(name), err
}

func (d *dirs) lstat(name string) (fs.FileInfo, error) {
	r, base, err := d.split(name)
	if err != nil {
		return nil, err
	}
	return r.Lstat(base)
}

// readFile reads name under the root: its content, whether it exists and
// its permissions. A symbolic link, a non-regular file, a path that
// escapes the root and a file past MaxFileBytes are refused.
func (d *dirs) readFile(name string) ([]byte, bool, fs.FileMode, error) {
	rejected := func(format string, args ...any) error {
		return &Error{Code: CodePathRejected, Path: name, Msg: fmt.Sprintf(format, args...)}
	}
	fi, err := d.lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, 0, nil
	case err != nil && strings.Contains(err.Error(), "escapes"):
		return nil, false, 0, rejected("leads outside the root through a symbolic link")
	case err != nil:
		return nil, false, 0, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, false, 0, rejected("is a symbolic link: a plan changes regular files only")
	case !fi.Mode().IsRegular():
		return nil, false, 0, rejected("is not a regular file")
	case fi.Size() > MaxFileBytes:
		return nil, false, 0, &Error{Code: CodeTooLarge, Path: name, Msg: fmt.Sprintf("the file is %d bytes, more than %d", fi.Size(), MaxFileBytes)}
	}
	r, base, err := d.split(name)
	if err != nil {
		return nil, false, 0, err
	}
	f, err := r.Open(base)
	if err != nil {
		return nil, false, 0, err
	}
	defer f.Close()
	// The file opened is the one examined: not a link put in its place
	// since.
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return nil, false, 0, rejected("was replaced while it was read")
	}
	b := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, 0, err
		}
		if len(b) > MaxFileBytes {
			return nil, false, 0, &Error{Code: CodeTooLarge, Path: name, Msg: fmt.Sprintf("the file is more than %d bytes", MaxFileBytes)}
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	return b, true, fi.Mode().Perm(), nil
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
//     beside the file it replaces);
//  2. their contents are made durable: with syncfs of each file system
//     they are on, once, when the kernel reports writeback errors through
//     syncfs (Linux 5.8 and later) and there are at least syncfsMin
//     files; otherwise with an fsync of each;
//  3. each file's content is read once more and compared with what the
//     diff was applied to, then its temporary file is renamed over it (or
//     the file deleted);
//  4. the renames, deletions and new directories are made durable: with
//     syncfs again when step 2 used it (and an fsync of each directory a
//     file was deleted from), otherwise with an fsync of each directory
//     whose entries changed (the files' directories and the parents of
//     the directories created).
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
	temps := map[*change]string{}
	changed := map[string]bool{} // directories whose entries change
	for _, c := range changes {
		if !c.changes {
			continue
		}
		field := fmt.Sprintf("diffs[%d]", c.index)
		ioErr := func(err error, what string) error {
			var pe *Error
			if errors.As(err, &pe) && pe.Code == CodePathRejected {
				pe.Field, pe.Path = field, c.path
				return pe
			}
			return &Error{Code: CodeIO, Field: field, Path: c.path, Msg: what, Err: err}
		}
		if c.backup != "" {
			if err := w.step("backup", c.backup); err != nil {
				return ioErr(err, "writing the backup")
			}
			f, err := w.create(c.backup, c.before, c.perm)
			if err != nil {
				if errors.Is(err, fs.ErrExist) {
					return &Error{Code: CodeBackupExists, Field: field, Path: c.path, Msg: fmt.Sprintf("the backup %s already exists", c.backup)}
				}
				return ioErr(err, "writing the backup")
			}
			files = append(files, staged{f: f, name: c.backup})
			backup := c.backup
			w.onUndo(backup, func() error { return w.remove(backup) })
		}
		changed[path.Dir(c.path)] = true
		if c.delete {
			continue
		}
		if err := w.step("write", c.path); err != nil {
			return ioErr(err, "writing the file")
		}
		if err := w.mkdirs(path.Dir(c.path), changed); err != nil {
			return ioErr(err, "creating the file's directory")
		}
		tmp := tempName(c.path)
		f, err := w.create(tmp, c.after, c.perm)
		if err != nil {
			return ioErr(err, "writing the file")
		}
		files = append(files, staged{f: f, name: tmp})
		temps[c] = tmp
		w.onUndo(tmp, func() error {
			if err := w.remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		})
	}
	if testNoSync == "1" {
		return w.renameAll(changes, temps)
	}
	batched, err := syncBatch(files, syncfsMin)
	if err != nil {
		return err
	}
	if !batched {
		if err := syncEach(files); err != nil {
			return err
		}
	}
	if err := w.renameAll(changes, temps); err != nil {
		return err
	}
	if batched {
		// One file of each file system is still open: syncfs of each
		// again makes the renames durable. A deletion's directory may be
		// on a file system no staged file is on: it is synced itself.
		if _, err := syncBatch(files, 1); err != nil {
			return err
		}
		changed = map[string]bool{}
		for _, c := range changes {
			if c.changes && c.delete {
				changed[path.Dir(c.path)] = true
			}
		}
	}
	var ds []staged
	for d := range changed {
		f, err := w.root.Open(d)
		if err != nil {
			return &Error{Code: CodeIO, Path: d, Msg: "syncing the directory " + d, Err: err}
		}
		ds = append(ds, staged{f: f, name: d})
	}
	return syncEach(ds)
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
		field := fmt.Sprintf("diffs[%d]", c.index)
		ioErr := func(err error, what string) error {
			var pe *Error
			if errors.As(err, &pe) && pe.Code == CodePathRejected {
				pe.Field, pe.Path = field, c.path
				return pe
			}
			return &Error{Code: CodeIO, Field: field, Path: c.path, Msg: what, Err: err}
		}
		if err := w.step("rename", c.path); err != nil {
			return ioErr(err, "writing the file")
		}
		// The file's directories must still be real ones, and the file
		// what was planned against.
		if dir := path.Dir(c.path); dir != "." {
			if _, err := checkDir(w.root, dir); err != nil {
				return ioErr(err, "checking the file's directory")
			}
		}
		now, exists, _, err := w.dirs.readFile(c.path)
		if err != nil {
			return ioErr(err, "reading the file again")
		}
		if exists != c.exists || !bytes.Equal(now, c.before) {
			return &Error{Code: CodeChecksumMismatch, Field: field, Path: c.path, Msg: "the file changed while the plan was being applied"}
		}
		dir, base, err := w.dirs.split(c.path)
		if err == nil {
			if c.delete {
				err = dir.Remove(base)
			} else {
				err = dir.Rename(path.Base(temps[c]), base)
			}
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
	}
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
// a real one (checkDir), checked again here, just before it is written
// into.
func (w *writer) mkdirs(dir string, changed map[string]bool) error {
	if dir == "." || w.made[dir] {
		return nil
	}
	_, err := checkDir(w.root, dir)
	if err == nil {
		w.made[dir] = true
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := w.mkdirs(path.Dir(dir), changed); err != nil {
		return err
	}
	if err := w.root.Mkdir(dir, 0o755); err != nil {
		return err
	}
	w.made[dir] = true
	w.dirs.forget(dir)
	changed[path.Dir(dir)] = true
	w.onUndo(dir, func() error { return w.root.Remove(dir) })
	return nil
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
	f, err := w.create(tmp, data, perm)
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
	if d, err := w.root.Open(path.Dir(name)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// create writes a new file, failing if name exists, and returns it open
// (not yet synced).
func (w *writer) create(name string, data []byte, perm fs.FileMode) (*os.File, error) {
	dir, base, err := w.dirs.split(name)
	if err != nil {
		return nil, err
	}
	f, err := dir.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err != nil {
		f.Close()
		_ = dir.Remove(base)
		return nil, err
	}
	return f, nil
}
