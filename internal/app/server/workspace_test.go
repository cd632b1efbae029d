package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/gitfilestest"
	"github.com/ctxkit/ctxkit/workspace"
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
		if err := workspace.WriteStatus(root, envelope.IndexStatus{Repo: name, IndexState: envelope.IndexFresh, LastIndexedAt: indexedAt,
			LastIndexedCommit: headA, SchemaVersion: workspace.SchemaVersion}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func sum(c string) string {
	h := sha256.Sum256([]byte(c))
	return hex.EncodeToString(h[:])
}

// indexFiles stores files as file.v1 breadcrumbs of repo, as ctxkit index
// does, and (when dir is not empty) writes dir's manifest naming them.
func (e *env) indexFiles(tok, repo, dir string, files map[string]string) map[string]string {
	e.t.Helper()
	ids := map[string]string{}
	man := workspace.Manifest{Repo: repo, Files: map[string]workspace.ManifestEntry{}}
	for p, c := range files {
		ids[p] = e.create(tok, map[string]any{"title": p, "schema_name": workspace.FileSchema, "tags": []string{workspace.RepoTag(repo)},
			"context": workspace.FileContext{Path: p, Size: int64(len(c)), SHA256: sum(c), Content: c}})
		man.Files[p] = workspace.ManifestEntry{ID: ids[p], Version: 1, SHA256: sum(c), Size: int64(len(c))}
	}
	if dir != "" {
		writeManifest(e.t, dir, man)
	}
	return ids
}

func writeManifest(t testing.TB, dir string, man workspace.Manifest) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := workspace.WriteManifest(root, man); err != nil {
		t.Fatal(err)
	}
}

// manifestOf writes dir's manifest listing paths (no breadcrumbs): what a
// disk scan of a directory that is not a git repository reads.
func manifestOf(t testing.TB, dir string, paths ...string) {
	t.Helper()
	man := workspace.Manifest{Files: map[string]workspace.ManifestEntry{}}
	for _, p := range paths {
		man.Files[p] = workspace.ManifestEntry{ID: "none"}
	}
	writeManifest(t, dir, man)
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
	manifestOf(t, plain, "a.txt")
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir, plain} })
	tok := e.token("acme", "a", server.RoleEmitter)
	e.indexFiles(tok, "shop", dir, files)

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
	manifestOf(t, dir, "in.txt", "link.txt", "linkdir/secret.txt")
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir} })
	tok := e.token("acme", "a", server.RoleEmitter)
	r, sr := e.workspaceSearch(tok, "ws", "topsecret")
	if len(sr.Items) != 1 || sr.Items[0].Path != "in.txt" || strings.Contains(string(r.body), "outside") {
		t.Fatalf("%s", r.body)
	}
	r, _ = e.workspaceSearch(e.token("acme", "a", server.RoleEmitter), "ws", strings.Repeat("x ", 600))
	want(t, r, 400, "invalid")
}

