package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/gitfilestest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

func openTestStore(t *testing.T) store.Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestIndexRunsNoGitCommand: ctxkit index lists a repository's files
// without running a command the repository's own git config names.
func TestIndexRunsNoGitCommand(t *testing.T) {
	dir, marker := gitfilestest.PromisorRepo(t, "app", nil)
	db := openTestStore(t)
	target := &storeTarget{db: db, desc: "test", actor: store.Actor{OwnerID: "o", AgentID: "ctxkit-index", Curator: true}}
	_, stats, err := Index(context.Background(), target, Options{Repo: dir, MaxBytes: 1 << 10, Now: time.Now})
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("ctxkit index ran the repository's upload-pack command")
	}
	if err != nil {
		t.Fatal(err)
	}
	if stats.Created != 1 {
		t.Fatalf("stats: %+v", stats)
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fileCrumbs lists the file breadcrumbs of the owner: by id.
func fileCrumbs(t *testing.T, db store.Store) map[string]store.Breadcrumb {
	t.Helper()
	page, err := db.List(context.Background(), store.Actor{OwnerID: "o", AgentID: "x", Curator: true}, store.Query{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Breadcrumb{}
	for _, b := range page.Items {
		out[b.ID] = b
	}
	return out
}

// TestIndexSameNameReposStayApart: two repositories of the same name
// indexed into one store keep their own breadcrumbs.
func TestIndexSameNameReposStayApart(t *testing.T) {
	db := openTestStore(t)
	target := &storeTarget{db: db, desc: "test", actor: store.Actor{OwnerID: "o", AgentID: "ctxkit-index", Curator: true}}
	one, two := filepath.Join(t.TempDir(), "app"), filepath.Join(t.TempDir(), "app")
	writeTree(t, one, map[string]string{"main.go": "package one\n"})
	writeTree(t, two, map[string]string{"main.go": "package two\n"})
	for _, dir := range []string{one, two, one, two} {
		if _, _, err := Index(context.Background(), target, Options{Repo: dir, MaxBytes: 1 << 10, Now: time.Now}); err != nil {
			t.Fatal(err)
		}
	}
	crumbs := fileCrumbs(t, db)
	if len(crumbs) != 2 {
		t.Fatalf("%d breadcrumbs, want 2", len(crumbs))
	}
	for i, dir := range []string{one, two} {
		root, _ := os.OpenRoot(dir)
		man, err := ReadManifest(root)
		root.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, ok := crumbs[man.Files["main.go"].ID]
		if want := []string{"package one", "package two"}[i]; !ok || !strings.Contains(string(b.Context), want) || b.Version != 1 {
			t.Errorf("%s: breadcrumb %+v, want %q at version 1", dir, b, want)
		}
	}
}

// TestIndexAdoptsOnlyItsOwnBreadcrumbs: a file.v1 breadcrumb another agent
// plants for a path (even with the index's instance id) is not adopted.
func TestIndexAdoptsOnlyItsOwnBreadcrumbs(t *testing.T) {
	ctx := context.Background()
	db := openTestStore(t)
	target := &storeTarget{db: db, desc: "test", actor: store.Actor{OwnerID: "o", AgentID: "ctxkit-index", Curator: true}}
	dir := filepath.Join(t.TempDir(), "app")
	writeTree(t, dir, map[string]string{"a.go": "package a\n"})
	if _, _, err := Index(ctx, target, Options{Repo: dir, MaxBytes: 1 << 10, Now: time.Now}); err != nil {
		t.Fatal(err)
	}
	var instance string
	for _, b := range fileCrumbs(t, db) {
		var fc FileContext
		json.Unmarshal(b.Context, &fc)
		instance = fc.Index
	}
	if instance == "" {
		t.Fatal("no instance id in the file breadcrumbs' context")
	}
	spy := store.Actor{OwnerID: "o", AgentID: "spy"}
	planted, _, err := db.Create(ctx, spy, store.Breadcrumb{Title: "main.go", SchemaName: FileSchema,
		Tags: []string{RepoTag("app"), indexTag(instance)}, LLMHints: json.RawMessage(`{"include":["path"]}`),
		Context: json.RawMessage(`{"path":"main.go","index":"` + instance + `","sha256":"x","size":1,"content":"x"}`)}, store.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"main.go": "package main\n"})
	if _, _, err := Index(ctx, target, Options{Repo: dir, MaxBytes: 1 << 10, Now: time.Now}); err != nil {
		t.Fatal(err)
	}
	root, _ := os.OpenRoot(dir)
	man, _ := ReadManifest(root)
	root.Close()
	if man.Files["main.go"].ID == planted.ID {
		t.Fatal("the planted breadcrumb was adopted")
	}
	b, err := db.Get(ctx, spy, planted.ID)
	if err != nil || b.Version != 1 {
		t.Fatalf("the planted breadcrumb was changed: %v %+v", err, b)
	}
}

// TestIndexCreateIsIdempotent: a create retried with the same key returns
// the first breadcrumb; once that is removed, a retry makes a new one.
func TestIndexCreateIsIdempotent(t *testing.T) {
	ctx := context.Background()
	db := openTestStore(t)
	target := &storeTarget{db: db, desc: "test", actor: store.Actor{OwnerID: "o", AgentID: "ctxkit-index", Curator: true}}
	b := store.Breadcrumb{Title: "a.go", SchemaName: FileSchema, Context: json.RawMessage(`{"path":"a.go"}`)}
	key := idempotencyKey("0123456789abcdef0123456789abcdef", "a.go", "sum")
	id1, _, err := target.create(ctx, b, key)
	if err != nil {
		t.Fatal(err)
	}
	id2, _, err := target.create(ctx, b, key)
	if err != nil || id2 != id1 {
		t.Fatalf("retry: %v %s, want %s", err, id2, id1)
	}
	if err := target.delete(ctx, id1); err != nil {
		t.Fatal(err)
	}
	id3, _, err := target.create(ctx, b, key)
	if err != nil || id3 == id1 || id3 == "" {
		t.Fatalf("after delete: %v %s", err, id3)
	}
	if len(fileCrumbs(t, db)) != 1 {
		t.Fatal("duplicates")
	}
}

// TestIndexWalkSkipsSecrets: a directory that is not a git repository is
// walked, leaving out dot-files, dot-directories and files that usually
// hold secrets, and its manifest says it came from a walk.
func TestIndexWalkSkipsSecrets(t *testing.T) {
	db := openTestStore(t)
	target := &storeTarget{db: db, desc: "test", actor: store.Actor{OwnerID: "o", AgentID: "ctxkit-index", Curator: true}}
	dir := filepath.Join(t.TempDir(), "app")
	writeTree(t, dir, map[string]string{"main.go": "package main\n", ".env": "TOKEN=x\n", ".env.local": "x\n", "sub/.npmrc": "x\n",
		"server.key": "x\n", "certs/tls.pem": "x\n", "id_rsa": "x\n", "id_ed25519.pub": "x\n", "a.p12": "x\n", ".netrc": "x\n",
		".pypirc": "x\n", ".config/tool.txt": "x\n", "sub/ok.txt": "ok\n"})
	if _, _, err := Index(context.Background(), target, Options{Repo: dir, MaxBytes: 1 << 10, Now: time.Now}); err != nil {
		t.Fatal(err)
	}
	root, _ := os.OpenRoot(dir)
	man, err := ReadManifest(root)
	root.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range man.Files {
		got = append(got, p)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"main.go", "sub/ok.txt"}) || man.Source != SourceWalk {
		t.Fatalf("manifest files %q, source %q", got, man.Source)
	}
}

// TestIndexFailsWhenGitFails: a directory with a .git that git cannot list
// is an error, never a walk of everything.
func TestIndexFailsWhenGitFails(t *testing.T) {
	db := openTestStore(t)
	target := &storeTarget{db: db, desc: "test", actor: store.Actor{OwnerID: "o", AgentID: "ctxkit-index", Curator: true}}
	dir := filepath.Join(t.TempDir(), "app")
	writeTree(t, dir, map[string]string{"main.go": "package main\n", ".git/HEAD": "garbage\n", "secret.txt": "x\n"})
	_, _, err := Index(context.Background(), target, Options{Repo: dir, MaxBytes: 1 << 10, Now: time.Now})
	if err == nil || !strings.Contains(err.Error(), "git") {
		t.Fatalf("err = %v", err)
	}
	if n := len(fileCrumbs(t, db)); n != 0 {
		t.Fatalf("%d breadcrumbs written", n)
	}
}

// TestIndexStateOutsideTree: with Options.State the tree is only read,
// the state is kept under State, and a second run finds it there.
func TestIndexStateOutsideTree(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	for _, f := range []string{"a.go", "b.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("package a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := openTestStore(t)
	target := &storeTarget{db: db, desc: "test", actor: store.Actor{OwnerID: "o", AgentID: "ctxkit-index", Curator: true}}
	var calls [][2]int
	o := Options{Repo: dir, State: state, Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }}
	if _, stats, err := Index(context.Background(), target, o); err != nil || stats.Created != 2 {
		t.Fatalf("first run: %+v, %v", stats, err)
	}
	if want := [][2]int{{1, 2}, {2, 2}}; !slices.Equal(calls, want) {
		t.Errorf("progress %v, want %v", calls, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ".ctxkit")); !os.IsNotExist(err) {
		t.Errorf("the tree got a .ctxkit: %v", err)
	}
	for _, f := range []string{StatusFile, ManifestFile, InstanceFile} {
		if _, err := os.Stat(filepath.Join(state, f)); err != nil {
			t.Errorf("state: %v", err)
		}
	}
	o.Progress = nil
	if _, stats, err := Index(context.Background(), target, o); err != nil || stats.Unchanged != 2 || stats.Created != 0 {
		t.Fatalf("second run: %+v, %v", stats, err)
	}
	o.State = filepath.Join(state, "missing")
	if _, _, err := Index(context.Background(), target, o); err == nil || !strings.HasPrefix(err.Error(), "--state: ") {
		t.Errorf("missing state dir: %v", err)
	}
}
