package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/gitfiles"
	"github.com/ctxkit/ctxkit/store"
)

func init() {
	register(&command{
		name:    "index",
		summary: "index a repository's text files as breadcrumbs for workspace search",
		usage: `Usage: ctxkit index --repo DIR [--name NAME] [--server URL --token T] [--data DIR | --db URL] [--owner O] [--max-bytes N]

Stores each tracked text file of the repository at DIR (git ls-files; every
file under DIR when it is not a git repository) as a breadcrumb of schema
file.v1 tagged repo:NAME, whose context holds the path, language, size,
sha256 and content (cut at --max-bytes). Binary files are skipped and
counted. A second run writes only the files that changed and removes the
breadcrumbs of files that are gone (which needs the curator role).

It writes DIR/.ctxkit/index.json, the index status that workspace search
reads to decide whether the index is fresh (its commit is HEAD's), and
DIR/.ctxkit/manifest.json, what the next run compares against; the
directory ignores itself in git.

Flags:
  --repo DIR        the repository (required)
  --name NAME       the repository's name (default: DIR's base name)
  --server URL      a ctxkit server to write to, with --token (env CTXKIT_SERVER)
  --token T         bearer token with the emitter role (env CTXKIT_TOKEN)
  --data DIR        without --server: the local data directory (default ./.ctxkit)
  --db URL          without --server: the database, as for 'ctxkit serve'
  --owner O         without --server: the owner to write as (default "default")
  --max-bytes N     content kept per file (default 65536)
`,
		run: runIndex,
	})
}

// manifestSaveEvery is how many writes a run makes between saving the
// manifest, so even a run that is killed leaves most of its work recorded.
const manifestSaveEvery = 100

// indexTarget is where file breadcrumbs go: a server or a local store.
type indexTarget interface {
	// create creates b; a retry with the same key returns the breadcrumb
	// the first made, when it still exists.
	create(ctx context.Context, b store.Breadcrumb, key string) (id string, version int64, err error)
	update(ctx context.Context, id string, version int64, b store.Breadcrumb) (int64, error)
	delete(ctx context.Context, id string) error
	// files lists the file breadcrumbs tagged tag, newest first: what an
	// earlier run wrote, whether or not the manifest recorded it (and
	// whatever else carries the tag).
	files(ctx context.Context, tag string) ([]fileRef, error)
	// record returns a breadcrumb's creator and file context.
	record(ctx context.Context, id string) (createdBy string, fc server.FileContext, err error)
	// agent is the agent the target writes as.
	agent() (string, error)
	describe() string
}

// fileRef is a file breadcrumb a target holds: its title is the path.
type fileRef struct {
	ID      string
	Path    string
	Version int64
}

// indexTag is the tag of the file breadcrumbs of the index instance id.
func indexTag(instance string) string { return "index:" + instance }

// idempotencyKey is the key of the create of path's breadcrumb with the
// content hashed sum by index instance: a create retried after its reply
// was lost returns the breadcrumb it made.
func idempotencyKey(instance, path, sum string) string {
	h := sha256.Sum256([]byte(path + "\x00" + sum))
	return "ctxkit-index:" + instance + ":" + hex.EncodeToString(h[:16])
}

// IndexOptions configure one indexing run.
type indexOptions struct {
	repo     string
	name     string
	maxBytes int64
	now      func() time.Time
}

// indexStats counts what a run did.
type indexStats struct {
	files, created, updated, unchanged, removed, binary, skipped, kept int
}

