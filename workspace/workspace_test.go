package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/workspace"
)

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := workspace.ReadManifest(root); err == nil {
		t.Fatal("a missing manifest read")
	}
	m := workspace.Manifest{Target: "t", Repo: "r", Files: map[string]workspace.ManifestEntry{
		"a/b.go": {ID: "id1", Version: 2, SHA256: "abc", Size: 3, ModTime: 4}}}
	if err := workspace.WriteManifest(root, m); err != nil {
		t.Fatal(err)
	}
	back, err := workspace.ReadManifest(root)
	if err != nil || back.Repo != "r" || back.Files["a/b.go"] != m.Files["a/b.go"] {
		t.Fatalf("%v %+v", err, back)
	}
	if _, err := os.Stat(filepath.Join(dir, workspace.ManifestFile+".tmp")); err == nil {
		t.Fatal("temporary file left behind")
	}
	write(t, dir, workspace.ManifestFile, "{broken")
	if _, err := workspace.ReadManifest(root); err == nil {
		t.Fatal("a broken manifest read")
	}
}

const commitA = "0123456789abcdef0123456789abcdef01234567"
const commitB = "fedcba9876543210fedcba9876543210fedcba98"

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeStatus(t *testing.T, dir string, st envelope.IndexStatus) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := workspace.WriteStatus(root, st); err != nil {
		t.Fatal(err)
	}
}

func TestRoute(t *testing.T) {
	now := time.Now().UTC()
	fresh := envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexFresh, LastIndexedAt: now, LastIndexedCommit: commitA, SchemaVersion: 1}
	// onBranch: an index of commitA, and HEAD on branch main, a loose
	// ref at commit.
	onBranch := func(commit string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
			write(t, dir, ".git/refs/heads/main", commit+"\n")
		}
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		use   bool
		fresh envelope.Freshness
	}{
		{"no status", func(t *testing.T, dir string) { write(t, dir, ".git/HEAD", commitA+"\n") }, false, envelope.Unknown},
		{"unreadable status", func(t *testing.T, dir string) { write(t, dir, workspace.StatusFile, "{not json") }, false, envelope.Unknown},
		{"state stale", func(t *testing.T, dir string) {
			st := fresh
			st.IndexState = envelope.IndexRebuilding
			writeStatus(t, dir, st)
			write(t, dir, ".git/HEAD", commitA)
		}, false, envelope.Stale},
		{"not a git repo", func(t *testing.T, dir string) { writeStatus(t, dir, fresh) }, false, envelope.Unknown},
		{"no indexed commit", func(t *testing.T, dir string) {
			st := fresh
			st.LastIndexedCommit = ""
			writeStatus(t, dir, st)
			write(t, dir, ".git/HEAD", commitA)
		}, false, envelope.Unknown},
		{"detached head equal", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", strings.ToUpper(commitA)+"\n")
		}, true, envelope.Fresh},
		{"loose ref equal", onBranch(commitA), true, envelope.Fresh},
		{"packed ref equal", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
			write(t, dir, ".git/packed-refs", "# pack-refs with: peeled fully-peeled sorted\n"+commitB+" refs/heads/other\n"+commitA+" refs/heads/main\n^"+commitB+"\n")
		}, true, envelope.Fresh},
		{"head moved", onBranch(commitB), false, envelope.Stale},
		{"unborn branch", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
		}, false, envelope.Unknown},
		{"ref escaping", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", "ref: refs/../../../etc/passwd\n")
		}, false, envelope.Unknown},
		{"unknown schema version", func(t *testing.T, dir string) {
			st := fresh
			st.SchemaVersion = workspace.SchemaVersion + 1
			writeStatus(t, dir, st)
			write(t, dir, ".git/HEAD", commitA)
		}, false, envelope.Unknown},
		{"no schema version", func(t *testing.T, dir string) {
			st := fresh
			st.SchemaVersion = 0
			writeStatus(t, dir, st)
			write(t, dir, ".git/HEAD", commitA)
		}, false, envelope.Unknown},
		{"worktree file", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git", "gitdir: /elsewhere\n")
		}, false, envelope.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			d := workspace.Route(dir)
			if d.UseIndex != c.use || d.Freshness != c.fresh {
				t.Fatalf("got use=%v %s (%s); want use=%v %s", d.UseIndex, d.Freshness, d.Reason, c.use, c.fresh)
			}
			if !d.UseIndex && d.Reason == "" {
				t.Fatal("no reason given")
			}
		})
	}
	if d := workspace.Route(filepath.Join(t.TempDir(), "missing")); d.UseIndex || d.Freshness != envelope.Unknown {
		t.Fatalf("missing repo: %+v", d)
	}
}

func TestWriteStatusIgnoresItself(t *testing.T) {
	dir := t.TempDir()
	writeStatus(t, dir, envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexFresh})
	data, err := os.ReadFile(filepath.Join(dir, ".ctxkit", ".gitignore"))
	if err != nil || string(data) != "*\n" {
		t.Fatalf("%q %v", data, err)
	}
}

func TestCheckAndGuardFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "old.go", "package old")
	write(t, dir, "new.go", "package new")
	write(t, dir, "sub/x.txt", "x")
	indexedAt := time.Now().Add(-time.Hour)
	past := indexedAt.Add(-time.Hour)
	for _, n := range []string{"old.go", "sub/x.txt"} {
		os.Chtimes(filepath.Join(dir, n), past, past)
	}
	if err := os.Symlink("new.go", filepath.Join(dir, "link-new")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("old.go", filepath.Join(dir, "link-old")); err != nil {
		t.Fatal(err)
	}
	// The link itself is new; its target is old: judged by the target.
	os.Symlink("/etc/passwd", filepath.Join(dir, "escape"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, want := range map[string]bool{"old.go": false, "new.go": true, "link-new": true, "link-old": false} {
		stale, err := workspace.CheckFile(root, name, indexedAt)
		if err != nil || stale != want {
			t.Errorf("%s: stale=%v %v; want %v", name, stale, err, want)
		}
	}
	for name, code := range map[string]workspace.Code{"missing.go": workspace.CodeFileNotFound, "sub": workspace.CodeIsDirectory, "escape": workspace.CodeFileUnreadable} {
		_, err := workspace.CheckFile(root, name, indexedAt)
		fe, ok := err.(*workspace.Error)
		if !ok || fe.Code != code {
			t.Errorf("%s: %v; want %s", name, err, code)
		}
	}

	st := &envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexFresh, LastIndexedAt: indexedAt}
	fromIndex := func() (string, error) { return "indexed copy", nil }
	r := workspace.GuardFile(root, "old.go", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusOK || r.Items[0].Content != "indexed copy" || r.Meta.IndexStatus != st {
		t.Errorf("old.go: %+v", r)
	}
	r = workspace.GuardFile(root, "new.go", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusFallback || r.Meta.FreshnessState != envelope.Stale || r.Meta.Source != envelope.SourceLocalFallback || r.Items[0].Content != "package new" {
		t.Errorf("new.go: %+v", r)
	}
	r = workspace.GuardFile(root, "missing.go", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusError || r.Meta.ErrorCode != string(workspace.CodeFileNotFound) || !strings.Contains(r.Meta.Message, "missing.go") || len(r.Items) != 0 {
		t.Errorf("missing.go: %+v", r)
	}
	r = workspace.GuardFile(root, "sub", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusError || r.Meta.ErrorCode != string(workspace.CodeIsDirectory) {
		t.Errorf("sub: %+v", r)
	}
}
