package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
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
	// noSync leaves out every sync of the write, in benchmarks only, to
	// tell what durability costs from the rest. Unexported: a write
	// without its syncs is not something a user may ask for.
	noSync bool
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
	// Match is the pass that placed it: exact, offset, whitespace,
	// "fuzz N", inner (one context line inside missing or extra) or
	// indent (another indentation; the added lines re-indented).
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
	Index int    `json:"index"`
	Path  string `json:"path"`
	// From is a renamed file's old path (plain patches only).
	From         string        `json:"from,omitempty"`
	Status       Status        `json:"status"`
	Hunks        []HunkOutcome `json:"hunks,omitempty"`
	SHA256Before string        `json:"sha256_before,omitempty"`
	SHA256After  string        `json:"sha256_after,omitempty"`
	// Preimage, for a diff found already applied to a file that did not
	// match the plan's checksum, is the SHA-256 of the content reversing
	// the diff gave back: the plan's checksum.
	Preimage   string   `json:"sha256_preimage,omitempty"`
	BackupPath string   `json:"backup_path,omitempty"`
	Created    bool     `json:"created,omitempty"`
	Deleted    bool     `json:"deleted,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	Code       Code     `json:"code,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// Report is the outcome of Apply.
type Report struct {
	Strategy string    `json:"strategy"`
	Diffs    []Outcome `json:"diffs"`
	// Written is true when the files were changed on disk: a write
	// strategy and every diff applied (or was already applied).
	Written bool `json:"written"`
	// Note says what the run could not check: NoChecksums for a plain
	// patch.
	Note string `json:"note,omitempty"`
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
// the error is the first failure. Syncs are batched: the new contents are
// made durable together (one syncfs per file system where Linux has it,
// else an fsync per file) before any rename.
func Apply(ctx context.Context, root *os.Root, p *Plan, opts Options) (*Report, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return applyAll(ctx, root, len(p.Diffs), opts, func(d *dirs, i int, out *Outcome, keep bool) ([]*change, error) {
		c, err := prepare(d, i, p.Diffs[i], out, keep)
		if c == nil {
			return nil, err
		}
		return []*change{c}, err
	})
}

// preparer prepares the i-th of a run's diffs, filling out: the changes it
// makes (none, one, or two for a rename), each file a write changes kept
// open when keep is true.
type preparer func(d *dirs, i int, out *Outcome, keep bool) ([]*change, error)

// applyAll applies n diffs, each prepared by prep, with opts' strategy: every
// diff is prepared in memory first, and the files are written only when
// all of them succeed.
func applyAll(ctx context.Context, root *os.Root, n int, opts Options, prep preparer) (*Report, error) {
	strategy := opts.Strategy
	if strategy == nil {
		strategy = DryRun{}
	}
	if wb, ok := strategy.(WriteBackup); ok {
		if wb.Suffix == "" || strings.ContainsAny(wb.Suffix, "/\\\x00") {
			return nil, &Error{Code: CodeField, Path: "backup suffix", Msg: fmt.Sprintf("%q must be non-empty and hold no slash", wb.Suffix)}
		}
	}
	rep := &Report{Strategy: strategy.strategy(), Diffs: make([]Outcome, n)}
	// The directories are opened once for the run; each use checks again
	// that the path still leads to them through real directories only
	// (dirs.verify): a directory renamed or replaced since the files were
	// read is not written into.
	d := newDirs(root)
	defer d.close()
	_, dry := strategy.(DryRun)
	changes, err := prepareAll(ctx, d, n, rep.Diffs, !dry, prep)
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
				err.Path = fmt.Sprintf("diffs[%d]", c.index)
				return rep, err
			}
			if _, err := w.dirs.lstat(c.backup); err == nil || !errors.Is(err, fs.ErrNotExist) {
				return rep, &Error{Code: CodeBackupExists, Path: fmt.Sprintf("diffs[%d]", c.index), File: c.path,
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
			err = &Error{Code: CodeRollbackIncomplete, File: rep.Unrestored[0],
				Msg: fmt.Sprintf("the write failed and restoring failed for %s: check them (they may hold new content or be missing)", strings.Join(rep.Unrestored, ", ")),
				Err: errors.Join(errs...)}
		}
		return rep, err
	}
	for _, c := range changes {
		if c.backup != "" {
			rep.Diffs[c.index].BackupPath = c.backup
		}
	}
	rep.Written = true
	return rep, nil
}