func runIndex(ctx context.Context, e *env, args []string) error {
	fs := newFlags("index")
	repo := fs.String("repo", "", "")
	name := fs.String("name", "", "")
	serverURL := fs.String("server", os.Getenv("CTXKIT_SERVER"), "")
	token := fs.String("token", os.Getenv("CTXKIT_TOKEN"), "")
	data := fs.String("data", envOr("CTXKIT_DATA", ".ctxkit"), "")
	dbURL := fs.String("db", os.Getenv("CTXKIT_DB"), "")
	owner := fs.String("owner", "default", "")
	maxBytes := fs.Int64("max-bytes", 64<<10, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *repo == "" {
		return usagef("--repo is required")
	}
	if *maxBytes <= 0 || *maxBytes > store.MaxContextBytes/2 {
		return usagef("--max-bytes must be between 1 and %d", store.MaxContextBytes/2)
	}
	if *serverURL != "" && *token == "" {
		return usagef("--server needs --token (or CTXKIT_TOKEN)")
	}
	if *name != "" && (strings.ContainsAny(*name, "/\\ \t\n") || *name == "." || *name == "..") {
		return fmt.Errorf("--name: %q must be one word without slashes", *name)
	}
	var target indexTarget
	if *serverURL != "" {
		target = &httpTarget{base: strings.TrimRight(*serverURL, "/"), token: *token, client: &http.Client{Timeout: time.Minute}}
	} else {
		if err := os.MkdirAll(*data, 0o700); err != nil {
			return fmt.Errorf("--data: %w", err)
		}
		db, desc, err := openStore(ctx, *dbURL, *data, newLogger(e))
		if err != nil {
			return err
		}
		defer db.Close()
		target = &storeTarget{db: db, desc: desc, actor: store.Actor{OwnerID: *owner, AgentID: "ctxkit-index", Curator: true}}
	}
	st, stats, err := indexRepo(ctx, target, indexOptions{repo: *repo, name: *name, maxBytes: *maxBytes, now: time.Now})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "indexed %s at %s: %d files (%d new, %d changed, %d unchanged, %d removed); skipped %d binary, %d other\n",
		st.Repo, shortCommit(st.LastIndexedCommit), stats.files, stats.created, stats.updated, stats.unchanged, stats.removed, stats.binary, stats.skipped)
	if stats.kept > 0 {
		fmt.Fprintf(e.stderr, "ctxkit index: kept %d breadcrumbs of deleted files: removing them needs the curator role\n", stats.kept)
	}
	return nil
}

func shortCommit(c string) string {
	if c == "" {
		return "no commit"
	}
	return c[:min(12, len(c))]
}

