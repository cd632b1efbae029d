package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/store"
)

// DefaultMaxBytes is the content Index keeps per file when
// Options.MaxBytes is zero.
const DefaultMaxBytes = 64 << 10

// manifestSaveEvery is how many writes a run makes between saving the
// manifest, so even a run that is killed leaves most of its work recorded.
const manifestSaveEvery = 100

// Options configure one run of Index.
//
// Index's errors about the repository and the server name them as the
// flags of 'ctxkit index' do (--repo, --server, --token): those are the
// words its users see, and the messages are part of its output.
type Options struct {
	Repo     string           // the repository's directory (required)
	Name     string           // the repository's name; default: Repo's base name
	MaxBytes int64            // content kept per file; default DefaultMaxBytes
	Now      func() time.Time // the clock of LastIndexedAt; default time.Now
	// State is a directory that keeps the index's state (StatusFile,
	// ManifestFile and InstanceFile, at the same paths under it) instead
	// of Repo, so a read-only tree can be indexed; "" means Repo.
	State string
	// Progress, when set, is called after each file with the files done
	// and the files found.
	Progress func(done, total int)
}

// Stats counts what a run of Index did.
type Stats struct {
	Files     int // text files the index holds after the run
	Created   int // breadcrumbs created
	Updated   int // breadcrumbs updated (the file changed)
	Unchanged int // files the index already held as they are
	Removed   int // breadcrumbs of files that are gone, removed
	Binary    int // files skipped as binary
	Skipped   int // files skipped otherwise (not regular, unreadable)
	Kept      int // breadcrumbs of files that are gone, kept: removing needs the curator role
}