// TestWorkspaceIndexHitsAreVerified: the index answers only with the
// breadcrumbs this workspace's manifest names, for the same path and
// content; what any emitter can write is never a path to read.
func TestWorkspaceIndexHitsAreVerified(t *testing.T) {
	files := map[string]string{"main.go": "package main // servehttp\n", "doc.md": "servehttp guide\n"}
	dir := repoFixture(t, "shop", files, time.Now().Add(-time.Hour))
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core] servehttp secretconfig\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".ctxkit", "ctxkit.db"), []byte("servehttp secretdb\x00\x01"), 0o644)
	os.WriteFile(filepath.Join(dir, "blob.bin"), []byte("servehttp secretbinary\x00"), 0o644)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("servehttp secretenv\n"), 0o644)
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{".git/config", ".ctxkit/ctxkit.db", "blob.bin", ".env"} {
		os.Chtimes(filepath.Join(dir, p), old, old)
	}
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir} })
	tok := e.token("acme", "a", server.RoleEmitter)
	ids := e.indexFiles(tok, "shop", dir, files)
	// Another emitter of the owner writes file breadcrumbs of its own...
	for _, p := range []string{".git/config", ".ctxkit/ctxkit.db", "blob.bin", ".env", "../outside"} {
		e.create(tok, map[string]any{"title": p, "schema_name": workspace.FileSchema, "tags": []string{workspace.RepoTag("shop")},
			"context": workspace.FileContext{Path: p, SHA256: "x", Content: "servehttp"}})
	}
	// ... and repoints an indexed one at another path.
	want(t, e.do("PATCH", "/breadcrumbs/"+ids["doc.md"], tok, map[string]any{"context": workspace.FileContext{Path: ".env", SHA256: sum(files["doc.md"]), Content: "servehttp"}}), 200, "")

	r, sr := e.workspaceSearch(tok, "shop", "servehttp")
	if r.status != 200 || sr.Meta.Status != "OK" || sr.Meta.FreshnessState != "FRESH" || len(sr.Items) != 1 || sr.Items[0].Path != "main.go" {
		t.Fatalf("verified hits: %s", r.body)
	}
	if strings.Contains(string(r.body), "secret") {
		t.Fatalf("read a file the manifest does not name: %s", r.body)
	}

	// A manifest file turned binary after indexing is not served.
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // servehttp\x00\n"), 0o644)
	r, sr = e.workspaceSearch(tok, "shop", "servehttp")
	if len(sr.Items) != 0 || strings.Contains(string(r.body), "\\u0000") {
		t.Fatalf("binary file served: %s", r.body)
	}

	// Another owner that indexed a different repository under the same name
	// does not get this workspace's index: its answer is not OK/FRESH.
	other := e.token("evil", "m", server.RoleEmitter)
	e.create(other, map[string]any{"title": "x.go", "schema_name": workspace.FileSchema, "tags": []string{workspace.RepoTag("shop")},
		"context": workspace.FileContext{Path: "x.go", SHA256: sum("servehttp"), Content: "servehttp"}})
	r, sr = e.workspaceSearch(other, "shop", "servehttp")
	if sr.Meta.Status == "OK" || sr.Meta.FreshnessState == "FRESH" || strings.Contains(string(r.body), "x.go") || strings.Contains(string(r.body), "secret") {
		t.Fatalf("other owner: %s", r.body)
	}
}

// gitRepo makes a real git repository with files committed.
func gitRepo(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := filepath.Join(t.TempDir(), name)
	os.MkdirAll(dir, 0o755)
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q")
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(c), 0o644)
	}
	run("add", "-A")
	run("commit", "-q", "-m", "init")
	return dir
}

// TestWorkspaceScanReadsTrackedFilesOnly: a disk scan reads the files git
// tracks (or the manifest lists), never untracked or ignored ones; with
// neither it answers an error rather than walk everything.
func TestWorkspaceScanReadsTrackedFilesOnly(t *testing.T) {
	dir := gitRepo(t, "tracked", map[string]string{"app.go": "needle in app\n", ".gitignore": "node_modules/\n*.key\n"})
	os.WriteFile(filepath.Join(dir, ".env"), []byte("needle secretenv\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "id.key"), []byte("needle secretkey\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "node_modules", "m"), 0o755)
	os.WriteFile(filepath.Join(dir, "node_modules", "m", "x.js"), []byte("needle secretmodule\n"), 0o644)

	listed := repoFixture(t, "listed", map[string]string{"a.txt": "needle listed\n", "b.txt": "needle secretunlisted\n"}, time.Time{})
	os.WriteFile(filepath.Join(listed, ".env"), []byte("needle secretdotenv\n"), 0o644)
	os.WriteFile(filepath.Join(listed, "tls.pem"), []byte("needle secretpem\n"), 0o644)
	os.WriteFile(filepath.Join(listed, "id_rsa"), []byte("needle secretrsa\n"), 0o644)
	manifestOf(t, listed, "a.txt", ".git/HEAD", "../escape", ".env", "tls.pem", "id_rsa")
	bare := repoFixture(t, "bare", map[string]string{"a.txt": "needle secretbare\n"}, time.Time{})

	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir, listed, bare} })
	tok := e.token("acme", "a", server.RoleSubscriber)
	r, sr := e.workspaceSearch(tok, "tracked", "needle")
	if sr.Meta.Status != "FALLBACK" || len(sr.Items) != 1 || sr.Items[0].Path != "app.go" || strings.Contains(string(r.body), "secret") {
		t.Fatalf("git repository: %s", r.body)
	}
	r, sr = e.workspaceSearch(tok, "listed", "needle")
	if sr.Meta.Status != "FALLBACK" || len(sr.Items) != 1 || sr.Items[0].Path != "a.txt" || strings.Contains(string(r.body), "secret") {
		t.Fatalf("manifest: %s", r.body)
	}
	r, sr = e.workspaceSearch(tok, "bare", "needle")
	if r.status != 200 || sr.Meta.Status != "ERROR" || sr.Meta.ErrorCode != "not_indexed" || len(sr.Items) != 0 || strings.Contains(string(r.body), "secret") {
		t.Fatalf("neither: %s", r.body)
	}
}