// indexRepo indexes the repository and writes its status and manifest.
func indexRepo(ctx context.Context, target indexTarget, o indexOptions) (envelope.IndexStatus, indexStats, error) {
	var stats indexStats
	abs, err := filepath.Abs(o.repo)
	if err != nil {
		return envelope.IndexStatus{}, stats, fmt.Errorf("--repo: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return envelope.IndexStatus{}, stats, fmt.Errorf("--repo: %v", err)
	}
	defer root.Close()
	name := o.name
	if name == "" {
		name = filepath.Base(abs)
	}
	started := o.now().UTC()
	head, _ := envelope.Head(root)
	prev, _ := envelope.ReadStatus(root)
	st := envelope.IndexStatus{Repo: name, IndexState: envelope.IndexRebuilding, SchemaVersion: envelope.SchemaVersion}
	if prev != nil {
		st.LastIndexedAt, st.LastIndexedCommit = prev.LastIndexedAt, prev.LastIndexedCommit
	}
	if err := envelope.WriteStatus(root, st); err != nil {
		return st, stats, fmt.Errorf("--repo: writing the index status: %w", err)
	}
	instance, err := envelope.Instance(root)
	if err != nil {
		st.IndexState, st.LastError = envelope.IndexError, err.Error()
		envelope.WriteStatus(root, st)
		return st, stats, fmt.Errorf("--repo: %w", err)
	}
	man, _ := envelope.ReadManifest(root)
	if man == nil || man.Target != target.describe() || man.Repo != name || man.Instance != "" && man.Instance != instance {
		man = &envelope.Manifest{Files: map[string]envelope.ManifestEntry{}}
	}
	next := envelope.Manifest{Target: target.describe(), Repo: name, Instance: instance, Files: map[string]envelope.ManifestEntry{}}
	// done is what is known now: the last manifest with this run's writes
	// over it. It is saved every manifestSaveEvery writes and when the run
	// fails, so the next run neither repeats a create (a duplicate) nor
	// updates a version that is no longer current.
	done := envelope.Manifest{Target: next.Target, Repo: name, Instance: instance, Files: maps.Clone(man.Files)}
	writes := 0
	record := func(p string, e envelope.ManifestEntry) error {
		next.Files[p], done.Files[p] = e, e
		if writes++; writes%manifestSaveEvery == 0 {
			return envelope.WriteManifest(root, done)
		}
		return nil
	}
	fail := func(err error) (envelope.IndexStatus, indexStats, error) {
		if werr := envelope.WriteManifest(root, done); werr != nil {
			err = fmt.Errorf("%w (and saving the manifest: %v)", err, werr)
		}
		st.IndexState, st.LastError = envelope.IndexError, err.Error()
		envelope.WriteStatus(root, st)
		return st, stats, err
	}

	tag := server.RepoTag(name)
	// existing maps each path to the breadcrumbs tagged with this index's
	// instance id (newest first), listed once when first needed: a file
	// the manifest does not know may have been written by a run that
	// failed before recording it.
	var existing map[string][]fileRef
	list := func(refresh bool) error {
		if existing != nil && !refresh {
			return nil
		}
		refs, err := target.files(ctx, indexTag(instance))
		if err != nil {
			return err
		}
		existing = make(map[string][]fileRef, len(refs))
		for _, r := range refs {
			existing[r.Path] = append(existing[r.Path], r)
		}
		return nil
	}
	// adoptable finds the breadcrumb an earlier run of this index wrote
	// for p: one this agent created whose context names this instance and
	// p. Anything else tagged alike (another agent can copy a tag) is left
	// alone.
	var me string
	adoptable := func(p string) (fileRef, bool, error) {
		if err := list(false); err != nil {
			return fileRef{}, false, err
		}
		for _, r := range existing[p] {
			if me == "" {
				var err error
				if me, err = target.agent(); err != nil {
					return fileRef{}, false, err
				}
			}
			by, fc, err := target.record(ctx, r.ID)
			if isNotFound(err) {
				continue
			}
			if err != nil {
				return fileRef{}, false, err
			}
			if by == me && fc.Index == instance && fc.Path == p {
				return r, true, nil
			}
		}
		return fileRef{}, false, nil
	}

	files, walked, err := trackedFiles(ctx, abs)
	if err != nil {
		return fail(err)
	}
	if walked {
		next.Source, done.Source = envelope.SourceWalk, envelope.SourceWalk
	}
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		info, err := root.Lstat(p)
		if err != nil || !info.Mode().IsRegular() {
			stats.skipped++
			continue
		}
		old, known := man.Files[p]
		if known && old.Size == info.Size() && old.ModTime == info.ModTime().UnixNano() {
			next.Files[p] = old
			stats.unchanged++
			stats.files++
			continue
		}
		fc, text, err := readFileContext(root, p, o.maxBytes)
		if err != nil {
			stats.skipped++
			continue
		}
		if !text {
			stats.binary++
			continue
		}
		entry := envelope.ManifestEntry{SHA256: fc.SHA256, Size: info.Size(), ModTime: info.ModTime().UnixNano()}
		if known && old.SHA256 == fc.SHA256 {
			entry.ID, entry.Version = old.ID, old.Version
			if err := record(p, entry); err != nil {
				return fail(err)
			}
			stats.unchanged++
			stats.files++
			continue
		}
		fc.Index = instance
		ctxJSON, err := json.Marshal(fc)
		if err != nil {
			return fail(err)
		}
		b := store.Breadcrumb{Title: p, Description: fc.Language + " file of " + name, SchemaName: server.FileSchema,
			Tags: []string{tag, indexTag(instance)}, Context: ctxJSON}
		if !known {
			// Written by a run that failed before recording it?
			r, found, err := adoptable(p)
			if err != nil {
				return fail(fmt.Errorf("listing the files indexed before: %w", err))
			}
			if found {
				old, known = envelope.ManifestEntry{ID: r.ID, Version: r.Version}, true
			}
		}
		if known {
			entry.ID = old.ID
			entry.Version, err = target.update(ctx, old.ID, old.Version, b)
			if isVersionMismatch(err) {
				// Changed since recorded (a run whose reply was lost):
				// update the current version, once.
				if lerr := list(true); lerr == nil {
					for _, r := range existing[p] {
						if r.ID == old.ID {
							entry.Version, err = target.update(ctx, old.ID, r.Version, b)
							break
						}
					}
				}
			}
			if err == nil {
				stats.updated++
			}
		}
		if !known || isNotFound(err) {
			entry.ID, entry.Version, err = target.create(ctx, b, idempotencyKey(instance, p, fc.SHA256))
			if err == nil {
				stats.created++
			}
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", p, err))
		}
		if err := record(p, entry); err != nil {
			return fail(err)
		}
		stats.files++
	}
	gone := make([]string, 0)
	for p := range man.Files {
		if _, ok := next.Files[p]; !ok {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		err := target.delete(ctx, man.Files[p].ID)
		switch {
		case err == nil || isNotFound(err):
			delete(done.Files, p)
			stats.removed++
		case isForbidden(err):
			stats.kept++
		default:
			return fail(fmt.Errorf("%s: removing: %w", p, err))
		}
	}
	if err := envelope.WriteManifest(root, next); err != nil {
		return fail(err)
	}
	st = envelope.IndexStatus{Repo: name, IndexState: envelope.IndexFresh, LastIndexedAt: started,
		LastIndexedCommit: head, SchemaVersion: envelope.SchemaVersion}
	if err := envelope.WriteStatus(root, st); err != nil {
		return st, stats, err
	}
	return st, stats, nil
}

// trackedFiles lists the repository's files: git ls-files when dir has
// a .git, else a walk of the tree (walked true) that leaves out what
// envelope.Withheld names. A .git that git cannot list is an error: a
// walk would take in ignored files (.env and the like).
func trackedFiles(ctx context.Context, dir string) (files []string, walked bool, err error) {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil || !errors.Is(err, fs.ErrNotExist) {
		listed, err := gitfiles.List(ctx, dir, gitfiles.Options{})
		if err != nil {
			return nil, false, fmt.Errorf("--repo has a .git but git cannot list its files (%w); fix the repository, or index a directory without .git", err)
		}
		for _, f := range listed {
			if !strings.HasPrefix(f, ".ctxkit/") {
				files = append(files, f)
			}
		}
		return files, false, nil
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if envelope.Withheld(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, rel)
		}
		return nil
	})
	return files, true, err
}

