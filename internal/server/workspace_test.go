package server_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/internal/server"
)

const headA = "1111111111111111111111111111111111111111"

// repoFixture writes a repository with files, a detached HEAD at headA and
// (when indexedAt is not zero) an index status of that commit.
func repoFixture(t *testing.T, name string, files map[string]string, indexedAt time.Time) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * time.Hour)
		os.Chtimes(full, old, old)
	}
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte(headA+"\n"), 0o644)
	if !indexedAt.IsZero() {
		root, _ := os.OpenRoot(dir)
		defer root.Close()
		if err := envelope.WriteStatus(root, envelope.IndexStatus{Repo: name, IndexState: envelope.IndexFresh, LastIndexedAt: indexedAt,
			LastIndexedCommit: headA, SchemaVersion: envelope.SchemaVersion}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func (e *env) indexFiles(tok, repo string, files map[string]string) {
	e.t.Helper()
	for p, c := range files {
		e.create(tok, map[string]any{"title": p, "schema_name": server.FileSchema, "tags": []string{server.RepoTag(repo)},
			"context": server.FileContext{Path: p, Size: int64(len(c)), SHA256: "x", Content: c}})
	}
}

func (e *env) workspaceSearch(tok, repo, q string) (reply, searchReply) {
	e.t.Helper()
	r := e.do("GET", "/workspace/search?repo="+url.QueryEscape(repo)+"&q="+url.QueryEscape(q), tok, nil)
	var sr searchReply
	if r.status == 200 {
		if err := json.Unmarshal(r.body, &sr); err != nil {
			e.t.Fatal(err)
		}
	}
	return r, sr
}

func TestWorkspaceSearch(t *testing.T) {
	files := map[string]string{
		"main.go":       "package main\n\nfunc main() {\n\tserveHTTP()\n}\n",
		"docs/guide.md": "# Guide\nCall serveHTTP to start.\n",
		"other.txt":     "nothing here\n",
	}
	indexedAt := time.Now().Add(-time.Hour)
	dir := repoFixture(t, "shop", files, indexedAt)
	plain := repoFixture(t, "plain", map[string]string{"a.txt": "servehttp in plain\n"}, time.Time{})
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir, plain} })
	tok := e.token("acme", "a", server.RoleEmitter)
	e.indexFiles(tok, "shop", files)

	// Fresh index: answered from the store.
	r, sr := e.workspaceSearch(tok, "shop", "servehttp")
	if r.status != 200 || sr.Meta.Status != "OK" || sr.Meta.Source != "RAG_GRAPH" || sr.Meta.FreshnessState != "FRESH" || len(sr.Items) != 2 {
		t.Fatalf("fresh: %d %s", r.status, r.body)
	}
	if !strings.Contains(string(sr.Meta.IndexStatus), `"repo":"shop"`) || len(sr.Items[0].Lines) == 0 {
		t.Fatalf("fresh: %s", r.body)
	}

	// A file changed after indexing is read from disk: FALLBACK/STALE.
	os.WriteFile(filepath.Join(dir, "docs/guide.md"), []byte("# Guide\nrewritten: call serveHTTP now\n"), 0o644)
	r, sr = e.workspaceSearch(tok, "shop", "servehttp")
	if sr.Meta.Status != "FALLBACK" || sr.Meta.Source != "LOCAL_FALLBACK" || sr.Meta.FreshnessState != "STALE" || !strings.Contains(sr.Meta.Message, "docs/guide.md") {
		t.Fatalf("changed file: %s", r.body)
	}
	if !strings.Contains(string(r.body), "rewritten") {
		t.Fatalf("changed file not read from disk: %s", r.body)
	}
	// A deleted file drops out, and says so.
	os.Remove(filepath.Join(dir, "docs/guide.md"))
	r, sr = e.workspaceSearch(tok, "shop", "servehttp")
	if sr.Meta.Status != "FALLBACK" || len(sr.Items) != 1 || !strings.Contains(sr.Meta.Message, "gone") {
		t.Fatalf("deleted file: %s", r.body)
	}

	// Another owner cannot use this owner's index: the tree is scanned.
	other := e.token("evil", "m", server.RoleEmitter)
	r, sr = e.workspaceSearch(other, "shop", "servehttp")
	if sr.Meta.Status != "FALLBACK" || sr.Meta.FreshnessState != "UNKNOWN" || len(sr.Items) != 1 || sr.Items[0].Path != "main.go" {
		t.Fatalf("other owner: %s", r.body)
	}

	// HEAD moved: STALE, scanned on disk.
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte(strings.Repeat("2", 40)), 0o644)
	r, sr = e.workspaceSearch(tok, "shop", "servehttp main")
	if sr.Meta.Status != "FALLBACK" || sr.Meta.FreshnessState != "STALE" || len(sr.Items) != 1 || sr.Items[0].Path != "main.go" || sr.Items[0].Lines[0].Line != 1 {
		t.Fatalf("head moved: %s", r.body)
	}
	// No index at all: UNKNOWN.
	r, sr = e.workspaceSearch(tok, "plain", "servehttp")
	if sr.Meta.Status != "FALLBACK" || sr.Meta.FreshnessState != "UNKNOWN" || string(sr.Meta.IndexStatus) != "null" || len(sr.Items) != 1 {
		t.Fatalf("no index: %s", r.body)
	}

	// Bad input.
	r, _ = e.workspaceSearch(tok, "nope", "x")
	want(t, r, 404, "unknown_repo")
	for _, repo := range []string{"../shop", "/etc", "..", ""} {
		r, _ = e.workspaceSearch(tok, repo, "x")
		want(t, r, 400, "repo")
	}
	r, _ = e.workspaceSearch(tok, "shop", "")
	want(t, r, 400, `"invalid"`)
	want(t, e.do("GET", "/workspace/search?repo=shop&q=x", "", nil), 401, "unauthorized")
}

// TestWorkspaceSearchStaysInside: a symlink out of the workspace is not
// followed.
func TestWorkspaceSearchStaysInside(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("topsecret outside\n"), 0o644)
	dir := repoFixture(t, "ws", map[string]string{"in.txt": "topsecret inside\n"}, time.Time{})
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt"))
	os.Symlink(outside, filepath.Join(dir, "linkdir"))
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir} })
	tok := e.token("acme", "a", server.RoleEmitter)
	r, sr := e.workspaceSearch(tok, "ws", "topsecret")
	if len(sr.Items) != 1 || sr.Items[0].Path != "in.txt" || strings.Contains(string(r.body), "outside") {
		t.Fatalf("%s", r.body)
	}
	r, _ = e.workspaceSearch(e.token("acme", "a", server.RoleEmitter), "ws", strings.Repeat("x ", 600))
	want(t, r, 400, "invalid")
}
