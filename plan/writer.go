package plan

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sync"
	"sync/atomic"
)

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
// entry of the plan is on stable storage (unless Options.noSync, in
// benchmarks, left out steps 2 and 4).
func (w *writer) commitAll(changes []*change) error {
	var files []staged
	defer func() {
		for _, s := range files {
			if s.f != nil {
				s.f.Close()
			}
		}
	}()
	batch := !w.opts.noSync && batched(stagedCount(changes))
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
	changed := map[string]bool{} // directories whose entries change
	jobs, err := w.createJobs(changes, changed)
	if err != nil {
		return err
	}
	if batch {
		// A directory missing when the files were read may have appeared
		// since, on a file system of its own.
		if syncers, err = w.openSyncers(syncers); err != nil {
			return err
		}
	}
	w.createAll(jobs, !batch && !w.opts.noSync)
	temps := map[*change]string{}
	files, err = w.created(jobs, temps)
	if err != nil {
		return err
	}
	if w.opts.noSync {
		return w.renameAll(changes, temps)
	}
	if batch {
		if err := w.syncAll(syncers); err != nil {
			return err
		}
		if err := w.renameAll(changes, temps); err != nil {
			return err
		}
		return w.syncAll(syncers)
	}
	for _, s := range files {
		if err := w.step("fsync", s.name); err != nil {
			return &Error{Code: CodeIO, File: s.name, Msg: "syncing " + s.name, Err: err}
		}
	}
	if err := syncEach(files); err != nil {
		return err
	}
	if err := w.renameAll(changes, temps); err != nil {
		return err
	}
	return w.syncDirs(changed)
}

// stagedCount is the number of files commitAll creates for changes: a
// backup and a temporary file for each changed file (no temporary file
// for a deletion).
func stagedCount(changes []*change) int {
	n := 0
	for _, c := range changes {
		if c.changes && c.backup != "" {
			n++
		}
		if c.changes && !c.delete {
			n++
		}
	}
	return n
}

// createJobs is every backup and temporary file commitAll creates, in the
// plan's order, once what each file needs is done: its steps run and its
// directories created (adding to changed each directory whose entries
// change). Each job is then a file of its own, in a directory that
// exists.
func (w *writer) createJobs(changes []*change, changed map[string]bool) ([]createJob, error) {
	var jobs []createJob
	for _, c := range changes {
		if !c.changes {
			continue
		}
		if c.backup != "" {
			if err := w.step("backup", c.backup); err != nil {
				return nil, fileErr(c, err, "writing the backup")
			}
			jobs = append(jobs, createJob{c: c, name: c.backup, data: c.before, backup: true})
		}
		changed[path.Dir(c.path)] = true
		if c.delete {
			continue
		}
		if err := w.step("write", c.path); err != nil {
			return nil, fileErr(c, err, "writing the file")
		}
		if err := w.mkdirs(path.Dir(c.path), changed); err != nil {
			return nil, fileErr(c, err, "creating the file's directory")
		}
		jobs = append(jobs, createJob{c: c, name: tempName(c.path), data: c.after})
	}
	return jobs, nil
}

// created takes the outcome of jobs, once createAll ran them: every file
// created is registered to be removed by a rollback (through the handle
// it was created with: it is this run's own file, in the directory it
// was created in), also when another failed, and returned to be synced
// and closed; temps gets each change's temporary file. The error is the
// first job's in the plan's order that failed.
func (w *writer) created(jobs []createJob, temps map[*change]string) ([]staged, error) {
	var files []staged
	var first error
	for _, j := range jobs {
		if j.err != nil {
			if first == nil {
				switch {
				case j.backup && errors.Is(j.err, fs.ErrExist):
					first = &Error{Code: CodeBackupExists, Path: fmt.Sprintf("diffs[%d]", j.c.index), File: j.c.path, Msg: fmt.Sprintf("the backup %s already exists", j.name)}
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
	return files, first
}

// syncDirs fsyncs each of dirs, the directories whose entries changed.
func (w *writer) syncDirs(dirs map[string]bool) error {
	var ds []staged
	for d := range dirs {
		f, err := w.openDir(d)
		if err != nil {
			return &Error{Code: CodeIO, File: d, Msg: "syncing the directory " + d, Err: err}
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
			return out, &Error{Code: CodeIO, File: d.name, Msg: "opening " + d.name + " to sync its file system", Err: err}
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
			return &Error{Code: CodeIO, File: s.name, Msg: "syncing the file system of " + s.name, Err: err}
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
		pe.Path, pe.File = field, c.path
		return pe
	}
	return &Error{Code: CodeIO, Path: field, File: c.path, Msg: what, Err: err}
}

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
		return &Error{Code: CodeChecksumMismatch, Path: field, File: c.path, Msg: "the file changed while the plan was being applied"}
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
	same := bytes.Equal(now, c.before)
	// The second read serves only this comparison: its buffer serves
	// the next file's.
	recycle(now)
	return same, nil
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
			return &Error{Code: CodeIO, File: files[i].name, Msg: "syncing " + files[i].name, Err: err}
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