// readFileContext reads a file: its sha256 over all of it, its content cut
// at max bytes (on a character boundary), and whether it is text.
func readFileContext(root *os.Root, p string, max int64) (server.FileContext, bool, error) {
	f, err := root.Open(p)
	if err != nil {
		return server.FileContext{}, false, err
	}
	defer f.Close()
	h := sha256.New()
	var head bytes.Buffer
	n, err := io.Copy(h, io.TeeReader(f, &limitWriter{w: &head, n: max + 4}))
	if err != nil {
		return server.FileContext{}, false, err
	}
	data := head.Bytes()
	if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return server.FileContext{}, false, nil
	}
	truncated := int64(len(data)) > max
	if truncated {
		cut := int(max)
		for cut > 0 && !utf8.RuneStart(data[cut]) {
			cut--
		}
		data = data[:cut]
	}
	if !utf8.Valid(data) {
		return server.FileContext{}, false, nil
	}
	return server.FileContext{Path: p, Language: language(p), Size: n, SHA256: hex.EncodeToString(h.Sum(nil)),
		Content: string(data), Truncated: truncated}, true, nil
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w *bytes.Buffer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - int64(l.w.Len()); room > 0 {
		l.w.Write(p[:min(int64(len(p)), room)])
	}
	return len(p), nil
}

