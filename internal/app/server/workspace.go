package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/internal/gitfiles"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/workspace"
)

// Workspace search.
//
// A workspace is a directory the operator shares with every agent of the
// server (ctxkit serve --workspace DIR): any valid token, of any owner, may
// search it. So only its tracked text files are ever read: the files git
// ls-files lists when it is a git repository, else those its index manifest
// (written by ctxkit index) lists; never a path with a .git or .ctxkit
// component, a symlink or another non-regular file, or a file that is not
// valid UTF-8 or holds a NUL byte. An index hit is trusted only when the
// workspace's manifest names the same breadcrumb for the same path with
// the same content hash, and the file on disk still has that hash.

// Workspace search limits.
const (
	workspaceMaxFileBytes   = 1 << 20   // larger files are not scanned on disk
	workspaceMaxVerifyBytes = 16 << 20  // larger files are not hashed to check an index hit
	workspaceMaxFiles       = 50_000    // files a disk scan looks at
	workspaceMaxScanBytes   = 256 << 20 // bytes a disk scan reads
	workspaceMaxListBytes   = 64 << 20  // output of git ls-files
	workspaceMaxLines       = 3         // matching lines per file
	workspaceGitTimeout     = 5 * time.Second
	workspaceVerifyBudget   = 64 << 20 // bytes one search reads to verify index hits (default)

	// CodeNotIndexed: a workspace is neither a git repository nor indexed,
	// so there is no list of tracked files to scan.
	CodeNotIndexed = "not_indexed"
)

// WorkspaceHit is one file found by a workspace search.
type WorkspaceHit struct {
	Path     string     `json:"path"`
	Language string     `json:"language,omitempty"`
	Score    float64    `json:"score"`
	Lines    []FileLine `json:"lines"`
	ID       string     `json:"id,omitempty"` // the file's breadcrumb, when the index answered
}

// FileLine is a line of a file that matches a query.
type FileLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// workspace finds the configured directory named name.
func (s *Server) workspace(name string) (string, error) {
	if name == "" {
		return "", errorf(http.StatusBadRequest, store.CodeInvalid, "repo: required, the name of a workspace")
	}
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." || !utf8.ValidString(name) {
		return "", errorf(http.StatusBadRequest, store.CodeInvalid, "repo: %q is a path; give the name of a workspace the server was started with", name)
	}
	var names []string
	for _, dir := range s.opts.Workspaces {
		n := workspaceName(dir)
		if n == name {
			return dir, nil
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return "", errorf(http.StatusNotFound, "unknown_repo", "repo: this server reads no workspaces (start it with --workspace DIR)")
	}
	return "", errorf(http.StatusNotFound, "unknown_repo", "repo: no workspace named %q; this server reads %s", name, strings.Join(names, ", "))
}

// workspaceName is the name of the repository at dir: the one its index
// status records, else the directory's base name.
func workspaceName(dir string) string {
	if root, err := os.OpenRoot(dir); err == nil {
		defer root.Close()
		if st, err := workspace.ReadStatus(root); err == nil && st.Repo != "" {
			return st.Repo
		}
	}
	return filepath.Base(filepath.Clean(dir))
}

// workspaceSearcher serves GET /workspace/search: it bounds the disk scans
// running at once and caches the workspaces' manifests.
type workspaceSearcher struct {
	s       *Server
	scans   chan struct{} // a token per search reading files (a disk scan or verifying index hits)
	timeout time.Duration
	budget  int64 // bytes a search reads to verify index hits

	mu        sync.Mutex
	manifests map[string]cachedManifest // by workspace directory
	tracked   map[string]cachedList     // git's list of tracked files, by workspace directory
	texts     map[textKey]bool          // whether tracked files not indexed are text
}

type cachedManifest struct {
	size, mtime int64
	man         *workspace.Manifest
}