// Index stores each tracked text file of the repository o.Repo as a
// breadcrumb of schema FileSchema in target, tagged RepoTag(name), and
// writes the repository's status (StatusFile) and manifest (ManifestFile).
// The files are git ls-files's when the repository has a .git, else those
// a walk of the tree finds, less what Withheld names. A run after another
// writes only the files that changed and removes the breadcrumbs of files
// that are gone; a run that failed midway leaves what the next one needs
// to finish without duplicates.
func Index(ctx context.Context, target Target, o Options) (envelope.IndexStatus, Stats, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	abs, err := filepath.Abs(o.Repo)
	if err != nil {
		return envelope.IndexStatus{}, Stats{}, fmt.Errorf("--repo: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return envelope.IndexStatus{}, Stats{}, fmt.Errorf("--repo: %v", err)
	}
	defer root.Close()
	state := root
	if o.State != "" {
		if state, err = os.OpenRoot(o.State); err != nil {
			return envelope.IndexStatus{}, Stats{}, fmt.Errorf("--state: %v", err)
		}
		defer state.Close()
	}
	name := o.Name
	if name == "" {
		name = filepath.Base(abs)
	}
	r := &run{ctx: ctx, target: target, root: root, state: state, name: name, maxBytes: o.MaxBytes}
	started := o.Now().UTC()
	head, _ := readHead(root)
	if err := r.begin(); err != nil {
		return r.status, r.stats, err
	}
	files, walked, err := listFiles(ctx, abs)
	if err != nil {
		return r.fail(err)
	}
	if walked {
		r.next.Source, r.done.Source = SourceWalk, SourceWalk
	}
	for i, p := range files {
		if err := ctx.Err(); err != nil {
			return r.fail(err)
		}
		if err := r.file(p); err != nil {
			return r.fail(err)
		}
		if o.Progress != nil {
			o.Progress(i+1, len(files))
		}
	}
	if err := r.removeGone(); err != nil {
		return r.fail(err)
	}
	if err := WriteManifest(state, r.next); err != nil {
		return r.fail(err)
	}
	st := envelope.IndexStatus{Repo: name, IndexState: envelope.IndexFresh, LastIndexedAt: started,
		LastIndexedCommit: head, SchemaVersion: SchemaVersion}
	if err := WriteStatus(state, st); err != nil {
		return st, r.stats, err
	}
	return st, r.stats, nil
}

// run is the state of one run of Index.
type run struct {
	ctx      context.Context
	target   Target
	root     *os.Root // the tree indexed, only read
	state    *os.Root // where the status, manifest and instance id are kept
	name     string
	maxBytes int64
	instance string

	status envelope.IndexStatus // what the status file says while the run lasts
	stats  Stats
	// last is the manifest of the run before (empty when it was of
	// another target, repository or index); next is this run's, of the
	// files found now; done is what is known now: last with this run's
	// writes over it. done is saved every manifestSaveEvery writes and
	// when the run fails, so the next run neither repeats a create (a
	// duplicate) nor updates a version that is no longer current.
	last       *Manifest
	next, done Manifest
	writes     int

	// existing maps each path to the breadcrumbs tagged with this index's
	// instance id (newest first), listed once when first needed: a file
	// the manifest does not know may have been written by a run that
	// failed before recording it.
	existing map[string][]fileRef
	me       string // the agent the target writes as, once asked
}

// begin marks the index as rebuilding and reads what the run before left.
func (r *run) begin() error {
	prev, _ := ReadStatus(r.state)
	r.status = envelope.IndexStatus{Repo: r.name, IndexState: envelope.IndexRebuilding, SchemaVersion: SchemaVersion}
	if prev != nil {
		r.status.LastIndexedAt, r.status.LastIndexedCommit = prev.LastIndexedAt, prev.LastIndexedCommit
	}
	if err := WriteStatus(r.state, r.status); err != nil {
		return fmt.Errorf("--repo: writing the index status: %w", err)
	}
	instance, err := instanceID(r.state)
	if err != nil {
		r.status.IndexState, r.status.LastError = envelope.IndexError, err.Error()
		WriteStatus(r.state, r.status)
		return fmt.Errorf("--repo: %w", err)
	}
	r.instance = instance
	desc := r.target.describe()
	man, _ := ReadManifest(r.state)
	if man == nil || man.Target != desc || man.Repo != r.name || man.Instance != "" && man.Instance != instance {
		man = &Manifest{Files: map[string]ManifestEntry{}}
	}
	r.last = man
	r.next = Manifest{Target: desc, Repo: r.name, Instance: instance, Files: map[string]ManifestEntry{}}
	r.done = Manifest{Target: desc, Repo: r.name, Instance: instance, Files: maps.Clone(man.Files)}
	return nil
}

// fail records err in the status and saves what is known in the manifest.
func (r *run) fail(err error) (envelope.IndexStatus, Stats, error) {
	if werr := WriteManifest(r.state, r.done); werr != nil {
		err = fmt.Errorf("%w (and saving the manifest: %v)", err, werr)
	}
	r.status.IndexState, r.status.LastError = envelope.IndexError, err.Error()
	WriteStatus(r.state, r.status)
	return r.status, r.stats, err
}

// record notes that p's breadcrumb is e.
func (r *run) record(p string, e ManifestEntry) error {
	r.next.Files[p], r.done.Files[p] = e, e
	if r.writes++; r.writes%manifestSaveEvery == 0 {
		return WriteManifest(r.state, r.done)
	}
	return nil
}

// file indexes the file p: skipped when it is not a regular text file,
// unchanged when the last manifest has it with its size and modification
// time or its content hash, else written to the target.
func (r *run) file(p string) error {
	info, err := r.root.Lstat(p)
	if err != nil || !info.Mode().IsRegular() {
		r.stats.Skipped++
		return nil
	}
	old, known := r.last.Files[p]
	if known && old.Size == info.Size() && old.ModTime == info.ModTime().UnixNano() {
		r.next.Files[p] = old
		r.stats.Unchanged++
		r.stats.Files++
		return nil
	}
	fc, text, err := readFileContext(r.root, p, r.maxBytes)
	if err != nil {
		r.stats.Skipped++
		return nil
	}
	if !text {
		r.stats.Binary++
		return nil
	}
	entry := ManifestEntry{SHA256: fc.SHA256, Size: info.Size(), ModTime: info.ModTime().UnixNano()}
	if known && old.SHA256 == fc.SHA256 {
		entry.ID, entry.Version = old.ID, old.Version
		if err := r.record(p, entry); err != nil {
			return err
		}
		r.stats.Unchanged++
		r.stats.Files++
		return nil
	}
	fc.Index = r.instance
	if entry.ID, entry.Version, err = r.write(p, fc, old, known); err != nil {
		return err
	}
	if err := r.record(p, entry); err != nil {
		return err
	}
	r.stats.Files++
	return nil
}

// write stores fc as p's breadcrumb: an update of old's when the manifest
// knew it (or an earlier run wrote it without recording it), else, or when
// that breadcrumb is gone, a create.
func (r *run) write(p string, fc FileContext, old ManifestEntry, known bool) (id string, version int64, err error) {
	ctxJSON, err := json.Marshal(fc)
	if err != nil {
		return "", 0, err
	}
	b := store.Breadcrumb{Title: p, Description: fc.Language + " file of " + r.name, SchemaName: FileSchema,
		Tags: []string{RepoTag(r.name), indexTag(r.instance)}, Context: ctxJSON}
	if !known {
		// Written by a run that failed before recording it?
		ref, found, err := r.adoptable(p)
		if err != nil {
			return "", 0, fmt.Errorf("listing the files indexed before: %w", err)
		}
		if found {
			old, known = ManifestEntry{ID: ref.ID, Version: ref.Version}, true
		}
	}
	if known {
		id = old.ID
		version, err = r.update(p, old, b)
		if err == nil {
			r.stats.Updated++
		}
	}
	if !known || isNotFound(err) {
		id, version, err = r.target.create(r.ctx, b, idempotencyKey(r.instance, p, fc.SHA256))
		if err == nil {
			r.stats.Created++
		}
	}
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", p, err)
	}
	return id, version, nil
}

