package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/store"
)

// Workspace search limits.
const (
	workspaceMaxFileBytes = 1 << 20   // larger files are not scanned on disk
	workspaceMaxFiles     = 50_000    // files a disk scan looks at
	workspaceMaxScanBytes = 256 << 20 // bytes a disk scan reads
	workspaceMaxLines     = 3         // matching lines per file
)

// FileSchema is the schema of the breadcrumbs ctxkit index writes: one per
// tracked text file of a repository, tagged RepoTag(name).
const FileSchema = "file.v1"

// RepoTag is the tag of a repository's file breadcrumbs.
func RepoTag(name string) string { return "repo:" + name }

// FileContext is the context of a file.v1 breadcrumb.
type FileContext struct {
	Path      string `json:"path"`
	Language  string `json:"language,omitempty"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

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
		if st, err := envelope.ReadStatus(root); err == nil && st.Repo != "" {
			return st.Repo
		}
	}
	return filepath.Base(filepath.Clean(dir))
}

func (s *Server) workspaceSearch(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	limit := store.DefaultSearchLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxSearchLimit {
			return errorf(http.StatusBadRequest, store.CodeInvalid, "limit: must be an integer from 1 to %d", store.MaxSearchLimit)
		}
		limit = n
	}
	res, err := s.runWorkspaceSearch(r.Context(), p, q.Get("repo"), q.Get("q"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// runWorkspaceSearch answers from the index when envelope.Route says it is
// fresh (re-reading any file changed since), else by scanning the working
// tree.
func (s *Server) runWorkspaceSearch(ctx context.Context, p Principal, repo, text string, limit int) (envelope.Result[WorkspaceHit], error) {
	var none envelope.Result[WorkspaceHit]
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
	d := envelope.RouteIn(root)
	if d.UseIndex {
		// The index is the caller's only if the caller's owner wrote it.
		page, err := s.opts.Store.List(ctx, actor(p), store.Query{Tags: []string{RepoTag(repo)}, SchemaName: FileSchema, Limit: 1})
		if err != nil {
			return none, err
		}
		if len(page.Items) > 0 {
			return s.fromIndex(ctx, p, root, repo, e, text, limit, d.Status)
		}
		d.Freshness, d.Reason = envelope.Unknown, "the index holds no files this caller may read"
	}
	hits, err := scanTree(ctx, root, e, limit)
	if err != nil {
		return none, err
	}
	return envelope.Fallback(hits, envelope.WithFreshness(d.Freshness), envelope.WithIndexStatus(d.Status),
		envelope.WithMessage("index not used ("+d.Reason+"): scanned the working tree")), nil
}

func (s *Server) fromIndex(ctx context.Context, p Principal, root *os.Root, repo string, e *store.SearchExpr, text string, limit int, st *envelope.IndexStatus) (envelope.Result[WorkspaceHit], error) {
	hits, err := s.opts.Store.Search(ctx, actor(p), store.SearchQuery{Text: text, Tags: []string{RepoTag(repo)}, SchemaName: FileSchema, Limit: limit})
	if err != nil {
		return envelope.Result[WorkspaceHit]{}, err
	}
	var (
		items   []WorkspaceHit
		changed []string
	)
	for _, h := range hits {
		var fc FileContext
		if err := json.Unmarshal(h.Context, &fc); err != nil || fc.Path == "" {
			continue
		}
		stale, err := envelope.CheckFile(root, fc.Path, st.LastIndexedAt)
		if err != nil {
			changed = append(changed, fc.Path+" (gone)")
			continue
		}
		content := fc.Content
		if stale {
			changed = append(changed, fc.Path)
			data, err := readLimited(root, fc.Path, workspaceMaxFileBytes)
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
	if len(changed) > 0 {
		sort.Strings(changed)
		return envelope.Fallback(items, envelope.WithIndexStatus(st),
			envelope.WithMessage("changed since indexing, read from disk: "+strings.Join(changed, ", "))), nil
	}
	return envelope.OK(items, envelope.WithIndexStatus(st)), nil
}

// scanTree searches the files under root on disk: text files up to
// workspaceMaxFileBytes, outside .git and .ctxkit, ranked by how often the
// query's terms occur.
func scanTree(ctx context.Context, root *os.Root, e *store.SearchExpr, limit int) ([]WorkspaceHit, error) {
	var (
		hits  []WorkspaceHit
		files int
		read  int64
	)
	err := fs.WalkDir(root.FS(), ".", func(name string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable entry is skipped
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if de.IsDir() {
			if base := path.Base(name); name != "." && (base == ".git" || base == ".ctxkit") {
				return fs.SkipDir
			}
			return nil
		}
		if !de.Type().IsRegular() {
			return nil
		}
		if files++; files > workspaceMaxFiles || read > workspaceMaxScanBytes {
			return fs.SkipAll
		}
		data, err := readLimited(root, name, workspaceMaxFileBytes)
		if err != nil || len(data) == workspaceMaxFileBytes+1 || !isText(data) {
			return nil
		}
		read += int64(len(data))
		if ok, score := e.Match(store.Words(string(data))); ok {
			hits = append(hits, WorkspaceHit{Path: name, Score: float64(score), Lines: matchingLines(string(data), e)})
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	return hits, nil
}

// readLimited reads up to max+1 bytes of name under root, so a caller can
// tell a file longer than max.
func readLimited(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("a directory")
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// isText reports whether data looks like text: valid UTF-8 without NUL.
func isText(data []byte) bool {
	return utf8.Valid(data) && !strings.ContainsRune(string(data[:min(len(data), 8192)]), 0)
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