// prepareAll prepares n diffs with prep, a few at a time (reading,
// hashing and patching are independent per file), filling outs. The
// error is the failure of the first diff in order that failed. With
// keep, each existing file a diff changes stays open (change.f).
func prepareAll(ctx context.Context, d *dirs, n int, outs []Outcome, keep bool, prep preparer) ([]*change, error) {
	prepared := make([][]*change, n)
	errs := make([]error, n)
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if errs[i] = ctx.Err(); errs[i] != nil {
					continue
				}
				prepared[i], errs[i] = prep(d, i, &outs[i], keep)
				if !keep {
					// A dry run is done with the contents once the
					// outcome is filled: their buffers serve the next
					// files read and patched.
					recycleContents(prepared[i])
				}
			}
		})
	}
	wg.Wait()
	var all []*change
	for _, cs := range prepared {
		all = append(all, cs...)
	}
	if err := ctx.Err(); err != nil {
		closeFiles(all)
		return nil, err
	}
	var (
		first  error
		failed int
	)
	for i, err := range errs {
		if err != nil {
			out := &outs[i]
			out.Status, out.Code, out.Error = StatusFailed, CodeOf(err), err.Error()
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		closeFiles(all)
		if failed > 1 {
			first = fmt.Errorf("%w (and %d more diffs failed)", first, failed-1)
		}
		return nil, first
	}
	return all, nil
}

// recycleContents hands the contents of cs back for reuse (recycle), each
// buffer once: a content may be another's (a noop's new content is its
// old, a rename's that of its source). Nothing may use them after.
func recycleContents(cs []*change) {
	var seen [][]byte
	give := func(b []byte) {
		if cap(b) == 0 {
			return
		}
		for _, s := range seen {
			if &s[:cap(s)][0] == &b[:cap(b)][0] {
				return
			}
		}
		seen = append(seen, b)
		recycle(b)
	}
	for _, c := range cs {
		if c == nil {
			continue
		}
		before, after := c.before, c.after
		c.before, c.after = nil, nil
		give(before)
		give(after)
	}
}

// applyDiff applies f to before as patch.Apply does; in a dry run
// (!keep), whose contents are recycled once their outcome is filled, the
// new content is written into a recycled buffer.
func applyDiff(before []byte, f *patch.File, keep bool) (*patch.Result, error) {
	if keep {
		return patch.Apply(before, f)
	}
	buf := reuse(len(before))
	res, err := patch.ApplyInto(buf, before, f)
	if res == nil || cap(res.Content) == 0 || cap(buf) == 0 || &res.Content[:cap(res.Content)][0] != &buf[:cap(buf)][0] {
		// The buffer went unused (a failure, a noop, a larger
		// content): it serves another file.
		recycle(buf)
	}
	return res, err
}