var languages = map[string]string{
	".go": "go", ".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "typescript",
	".jsx": "javascript", ".java": "java", ".kt": "kotlin", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
	".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift", ".scala": "scala", ".sh": "shell",
	".bash": "shell", ".sql": "sql", ".md": "markdown", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
	".html": "html", ".css": "css", ".proto": "protobuf", ".txt": "text", ".txtar": "txtar", ".xml": "xml",
}

func language(p string) string {
	if base := path.Base(p); base == "Makefile" || base == "Dockerfile" {
		return strings.ToLower(base)
	}
	return languages[strings.ToLower(path.Ext(p))]
}

// storeTarget writes to a store directly.
type storeTarget struct {
	db    store.Store
	desc  string
	actor store.Actor
}

func (t *storeTarget) describe() string { return "store:" + t.desc + "#" + t.actor.OwnerID }

func (t *storeTarget) create(ctx context.Context, b store.Breadcrumb, key string) (string, int64, error) {
	data, err := json.Marshal(b)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(data)
	idem := store.Idempotency{Key: key, RequestHash: hex.EncodeToString(sum[:])}
	out, replayed, err := t.db.Create(ctx, t.actor, b, idem)
	if err == nil && replayed {
		// The first create's breadcrumb may have been removed since.
		if _, gerr := t.db.Get(ctx, t.actor, out.ID); isNotFound(gerr) {
			idem.Key = key + ":" + newNonce()
			out, _, err = t.db.Create(ctx, t.actor, b, idem)
		}
	}
	return out.ID, out.Version, err
}

func (t *storeTarget) record(ctx context.Context, id string) (string, server.FileContext, error) {
	var fc server.FileContext
	b, err := t.db.Get(ctx, t.actor, id)
	if err != nil {
		return "", fc, err
	}
	if b.SchemaName != server.FileSchema || json.Unmarshal(b.Context, &fc) != nil {
		return b.CreatedBy, server.FileContext{}, nil
	}
	return b.CreatedBy, fc, nil
}

func (t *storeTarget) agent() (string, error) { return t.actor.AgentID, nil }

// newNonce is a random word, to make a key unique.
func newNonce() string {
	var raw [8]byte
	rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}

func (t *storeTarget) update(ctx context.Context, id string, version int64, b store.Breadcrumb) (int64, error) {
	out, err := t.db.Update(ctx, t.actor, id, version, func(x *store.Breadcrumb) error {
		x.Title, x.Description, x.Context = b.Title, b.Description, b.Context
		return nil
	})
	return out.Version, err
}

func (t *storeTarget) delete(ctx context.Context, id string) error {
	return t.db.Delete(ctx, t.actor, id)
}

func (t *storeTarget) files(ctx context.Context, tag string) ([]fileRef, error) {
	var refs []fileRef
	q := store.Query{Tags: []string{tag}, SchemaName: server.FileSchema, Limit: store.MaxLimit}
	for {
		page, err := t.db.List(ctx, t.actor, q)
		if err != nil {
			return nil, err
		}
		for _, b := range page.Items {
			refs = append(refs, fileRef{ID: b.ID, Path: b.Title, Version: b.Version})
		}
		if page.NextCursor == "" {
			return refs, nil
		}
		q.Cursor = page.NextCursor
	}
}

// httpTarget writes through a ctxkit server's API.
type httpTarget struct {
	base, token string
	client      *http.Client
}

func (t *httpTarget) describe() string { return "server:" + t.base }

// apiError is an error reply of the server.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (%d %s)", e.msg, e.status, e.code) }

// isNotFound reports whether err says the breadcrumb does not exist, from
// a store or a server.
func isNotFound(err error) bool {
	var ae *apiError
	return store.IsCode(err, store.CodeNotFound) || errors.As(err, &ae) && ae.code == string(store.CodeNotFound)
}

// isVersionMismatch reports whether err says the breadcrumb is at another
// version, from a store or a server.
func isVersionMismatch(err error) bool {
	var ae *apiError
	return store.IsCode(err, store.CodeVersionMismatch) || errors.As(err, &ae) && ae.code == string(store.CodeVersionMismatch)
}

func isForbidden(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusForbidden
}