// TestWorkspaceScanRunsNoGitCommand: listing a workspace's tracked files
// never runs a command the workspace's own git config names (here a
// promisor remote's upload-pack, reached by a lazy fetch).
func TestWorkspaceScanRunsNoGitCommand(t *testing.T) {
	dir, marker := gitfilestest.PromisorRepo(t, "evil", nil)
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir} })
	tok := e.token("acme", "a", server.RoleSubscriber)
	r, sr := e.workspaceSearch(tok, "evil", "needle")
	if r.status != 200 {
		t.Fatalf("search: %s", r.body)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workspace search ran the repository's upload-pack command")
	}
	if len(sr.Items) != 1 || sr.Items[0].Path != "in/a.txt" {
		t.Fatalf("items: %s", r.body)
	}
}

// TestWorkspaceIndexBoundIsNotAuthoritative: when the index ranked only
// some of the matches and verified fewer hits than asked for, the answer
// is not OK: the tracked files are scanned on disk instead.
func TestWorkspaceIndexBoundIsNotAuthoritative(t *testing.T) {
	files := map[string]string{"a.txt": "needle a\n", "b.txt": "needle b\n", "c.txt": "needle c\n"}
	dir := repoFixture(t, "shop", files, time.Now().Add(-time.Hour))
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir}; o.SearchMaxRanked = 1 })
	tok := e.token("acme", "a", server.RoleEmitter)
	e.indexFiles(tok, "shop", dir, files)
	r, sr := e.workspaceSearch(tok, "shop", "needle")
	if sr.Meta.Status != "FALLBACK" || len(sr.Items) != 3 || !strings.Contains(sr.Meta.Message, "ranks at most") {
		t.Fatalf("bounded index: %s", r.body)
	}
	r = e.do("GET", "/workspace/search?repo=shop&q=needle&limit=1", tok, nil)
	if !strings.Contains(string(r.body), `"status":"OK"`) {
		t.Fatalf("bounded index with enough hits: %s", r.body)
	}
}

// TestWorkspaceIndexVerifyBudget: verifying index hits reads at most the
// per-request byte budget; hits past it are reported as not verified and
// the answer is not OK.
func TestWorkspaceIndexVerifyBudget(t *testing.T) {
	files := map[string]string{"a.txt": "needle a " + strings.Repeat("x", 100) + "\n", "b.txt": "needle b " + strings.Repeat("y", 100) + "\n"}
	dir := repoFixture(t, "shop", files, time.Now().Add(-time.Hour))
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir}; o.WorkspaceVerifyBytes = 150 })
	tok := e.token("acme", "a", server.RoleEmitter)
	e.indexFiles(tok, "shop", dir, files)
	r, sr := e.workspaceSearch(tok, "shop", "needle")
	if sr.Meta.Status != "FALLBACK" || len(sr.Items) != 1 || !strings.Contains(sr.Meta.Message, "not verified") {
		t.Fatalf("budget: %s", r.body)
	}
}