func newWorkspaceSearcher(s *Server) *workspaceSearcher {
	n, timeout := s.opts.MaxWorkspaceScans, s.opts.WorkspaceScanTimeout
	if n <= 0 {
		n = 2
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	budget := s.opts.WorkspaceVerifyBytes
	if budget <= 0 {
		budget = workspaceVerifyBudget
	}
	return &workspaceSearcher{s: s, scans: make(chan struct{}, n), timeout: timeout, budget: budget, manifests: map[string]cachedManifest{},
		tracked: map[string]cachedList{}, texts: map[textKey]bool{}}
}

// search is GET /workspace/search?repo=NAME&q=QUERY[&limit=N]. Any valid
// token may search any workspace (a workspace is shared with every agent
// of the server); the index answers only with breadcrumbs of the caller's
// owner that the workspace's own manifest names.
func (ws *workspaceSearcher) search(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	limit := store.DefaultSearchLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxSearchLimit {
			return errorf(http.StatusBadRequest, store.CodeInvalid, "limit: must be an integer from 1 to %d", store.MaxSearchLimit)
		}
		limit = n
	}
	res, err := ws.run(r.Context(), p, q.Get("repo"), q.Get("q"), limit)
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) && ae.Code == CodeBusy {
			w.Header().Set("Retry-After", "1")
		}
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// run answers from the index when workspace.Route says it is fresh and the
// index is the caller's (re-reading any file changed since), else by
// scanning the tracked files on disk.
func (ws *workspaceSearcher) run(ctx context.Context, p Principal, repo, text string, limit int) (envelope.Result[WorkspaceHit], error) {
	var none envelope.Result[WorkspaceHit]
	s := ws.s
	dir, err := s.workspace(repo)
	if err != nil {
		return none, err
	}
	e, err := store.ParseSearch(text)
	if err != nil {
		return none, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return envelope.Error[WorkspaceHit]("workspace_unreadable", fmt.Sprintf("repo %s: %v", repo, err)), nil
	}
	defer root.Close()
	d := workspace.RouteIn(root)
	man, manErr := ws.manifest(root, dir)
	// Answering from the index reads files too (to verify its hits): both
	// ways share the bound on searches at once and the time limit.
	select {
	case ws.scans <- struct{}{}:
		defer func() { <-ws.scans }()
	default:
		return none, errorf(http.StatusServiceUnavailable, "busy", "the server is scanning other workspaces; retry shortly")
	}
	sctx, cancel := context.WithTimeout(ctx, ws.timeout)
	defer cancel()
	if d.UseIndex {
		switch {
		case manErr != nil:
			d.Freshness, d.Reason = envelope.Unknown, manErr.Error()
		case !ws.ownsIndex(ctx, p, repo, man):
			d.Freshness, d.Reason = envelope.Unknown, "the index of this workspace holds no files this caller may read"
		default:
			tracked := ws.trackedList(sctx, root, dir)
			drift, budget := ws.drift(sctx, root, dir, man, tracked, d.Status.LastIndexedAt, ws.budget)
			res, notAuthoritative, err := ws.fromIndex(ctx, sctx, p, root, repo, e, text, limit, d.Status, man, drift, budget)
			if err != nil || notAuthoritative == "" {
				return res, err
			}
			d.Reason = notAuthoritative
		}
	}
	files, how, err := trackedFiles(ctx, dir, man)
	if err != nil {
		return envelope.Error[WorkspaceHit](CodeNotIndexed, fmt.Sprintf("repo %s: %v", repo, err),
			envelope.WithIndexStatus(d.Status)), nil
	}
	hits, partial := scanFiles(sctx, root, files, e, limit)
	if err := ctx.Err(); err != nil {
		return none, err
	}
	msg := "index not used (" + d.Reason + "): scanned the files " + how
	if partial != "" {
		msg += "; " + partial
	}
	return envelope.Fallback(hits, envelope.WithFreshness(d.Freshness), envelope.WithIndexStatus(d.Status),
		envelope.WithMessage(msg)), nil
}