func (t *httpTarget) do(ctx context.Context, method, p string, body any, hdr map[string]string, out any) error {
	_, err := t.doHeader(ctx, method, p, body, hdr, out)
	return err
}

// doHeader is do that also returns the reply's header.
func (t *httpTarget) doHeader(ctx context.Context, method, p string, body any, hdr map[string]string, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+p, rd)
	if err != nil {
		return nil, fmt.Errorf("--server: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--server: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(data, &e)
		if e.Error.Message == "" {
			e.Error.Message = http.StatusText(resp.StatusCode)
		}
		return resp.Header, &apiError{status: resp.StatusCode, code: e.Error.Code, msg: e.Error.Message}
	}
	if out != nil {
		return resp.Header, json.Unmarshal(data, out)
	}
	return resp.Header, nil
}

func (t *httpTarget) create(ctx context.Context, b store.Breadcrumb, key string) (string, int64, error) {
	var out struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
	}
	body := map[string]any{"title": b.Title, "description": b.Description,
		"schema_name": b.SchemaName, "tags": b.Tags, "context": b.Context}
	hdr, err := t.doHeader(ctx, "POST", "/breadcrumbs", body, map[string]string{"Idempotency-Key": key}, &out)
	if err == nil && hdr.Get("Idempotent-Replayed") == "true" {
		// The first create's breadcrumb may have been removed since.
		if _, _, gerr := t.record(ctx, out.ID); isNotFound(gerr) {
			err = t.do(ctx, "POST", "/breadcrumbs", body, map[string]string{"Idempotency-Key": key + ":" + newNonce()}, &out)
		}
	}
	return out.ID, out.Version, err
}

func (t *httpTarget) record(ctx context.Context, id string) (string, server.FileContext, error) {
	var fc server.FileContext
	var b store.Breadcrumb
	if err := t.do(ctx, "GET", "/breadcrumbs/"+url.PathEscape(id)+"/full", nil, nil, &b); err != nil {
		return "", fc, err
	}
	if b.SchemaName != server.FileSchema || json.Unmarshal(b.Context, &fc) != nil {
		return b.CreatedBy, server.FileContext{}, nil
	}
	return b.CreatedBy, fc, nil
}

// agent is the subject of the target's token: the agent the server
// records as the creator of what it writes. The server checks the token;
// this only reads it.
func (t *httpTarget) agent() (string, error) {
	parts := strings.Split(t.token, ".")
	if len(parts) != 3 {
		return "", errors.New("--token: not a ctxkit token")
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("--token: %w", err)
	}
	var c struct {
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(data, &c); err != nil || c.Subject == "" {
		return "", errors.New("--token: names no agent")
	}
	return c.Subject, nil
}

func (t *httpTarget) update(ctx context.Context, id string, version int64, b store.Breadcrumb) (int64, error) {
	var out struct {
		Version int64 `json:"version"`
	}
	err := t.do(ctx, "PATCH", "/breadcrumbs/"+id, map[string]any{"title": b.Title, "description": b.Description, "context": b.Context},
		map[string]string{"If-Match": strconv.FormatInt(version, 10)}, &out)
	return out.Version, err
}

func (t *httpTarget) delete(ctx context.Context, id string) error {
	return t.do(ctx, "DELETE", "/breadcrumbs/"+id, nil, nil, nil)
}

func (t *httpTarget) files(ctx context.Context, tag string) ([]fileRef, error) {
	var refs []fileRef
	q := url.Values{"tag": {tag}, "schema_name": {server.FileSchema}, "limit": {strconv.Itoa(store.MaxLimit)}}
	for {
		var page struct {
			Items []struct {
				ID      string `json:"id"`
				Title   string `json:"title"`
				Version int64  `json:"version"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		if err := t.do(ctx, "GET", "/breadcrumbs?"+q.Encode(), nil, nil, &page); err != nil {
			return nil, err
		}
		for _, b := range page.Items {
			refs = append(refs, fileRef{ID: b.ID, Path: b.Title, Version: b.Version})
		}
		if page.NextCursor == "" {
			return refs, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}