// prepare reads a diff's file, checks it and applies the diff in memory.
// With keep, the file stays open when the diff changes it.
func prepare(dirs *dirs, i int, d Diff, out *Outcome, keep bool) (c *change, err error) {
	field := fmt.Sprintf("diffs[%d]", i)
	*out = Outcome{Index: i, Path: d.Path}
	fail := func(code Code, err error, format string, args ...any) error {
		return &Error{Code: code, Path: field, File: d.Path, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	c = &change{index: i, path: d.Path, perm: 0o644}
	cur, err := dirs.readFile(d.Path, keep)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			pe.Path = field
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
		if res := alreadyApplied(before, exists, d); res != nil {
			// Nothing to write: the file is the diff's result already.
			c.after = before
			out.Status, out.SHA256After, out.Preimage = StatusNoop, out.SHA256Before, d.Checksum
			for h, hr := range res.Hunks {
				out.Hunks = append(out.Hunks, HunkOutcome{Index: h, Match: hr.Match.String(), Offset: hr.Match.Offset, Line: hr.Match.Line})
			}
			out.Warnings = append(res.Warnings, fmt.Sprintf("already applied: the file (SHA-256 %s) is what the diff makes of the plan's checksum %s; nothing to change", short(out.SHA256Before), short(d.Checksum)))
			return c, nil
		}
		if !exists {
			return nil, fail(CodeChecksumMismatch, nil, "the file does not exist, but the plan's checksum %s is not that of empty input: the plan expects a file that is not there", short(d.Checksum))
		}
		return nil, fail(CodeChecksumMismatch, nil, "the file's SHA-256 is %s, the plan's checksum is %s: the plan was written against another version of the file", short(out.SHA256Before), short(d.Checksum))
	}
	f, err := patch.Parse(d.UnifiedDiff)
	if err != nil {
		return nil, fail(codeOfPatch(err), err, "unified_diff")
	}
	if err := checkHeaders(f, d.Path); err != nil {
		err.Path = field + ".unified_diff"
		return nil, err
	}
	res, err := applyDiff(before, f, keep)
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

// alreadyApplied reports whether before, the file as found (exists false
// when it is missing), is exactly what d's diff makes of the content d's
// checksum names: reversing the diff, strictly, must give that content
// back, and applying the diff to it, as Apply would, must give before
// again. It returns the forward result then, nil otherwise. Nothing is
// judged from likeness: both directions are compared byte for byte (the
// first through the checksum), so a file changed in any other way is not
// taken for an applied one.
func alreadyApplied(before []byte, exists bool, d Diff) *patch.Result {
	f, err := patch.Parse(d.UnifiedDiff)
	if err != nil || checkHeaders(f, d.Path) != nil {
		return nil
	}
	switch {
	case f.IsDelete() && exists, !f.IsDelete() && !exists, f.IsNew() && d.Checksum != Checksum(nil):
		// A deletion is applied once the file is gone; anything else
		// needs the file; a new file's plan names empty content.
		return nil
	}
	rev := patch.Reverse(f)
	orig, err := patch.ApplyExact(before, rev)
	if err != nil {
		return nil
	}
	if Checksum(orig) != d.Checksum && f.IsDelete() {
		// The deleted file's line endings are not in a diff written
		// with LF: try CRLF too.
		orig, err = patch.ApplyExact(before, withCRLF(rev))
		if err != nil {
			return nil
		}
	}
	if Checksum(orig) != d.Checksum {
		return nil
	}
	res, err := patch.Apply(orig, f)
	if err != nil || res.Status != patch.Applied || !bytes.Equal(res.Content, before) {
		return nil
	}
	return res
}

// withCRLF is f with every line ending in CRLF.
func withCRLF(f *patch.File) *patch.File {
	g := *f
	g.Hunks = make([]patch.Hunk, len(f.Hunks))
	for i, h := range f.Hunks {
		h.Lines = append([]patch.Line(nil), h.Lines...)
		for j := range h.Lines {
			h.Lines[j].CR = true
		}
		g.Hunks[i] = h
	}
	return &g
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

// hunkOutcomes is each hunk's outcome in res.
func hunkOutcomes(res *patch.Result) []HunkOutcome {
	var hs []HunkOutcome
	for h, hr := range res.Hunks {
		ho := HunkOutcome{Index: h, Match: hr.Match.String(), Offset: hr.Match.Offset, Line: hr.Match.Line}
		if hr.Err != nil {
			ho = HunkOutcome{Index: h, Line: hr.Err.FileLine, Code: Code(hr.Err.Code), Error: hr.Err.Error()}
		}
		hs = append(hs, ho)
	}
	return hs
}

// ApplyPatch applies a plain multi-file unified diff (git's "diff --git"
// output, with new files, deletions, renames and mode lines, or that of
// "diff -u" and "diff -ruN") to the files under root, with the engine and
// the guarantees of Apply: each file's diff is applied in memory first,
// and the files are written only when all of them succeed. A patch has no
// checksums: each hunk is placed by content only, and the report's Note
// says so. Mode changes are not applied (a warning says so); binary
// diffs, copies, symbolic links and submodules are refused, naming the
// file. Each path is checked as a plan's path is (relative, local, clean,
// not in .git), and no file may appear twice.
//
// strip is the number of leading components removed from the names of
// the "---"/"+++" and "diff --git" headers, as patch -p does (git's rename
// lines, written without a prefix, lose one fewer). With StripDetect,
// git's format strips 1 (its a/ and b/); otherwise 1 when every name
// starts with "a/" or "b/", or when the two names differ in their first
// component only ("diff -ruN old new"), else 0; the first section with
// two names decides for every section not in git's format (a new file's
// or a deletion's one name cannot tell).
//
// When the two names of a section not in git's format differ ("---
// x.c.orig", "+++ x.c"), the file is the one that exists under root; when
// both or neither do, the one with fewer components, then the shorter
// base name, then the shorter name, as GNU patch does.
func ApplyPatch(ctx context.Context, root *os.Root, text []byte, strip int, opts Options) (*Report, error) {
	p, err := readPatch(root, text, strip)
	if err != nil {
		return nil, err
	}
	rep, err := applyAll(ctx, root, len(p.Files), opts, func(d *dirs, i int, out *Outcome, keep bool) ([]*change, error) {
		return preparePatch(d, i, &p.Files[i], out, keep)
	})
	if rep != nil {
		rep.Note = NoChecksums
	}
	return rep, err
}

// readChange reads name for the i-th diff of a run: a change of it with
// its content, kept open when keep is true and the file exists.
func readChange(d *dirs, i int, name string, keep bool) (*change, error) {
	cur, err := d.readFile(name, keep)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			pe.Path = fmt.Sprintf("diffs[%d]", i)
			return nil, pe
		}
		return nil, &Error{Code: CodeIO, Path: fmt.Sprintf("diffs[%d]", i), File: name, Err: err}
	}
	c := &change{index: i, path: name, perm: 0o644, before: cur.data, exists: cur.exists, fi: cur.fi, f: cur.f}
	if cur.exists {
		c.perm = cur.perm
	}
	return c, nil
}

// preparePatch reads the files of fd, the i-th file of a plain patch, and
// applies its diff in memory. A file it leaves unchanged is closed.
func preparePatch(d *dirs, i int, fd *fileDiff, out *Outcome, keep bool) (cs []*change, err error) {
	*out = Outcome{Index: i, Path: fd.Path, From: fd.From}
	fail := func(code Code, cause error, format string, args ...any) error {
		return &Error{Code: code, Path: fmt.Sprintf("diffs[%d]", i), File: fd.Path, Msg: fmt.Sprintf(format, args...), Err: cause}
	}
	var opened []*change
	defer func() {
		for _, c := range opened {
			if c.f != nil && (err != nil || !c.changes) {
				c.f.Close()
				c.f = nil
			}
		}
	}()
	read := func(name string) (*change, error) {
		c, err := readChange(d, i, name, keep)
		if c != nil {
			opened = append(opened, c)
		}
		return c, err
	}
	if fd.OldMode != "" && fd.NewMode != "" && fd.OldMode != fd.NewMode {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the mode change %s → %s is not applied: ctxkit changes content only", fd.OldMode, fd.NewMode))
	} else if fd.New && fd.NewMode != "" && fd.NewMode != "100644" {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the new file's mode %s is not applied: ctxkit changes content only", fd.NewMode))
	}
	// apply applies the diff to c's content, filling the outcome.
	apply := func(c *change) (*patch.Result, error) {
		res, err := applyDiff(c.before, fd.file, keep)
		if res != nil {
			out.Hunks = hunkOutcomes(res)
			out.Warnings = append(out.Warnings, res.Warnings...)
		}
		if err != nil {
			return nil, fail(codeOfPatch(err), err, "")
		}
		return res, nil
	}
	noop := func(c *change, why string) ([]*change, error) {
		out.Status, out.SHA256Before, out.SHA256After = StatusNoop, Checksum(c.before), Checksum(c.before)
		if !c.exists {
			out.SHA256Before, out.SHA256After = "", ""
		}
		if why != "" {
			out.Warnings = append(out.Warnings, why)
		}
		c.after = c.before
		return []*change{c}, nil
	}
	c, err := read(fd.Path)
	if err != nil {
		return nil, err
	}
	if c.exists {
		out.SHA256Before = Checksum(c.before)
	}
	switch {
	case fd.From != "":
		src, err := read(fd.From)
		if err != nil {
			return nil, err
		}
		if src.exists {
			out.SHA256Before = Checksum(src.before)
		}
		if !src.exists {
			if !c.exists {
				return nil, fail(CodeFileMissing, nil, "the rename's source %s does not exist", fd.From)
			}
			// Renamed already: the target must be the diff's result. A
			// rename without changes carries no content to check the
			// target against, so it cannot be told already applied.
			if fd.file == nil {
				return nil, fail(CodeFileMissing, nil, "the rename's source %s does not exist; %s does, but a rename without changes carries no content to check it against", fd.From, fd.Path)
			}
			res, err := apply(c)
			if err != nil || res.Status != patch.Noop {
				return nil, fail(CodeFileMissing, nil, "the rename's source %s does not exist, and %s is not the diff's result", fd.From, fd.Path)
			}
			return noop(c, fmt.Sprintf("already renamed: %s is gone and %s holds the diff's result", fd.From, fd.Path))
		}
		if c.exists {
			return nil, fail(CodeFileExists, nil, "the rename's target exists: a rename does not overwrite a file")
		}
		after := src.before
		if fd.file != nil {
			res, err := apply(src)
			if err != nil {
				return nil, err
			}
			after = res.Content
		}
		src.delete, src.changes = true, true
		c.after, c.perm, c.changes = after, src.perm, true
		out.Status, out.SHA256Before, out.SHA256After = StatusApplied, Checksum(src.before), Checksum(after)
		return []*change{src, c}, nil
	case fd.Delete && !c.exists:
		return noop(c, "the file is already gone")
	case fd.Delete && fd.file == nil:
		if len(c.before) > 0 {
			return nil, fail(Code(patch.CodeNotFound), nil, "the diff deletes an empty file, but the file holds %d bytes", len(c.before))
		}
	case fd.Delete:
		res, err := apply(c)
		if err != nil {
			return nil, err
		}
		if len(res.Content) > 0 {
			return nil, fail(Code(patch.CodeNotFound), nil, "the diff deletes the file, but %d bytes of it are not in the diff", len(res.Content))
		}
	case fd.New && fd.file == nil:
		if c.exists && len(c.before) == 0 {
			return noop(c, "the empty file already exists")
		}
		if c.exists {
			return nil, fail(CodeFileExists, nil, "the diff creates an empty file, but the file exists with %d bytes", len(c.before))
		}
		c.after = []byte{}
	case !c.exists && !fd.New:
		return nil, fail(CodeFileMissing, nil, "the file does not exist")
	case fd.file == nil:
		// A mode change only: nothing to write.
		return noop(c, "")
	default:
		res, err := apply(c)
		if err != nil {
			return nil, err
		}
		if res.Status == patch.Noop {
			return noop(c, "")
		}
		c.after = res.Content
	}
	// A missing file hashes as empty input, as in a plan.
	out.Status, out.SHA256Before = StatusApplied, Checksum(c.before)
	c.changes = true
	if fd.Delete {
		c.delete, out.Deleted = true, true
	} else {
		out.Created, out.SHA256After = !c.exists, Checksum(c.after)
	}
	return []*change{c}, nil
}