// TestWorkspaceUncommittedChangesAreStale: an index of the commit HEAD
// names is FRESH only while every tracked file is what it indexed. A word
// added to a tracked file without committing, a file staged but not
// committed, and a tracked file deleted each make the answer
// FALLBACK/STALE, with those files read from disk; undoing them makes it
// FRESH again. A binary file git tracks but the indexer skipped does not.
func TestWorkspaceUncommittedChangesAreStale(t *testing.T) {
	files := map[string]string{"main.go": "package main // servehttp\n", "docs/guide.md": "# Guide\nservehttp here\n", "notes.txt": "plain\n"}
	dir := gitRepo(t, "shop", files)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.WriteFile(filepath.Join(dir, "logo.png"), []byte("\x89PNG\x00\x01 servehttp"), 0o644)
	git("add", "logo.png")
	git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "logo")
	head := git("rev-parse", "HEAD")
	// Indexed a while ago, of the files as committed.
	old := time.Now().Add(-2 * time.Hour)
	for p := range files {
		os.Chtimes(filepath.Join(dir, p), old, old)
	}
	e := newEnv(t, func(o *server.Options) { o.Workspaces = []string{dir} })
	tok := e.token("acme", "a", server.RoleEmitter)
	e.indexFiles(tok, "shop", dir, files)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := workspace.WriteStatus(root, envelope.IndexStatus{Repo: "shop", IndexState: envelope.IndexFresh, LastIndexedAt: time.Now().Add(-time.Hour),
		LastIndexedCommit: head, SchemaVersion: workspace.SchemaVersion}); err != nil {
		t.Fatal(err)
	}
	fresh := func(step string) {
		t.Helper()
		r, sr := e.workspaceSearch(tok, "shop", "servehttp")
		if sr.Meta.Status != "OK" || sr.Meta.FreshnessState != "FRESH" || len(sr.Items) != 2 {
			t.Fatalf("%s: want OK/FRESH with 2 hits: %s", step, r.body)
		}
	}
	stale := func(step, q, path, mention string) {
		t.Helper()
		r, sr := e.workspaceSearch(tok, "shop", q)
		if sr.Meta.Status != "FALLBACK" || sr.Meta.FreshnessState != "STALE" || !strings.Contains(sr.Meta.Message, mention) {
			t.Fatalf("%s: want FALLBACK/STALE naming %q: %s", step, mention, r.body)
		}
		found := false
		for _, it := range sr.Items {
			found = found || it.Path == path
		}
		if path != "" && !found {
			t.Fatalf("%s: %s not found on disk: %s", step, path, r.body)
		}
	}
	fresh("committed")

	// A word added to a tracked file, not committed (same size is not
	// needed: the mtime moved).
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("plain uncommittedword\n"), 0o644)
	stale("modified", "uncommittedword", "notes.txt", "notes.txt")
	// The same size and an old mtime, but other content: still caught.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("plaiN\n"), 0o644)
	os.Chtimes(filepath.Join(dir, "notes.txt"), old, old)
	_, sr := e.workspaceSearch(tok, "shop", "servehttp")
	if sr.Meta.FreshnessState != "STALE" || !strings.Contains(sr.Meta.Message, "notes.txt") {
		t.Fatalf("same size, old mtime: %+v", sr.Meta)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(files["notes.txt"]), 0o644)
	fresh("restored")

	// A new file, staged but not committed.
	os.WriteFile(filepath.Join(dir, "staged.go"), []byte("package main // stagedword servehttp\n"), 0o644)
	git("add", "staged.go")
	stale("staged", "stagedword", "staged.go", "staged.go (new)")
	git("rm", "-q", "--cached", "staged.go")
	os.Remove(filepath.Join(dir, "staged.go"))
	fresh("unstaged")

	// A tracked file deleted (from disk, and from git's index).
	os.Remove(filepath.Join(dir, "docs/guide.md"))
	stale("deleted", "servehttp", "main.go", "docs/guide.md (gone)")
	git("rm", "-q", "docs/guide.md")
	stale("deleted and staged", "servehttp", "main.go", "docs/guide.md (gone)")
}
