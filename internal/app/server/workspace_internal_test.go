package server

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/workspace"
)

func scanFixture(t *testing.T, opts Options) *workspaceSearcher {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("needle\n"), 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := workspace.WriteManifest(root, workspace.Manifest{Files: map[string]workspace.ManifestEntry{"a.txt": {}}}); err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	opts.Key, opts.Workspaces = key, []string{dir}
	return newWorkspaceSearcher(New(opts))
}

// TestWorkspaceScansAreBounded: a scan beyond the concurrent bound is
// answered 503 busy with Retry-After, and a scan has a time limit.
func TestWorkspaceScansAreBounded(t *testing.T) {
	ws := scanFixture(t, Options{MaxWorkspaceScans: 1})
	ctx := context.Background()
	res, err := ws.run(ctx, Principal{OwnerID: "o", AgentID: "a"}, "ws", "needle", 10)
	if err != nil || res.Meta.Status != envelope.StatusFallback || len(res.Items) != 1 {
		t.Fatalf("free: %v %+v", err, res)
	}
	ws.scans <- struct{}{} // another scan is running
	rec := httptest.NewRecorder()
	err = ws.search(rec, httptest.NewRequest("GET", "/workspace/search?repo=ws&q=needle", nil), Principal{OwnerID: "o", AgentID: "a"})
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != "busy" || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("busy: %v %v", err, rec.Header())
	}
	<-ws.scans

	ws = scanFixture(t, Options{WorkspaceScanTimeout: time.Nanosecond})
	res, err = ws.run(ctx, Principal{OwnerID: "o", AgentID: "a"}, "ws", "needle", 10)
	if err != nil || res.Meta.Status != envelope.StatusFallback || !strings.Contains(res.Meta.Message, "out of time") {
		t.Fatalf("timeout: %v %+v", err, res)
	}
}

// TestTrackedPath: only clean relative paths outside .git and .ctxkit,
// without backslashes or colons (a drive, a stream or a separator on
// other systems), may be read.
func TestTrackedPath(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"main.go", true},
		{"docs/guide.md", true},
		{".github/workflows/ci.yml", true},
		{"", false},
		{".", false},
		{"../x", false},
		{"/etc/passwd", false},
		{"a/../b", false},
		{".git/config", false},
		{"sub/.GIT/config", false},
		{".ctxkit/manifest.json", false},
		{`..\secret`, false},
		{`sub\file.txt`, false},
		{"C:secret", false},
		{"file.txt:stream", false},
	} {
		if got := trackedPath(c.name); got != c.want {
			t.Errorf("trackedPath(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}