// manifest reads the workspace's index manifest, cached while the file's
// size and modification time stay.
func (ws *workspaceSearcher) manifest(root *os.Root, dir string) (*workspace.Manifest, error) {
	st, err := root.Stat(workspace.ManifestFile)
	if err != nil {
		return workspace.ReadManifest(root) // its error says what is wrong
	}
	ws.mu.Lock()
	c, ok := ws.manifests[dir]
	ws.mu.Unlock()
	if ok && c.size == st.Size() && c.mtime == st.ModTime().UnixNano() {
		return c.man, nil
	}
	man, err := workspace.ReadManifest(root)
	if err != nil {
		return nil, err
	}
	ws.mu.Lock()
	ws.manifests[dir] = cachedManifest{size: st.Size(), mtime: st.ModTime().UnixNano(), man: man}
	ws.mu.Unlock()
	return man, nil
}

// ownsIndex reports whether the workspace's index is the caller's: a file
// breadcrumb its manifest names belongs to the caller's owner and repo.
func (ws *workspaceSearcher) ownsIndex(ctx context.Context, p Principal, repo string, man *workspace.Manifest) bool {
	paths := make([]string, 0, len(man.Files))
	for path := range man.Files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths[:min(3, len(paths))] {
		b, err := ws.s.opts.Store.Get(ctx, actor(p), man.Files[path].ID)
		if err == nil && b.OwnerID == p.OwnerID && b.SchemaName == workspace.FileSchema && slices.Contains(b.Tags, workspace.RepoTag(repo)) {
			return true
		}
	}
	return false
}

// fromIndex answers from the index. A hit counts only when the manifest
// names its breadcrumb for its path with its content hash, and the file on
// disk still has that hash (else the file is re-read from disk, as a
// changed one). When the index ranked only some of the matches and fewer
// hits than limit were verified, the index's answer may miss files: then
// notAuthoritative says why and the caller scans the disk instead.
//
// Verifying reads files: it stops when rctx ends or the searcher's byte
// budget is spent, and the hits left are reported as not verified.
func (ws *workspaceSearcher) fromIndex(ctx, rctx context.Context, p Principal, root *os.Root, repo string, e *store.SearchExpr, text string, limit int,
	st *envelope.IndexStatus, man *workspace.Manifest, drift []drifted, budget int64) (res envelope.Result[WorkspaceHit], notAuthoritative string, err error) {
	sq := store.SearchQuery{Text: text, Tags: []string{workspace.RepoTag(repo)}, SchemaName: workspace.FileSchema, Limit: min(store.MaxSearchLimit, 2*limit),
		MaxRanked: ws.s.opts.SearchMaxRanked}
	found, err := ws.s.opts.Store.Search(ctx, actor(p), sq)
	if err != nil {
		return res, "", err
	}
	hits := found.Hits
	var (
		items     []WorkspaceHit
		changed   []string
		untrusted int
	)
	dirs := map[string]bool{}
	unverified, why := 0, ""
	drifts := make(map[string]bool, len(drift))
	for _, d := range drift {
		drifts[d.path] = true
	}
	for _, h := range hits {
		if len(items) == limit {
			break
		}
		var fc workspace.FileContext
		if err := json.Unmarshal(h.Context, &fc); err != nil {
			untrusted++
			continue
		}
		if drifts[fc.Path] {
			continue // read from disk below
		}
		entry, ok := man.Files[fc.Path]
		if !ok || entry.ID != h.ID || entry.SHA256 == "" || entry.SHA256 != fc.SHA256 || !trackedPath(fc.Path) {
			untrusted++
			continue
		}
		switch {
		case rctx.Err() != nil:
			unverified, why = unverified+1, "out of time"
			continue
		case entry.Size > budget:
			unverified, why = unverified+1, fmt.Sprintf("past the %d bytes a search reads to verify them", ws.budget)
			continue
		}
		stale, err := workspace.CheckFile(root, fc.Path, st.LastIndexedAt)
		if err != nil {
			changed = append(changed, fc.Path+" (gone)")
			continue
		}
		content := fc.Content
		budget -= entry.Size
		if stale || !sameAsIndexed(root, fc, entry, dirs) {
			changed = append(changed, fc.Path)
			data, err := readTracked(root, fc.Path, dirs)
			budget -= int64(len(data))
			if err != nil {
				continue
			}
			content = string(data)
			if ok, _ := e.Match(store.Words(content)); !ok {
				continue
			}
		}
		items = append(items, WorkspaceHit{Path: fc.Path, Language: fc.Language, Score: h.Score, ID: h.ID, Lines: matchingLines(content, e)})
	}
	if found.Bounded && len(items) < limit {
		return res, rankBoundNote(sq) + ", and fewer files than asked for were verified", nil
	}
	var notes []string
	if found.Bounded {
		notes = append(notes, rankBoundNote(sq))
	}
	if untrusted > 0 {
		notes = append(notes, fmt.Sprintf("ignored %d index hits that this workspace's manifest does not name", untrusted))
	}
	if len(drift) > 0 {
		// The files that differ from the index are searched on disk; their
		// hits come first (an agent's uncommitted work is what it is most
		// likely looking for, and the two rankings are not on one scale).
		var onDisk []string
		for _, d := range drift {
			if d.why != "gone" {
				onDisk = append(onDisk, d.path)
			}
		}
		found, partial := scanFiles(rctx, root, onDisk, e, limit)
		items = append(found, items...)[:min(limit, len(found)+len(items))]
		notes = append(notes, driftNote(drift))
		if partial != "" {
			notes = append(notes, partial)
		}
	}
	if unverified > 0 {
		notes = append(notes, fmt.Sprintf("%d index hits not verified against the files on disk (%s), so left out: results are partial", unverified, why))
	}
	if len(changed) > 0 {
		sort.Strings(changed)
		notes = append(notes, "changed since indexing, read from disk: "+strings.Join(changed, ", "))
	}
	if unverified > 0 || len(changed) > 0 || len(drift) > 0 {
		return envelope.Fallback(items, envelope.WithIndexStatus(st), envelope.WithMessage(strings.Join(notes, "; "))), "", nil
	}
	opts := []envelope.Option{envelope.WithIndexStatus(st)}
	if len(notes) > 0 {
		opts = append(opts, envelope.WithMessage(strings.Join(notes, "; ")))
	}
	return envelope.OK(items, opts...), "", nil
}

