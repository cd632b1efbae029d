package envelope_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
)

type item struct{ N int }

// marshaled encodes itself, which the envelope must respect.
type marshaled struct{ v string }

func (m marshaled) MarshalJSON() ([]byte, error) { return json.Marshal("custom:" + m.v) }

func TestConstructors(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	st := &envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexFresh, LastIndexedAt: at, LastIndexedCommit: "abc", SchemaVersion: 1}
	cases := []struct {
		name string
		got  any
		want string
	}{
		{"ok defaults", envelope.OK([]item{{1}}),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":null},"items":[{"N":1}]}`},
		{"ok with source", envelope.OK([]item{}, envelope.WithSource(envelope.SourceStore)),
			`{"meta":{"status":"OK","source":"STORE","freshness_state":"FRESH","index_status":null},"items":[]}`},
		{"ok nil items", envelope.OK[item](nil),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":null},"items":[]}`},
		{"fallback forces source", envelope.Fallback([]item{{2}}, envelope.WithSource(envelope.SourceStore), envelope.WithMessage("disk")),
			`{"meta":{"status":"FALLBACK","message":"disk","source":"LOCAL_FALLBACK","freshness_state":"STALE","index_status":null},"items":[{"N":2}]}`},
		{"fallback unknown", envelope.Fallback([]item{}, envelope.WithFreshness(envelope.Unknown)),
			`{"meta":{"status":"FALLBACK","source":"LOCAL_FALLBACK","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
		{"error", envelope.Error[item]("not_found", "no such thing", envelope.WithSource(envelope.SourceStore)),
			`{"meta":{"status":"ERROR","error_code":"not_found","message":"no such thing","source":"NONE","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
		{"error without code", envelope.Error[item]("", ""),
			`{"meta":{"status":"ERROR","error_code":"internal","message":"error internal (no message given)","source":"NONE","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
		{"index status", envelope.OK([]item{}, envelope.WithIndexStatus(st)),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":{"repo":"r","index_state":"fresh","last_indexed_at":"2025-03-04T04:06:07Z","last_indexed_commit":"abc","schema_version":1}},"items":[]}`},
		{"marshaler items", envelope.OK([]marshaled{{"a"}}),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":null},"items":["custom:a"]}`},
		{"zero result", envelope.Result[item]{Meta: envelope.Meta{Status: envelope.StatusOK, Source: envelope.SourceStore}},
			`{"meta":{"status":"OK","source":"STORE","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.got)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if err := envelope.Error[item]("x", "y").Validate(); err != nil {
		t.Error(err)
	}
	bad := envelope.Result[item]{Meta: envelope.Meta{Status: envelope.StatusFallback, Source: envelope.SourceStore}}
	if bad.Validate() == nil {
		t.Error("a FALLBACK from the store validated")
	}
	bad = envelope.Result[item]{Meta: envelope.Meta{Status: envelope.StatusError, Source: envelope.SourceNone, ErrorCode: "x", Message: "y"}, Items: []item{{1}}}
	if bad.Validate() == nil {
		t.Error("an ERROR with items validated")
	}
	if (envelope.Result[item]{Meta: envelope.Meta{Status: "MAYBE", Source: "X"}}).Validate() == nil {
		t.Error("an unknown status validated")
	}
}

func TestIndexStatusRoundTrip(t *testing.T) {
	st := envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexError, LastIndexedAt: time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC),
		LastIndexedCommit: "c", SchemaVersion: 1, LastError: "boom"}
	data, _ := json.Marshal(st)
	if !strings.Contains(string(data), `"last_error":"boom"`) || !strings.Contains(string(data), `"2025-01-02T03:04:05.000006Z"`) {
		t.Fatalf("%s", data)
	}
	var back envelope.IndexStatus
	if err := json.Unmarshal(data, &back); err != nil || back != st {
		t.Fatalf("%v %+v", err, back)
	}
	st.LastError = ""
	data, _ = json.Marshal(st)
	if strings.Contains(string(data), "last_error") {
		t.Fatalf("empty last_error not omitted: %s", data)
	}
	if json.Unmarshal([]byte(`{"last_indexed_at":"yesterday"}`), &back) == nil {
		t.Fatal("a bad time parsed")
	}
	// Never indexed: last_indexed_at is left out, never "".
	data, _ = json.Marshal(envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexRebuilding, SchemaVersion: 1})
	if strings.Contains(string(data), "last_indexed_at") {
		t.Fatalf("zero last_indexed_at written: %s", data)
	}
	if err := json.Unmarshal(data, &back); err != nil || !back.LastIndexedAt.IsZero() {
		t.Fatalf("%v %+v", err, back)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := envelope.ReadManifest(root); err == nil {
		t.Fatal("a missing manifest read")
	}
	m := envelope.Manifest{Target: "t", Repo: "r", Files: map[string]envelope.ManifestEntry{
		"a/b.go": {ID: "id1", Version: 2, SHA256: "abc", Size: 3, ModTime: 4}}}
	if err := envelope.WriteManifest(root, m); err != nil {
		t.Fatal(err)
	}
	back, err := envelope.ReadManifest(root)
	if err != nil || back.Repo != "r" || back.Files["a/b.go"] != m.Files["a/b.go"] {
		t.Fatalf("%v %+v", err, back)
	}
	if _, err := os.Stat(filepath.Join(dir, envelope.ManifestFile+".tmp")); err == nil {
		t.Fatal("temporary file left behind")
	}
	write(t, dir, envelope.ManifestFile, "{broken")
	if _, err := envelope.ReadManifest(root); err == nil {
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
	if err := envelope.WriteStatus(root, st); err != nil {
		t.Fatal(err)
	}
}

func TestRoute(t *testing.T) {
	now := time.Now().UTC()
	fresh := envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexFresh, LastIndexedAt: now, LastIndexedCommit: commitA, SchemaVersion: 1}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		use   bool
		fresh envelope.Freshness
	}{
		{"no status", func(t *testing.T, dir string) { write(t, dir, ".git/HEAD", commitA+"\n") }, false, envelope.Unknown},
		{"unreadable status", func(t *testing.T, dir string) { write(t, dir, envelope.StatusFile, "{not json") }, false, envelope.Unknown},
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
		{"loose ref equal", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
			write(t, dir, ".git/refs/heads/main", commitA+"\n")
		}, true, envelope.Fresh},
		{"packed ref equal", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
			write(t, dir, ".git/packed-refs", "# pack-refs with: peeled fully-peeled sorted\n"+commitB+" refs/heads/other\n"+commitA+" refs/heads/main\n^"+commitB+"\n")
		}, true, envelope.Fresh},
		{"head moved", func(t *testing.T, dir string) {
			writeStatus(t, dir, fresh)
			write(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
			write(t, dir, ".git/refs/heads/main", commitB+"\n")
		}, false, envelope.Stale},
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
			st.SchemaVersion = envelope.SchemaVersion + 1
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
			d := envelope.Route(dir)
			if d.UseIndex != c.use || d.Freshness != c.fresh {
				t.Fatalf("got use=%v %s (%s); want use=%v %s", d.UseIndex, d.Freshness, d.Reason, c.use, c.fresh)
			}
			if !d.UseIndex && d.Reason == "" {
				t.Fatal("no reason given")
			}
		})
	}
	if d := envelope.Route(filepath.Join(t.TempDir(), "missing")); d.UseIndex || d.Freshness != envelope.Unknown {
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
		stale, err := envelope.CheckFile(root, name, indexedAt)
		if err != nil || stale != want {
			t.Errorf("%s: stale=%v %v; want %v", name, stale, err, want)
		}
	}
	for name, code := range map[string]string{"missing.go": envelope.CodeFileNotFound, "sub": envelope.CodeIsDirectory, "escape": envelope.CodeFileUnreadable} {
		_, err := envelope.CheckFile(root, name, indexedAt)
		fe, ok := err.(*envelope.FileError)
		if !ok || fe.Code != code {
			t.Errorf("%s: %v; want %s", name, err, code)
		}
	}

	st := &envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexFresh, LastIndexedAt: indexedAt}
	fromIndex := func() (string, error) { return "indexed copy", nil }
	r := envelope.GuardFile(root, "old.go", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusOK || r.Items[0].Content != "indexed copy" || r.Meta.IndexStatus != st {
		t.Errorf("old.go: %+v", r)
	}
	r = envelope.GuardFile(root, "new.go", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusFallback || r.Meta.FreshnessState != envelope.Stale || r.Meta.Source != envelope.SourceLocalFallback || r.Items[0].Content != "package new" {
		t.Errorf("new.go: %+v", r)
	}
	r = envelope.GuardFile(root, "missing.go", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusError || r.Meta.ErrorCode != envelope.CodeFileNotFound || !strings.Contains(r.Meta.Message, "missing.go") || len(r.Items) != 0 {
		t.Errorf("missing.go: %+v", r)
	}
	r = envelope.GuardFile(root, "sub", st, fromIndex, 1<<20)
	if r.Meta.Status != envelope.StatusError || r.Meta.ErrorCode != envelope.CodeIsDirectory {
		t.Errorf("sub: %+v", r)
	}
}