// update updates old's breadcrumb to b. When the breadcrumb changed since
// it was recorded (a run whose reply was lost), it updates the current
// version, once.
func (r *run) update(p string, old ManifestEntry, b store.Breadcrumb) (int64, error) {
	version, err := r.target.update(r.ctx, old.ID, old.Version, b)
	if !isVersionMismatch(err) {
		return version, err
	}
	if lerr := r.list(true); lerr == nil {
		for _, ref := range r.existing[p] {
			if ref.ID == old.ID {
				return r.target.update(r.ctx, old.ID, ref.Version, b)
			}
		}
	}
	return version, err
}

// list lists the breadcrumbs tagged with this index's instance id, unless
// they were listed already and refresh is false.
func (r *run) list(refresh bool) error {
	if r.existing != nil && !refresh {
		return nil
	}
	refs, err := r.target.files(r.ctx, indexTag(r.instance))
	if err != nil {
		return err
	}
	r.existing = make(map[string][]fileRef, len(refs))
	for _, ref := range refs {
		r.existing[ref.Path] = append(r.existing[ref.Path], ref)
	}
	return nil
}

// adoptable finds the breadcrumb an earlier run of this index wrote for p:
// one this agent created whose context names this instance and p.
// Anything else tagged alike (another agent can copy a tag) is left alone.
func (r *run) adoptable(p string) (fileRef, bool, error) {
	if err := r.list(false); err != nil {
		return fileRef{}, false, err
	}
	for _, ref := range r.existing[p] {
		if r.me == "" {
			var err error
			if r.me, err = r.target.agent(); err != nil {
				return fileRef{}, false, err
			}
		}
		by, fc, err := r.target.record(r.ctx, ref.ID)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return fileRef{}, false, err
		}
		if by == r.me && fc.Index == r.instance && fc.Path == p {
			return ref, true, nil
		}
	}
	return fileRef{}, false, nil
}

// removeGone removes the breadcrumbs of the files the last manifest has and
// this run did not find, in path order; a target that refuses (the writer
// is no curator) keeps them, and they are counted as kept.
func (r *run) removeGone() error {
	gone := make([]string, 0)
	for p := range r.last.Files {
		if _, ok := r.next.Files[p]; !ok {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		err := r.target.delete(r.ctx, r.last.Files[p].ID)
		switch {
		case err == nil || isNotFound(err):
			delete(r.done.Files, p)
			r.stats.Removed++
		case isForbidden(err):
			r.stats.Kept++
		default:
			return fmt.Errorf("%s: removing: %w", p, err)
		}
	}
	return nil
}