// sameAsIndexed reports whether the file at fc.Path is still what was
// indexed: a tracked regular file of the manifest's size and hash whose
// beginning is the indexed content.
func sameAsIndexed(root *os.Root, fc workspace.FileContext, entry workspace.ManifestEntry, dirs map[string]bool) bool {
	f, info, err := openTracked(root, fc.Path, dirs)
	if err != nil {
		return false
	}
	defer f.Close()
	if info.Size() != entry.Size || info.Size() > workspaceMaxVerifyBytes || int64(len(fc.Content)) > info.Size() {
		return false
	}
	h := sha256.New()
	head := make([]byte, len(fc.Content))
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	h.Write(head)
	if _, err := io.Copy(h, io.LimitReader(f, workspaceMaxVerifyBytes)); err != nil {
		return false
	}
	return string(head) == fc.Content && hex.EncodeToString(h.Sum(nil)) == entry.SHA256
}

// trackedFiles lists the files a disk scan may read: git ls-files when dir
// is a git repository, else the paths of its manifest. With neither, an
// error says what to do. how says which list it is.
func trackedFiles(ctx context.Context, dir string, man *workspace.Manifest) (files []string, how string, err error) {
	if files, err := gitFiles(ctx, dir); err == nil {
		return files, "git tracks", nil
	}
	if man != nil {
		files := make([]string, 0, len(man.Files))
		for p := range man.Files {
			if !workspace.Withheld(p) { // as a walk of the tree would
				files = append(files, p)
			}
		}
		sort.Strings(files)
		return files, "the index manifest lists", nil
	}
	return nil, "", errors.New("not a git repository and not indexed, so no list of tracked files to search: run ctxkit index --repo DIR, or make it a git repository")
}

// gitFiles lists the files git tracks in dir, hardened so that the
// workspace's own git config runs nothing (see package gitfiles).
func gitFiles(ctx context.Context, dir string) ([]string, error) {
	return gitfiles.List(ctx, dir, gitfiles.Options{Timeout: workspaceGitTimeout, MaxBytes: workspaceMaxListBytes})
}

// scanFiles searches files under root on disk, ranked by how often the
// query's terms occur. When it stops early (out of time, or past the file
// or byte budget) partial says so.
func scanFiles(ctx context.Context, root *os.Root, files []string, e *store.SearchExpr, limit int) (hits []WorkspaceHit, partial string) {
	var read int64
	dirs := map[string]bool{}
	for i, name := range files {
		if ctx.Err() != nil {
			partial = fmt.Sprintf("the scan ran out of time after %d of %d files: results are partial", i, len(files))
			break
		}
		if i == workspaceMaxFiles || read > workspaceMaxScanBytes {
			partial = fmt.Sprintf("the scan stopped after %d of %d files (%d bytes): results are partial", i, len(files), read)
			break
		}
		data, err := readTracked(root, name, dirs)
		if err != nil {
			continue
		}
		read += int64(len(data))
		if ok, score := e.Match(store.Words(string(data))); ok {
			hits = append(hits, WorkspaceHit{Path: name, Score: float64(score), Lines: matchingLines(string(data), e)})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Path < hits[j].Path
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, partial
}

// trackedPath reports whether name may be read at all: a clean relative
// path without a backslash or a colon, with no .git or .ctxkit component (compared case-insensitively, for
// file systems that are).
func trackedPath(name string) bool {
	if !fs.ValidPath(name) || name == "." || strings.ContainsAny(name, `\:`) {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if strings.EqualFold(part, ".git") || strings.EqualFold(part, ".ctxkit") {
			return false
		}
	}
	return true
}

// openTracked opens name under root for reading when trackedPath allows it,
// every directory on the way is a real directory (not a symlink) and the
// file is a regular file (not a symlink). dirs caches directories checked.
func openTracked(root *os.Root, name string, dirs map[string]bool) (*os.File, fs.FileInfo, error) {
	if !trackedPath(name) {
		return nil, nil, fmt.Errorf("%s: not a path a workspace search reads", name)
	}
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		dir := name[:i]
		ok, seen := dirs[dir]
		if !seen {
			st, err := root.Lstat(dir)
			ok = err == nil && st.IsDir()
			dirs[dir] = ok
		}
		if !ok {
			return nil, nil, fmt.Errorf("%s: %s is not a directory", name, dir)
		}
	}
	lst, err := root.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if !lst.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: not a regular file", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !os.SameFile(st, lst) {
		f.Close()
		return nil, nil, fmt.Errorf("%s: changed while opened", name)
	}
	return f, st, nil
}

// readTracked reads a file openTracked allows, when it is text (valid
// UTF-8 without NUL) of at most workspaceMaxFileBytes.
func readTracked(root *os.Root, name string, dirs map[string]bool) ([]byte, error) {
	f, st, err := openTracked(root, name, dirs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > workspaceMaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, workspaceMaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, workspaceMaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > workspaceMaxFileBytes || !isText(data) {
		return nil, fmt.Errorf("%s: not a text file", name)
	}
	return data, nil
}

// isText reports whether data is text: valid UTF-8 without NUL.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// matchingLines returns the first lines holding a word of one of e's terms.
func matchingLines(content string, e *store.SearchExpr) []FileLine {
	want := map[string]bool{}
	var prefixes []string
	for _, g := range e.All {
		for _, t := range g {
			for i, w := range t.Words {
				if t.Prefix && i == len(t.Words)-1 {
					prefixes = append(prefixes, w)
				} else {
					want[w] = true
				}
			}
		}
	}
	out := []FileLine{}
	for i, line := range strings.Split(content, "\n") {
		for _, w := range store.Words(line) {
			hit := want[w]
			for _, p := range prefixes {
				hit = hit || strings.HasPrefix(w, p)
			}
			if hit {
				if len(line) > 300 {
					line = strings.ToValidUTF8(line[:300], "")
				}
				out = append(out, FileLine{Line: i + 1, Text: line})
				break
			}
		}
		if len(out) == workspaceMaxLines {
			break
		}
	}
	return out
}
