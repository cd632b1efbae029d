package cli

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/ctxkit/ctxkit/workspace"
)

// The indexer's own tests are in package workspace; this one needs a real
// server, which a library's tests do not import.

// failingHandler answers the nth write request (POST, PATCH, DELETE) with
// a 500: before the server handles it, or after (the write happened, the
// reply was lost).
type failingHandler struct {
	next   http.Handler
	n      int
	after  bool
	writes atomic.Int64
}

func (f *failingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "GET" && f.writes.Add(1) == int64(f.n) {
		if f.after {
			f.next.ServeHTTP(httptest.NewRecorder(), r)
		}
		http.Error(w, `{"error":{"code":"internal","message":"injected failure"}}`, http.StatusInternalServerError)
		return
	}
	f.next.ServeHTTP(w, r)
}

// TestIndexRecoversFromAFailedRun: a run that fails midway (the write
// refused, or done with its reply lost), on a first run and on a run that
// updates files, leaves a state the next runs finish from: they succeed,
// and every path has exactly one breadcrumb.
func TestIndexRecoversFromAFailedRun(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		after bool
	}{{"create refused", 4, false}, {"create reply lost", 4, true}, {"update refused", 9, false}, {"update reply lost", 9, true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			repo := filepath.Join(t.TempDir(), "repo")
			const n = 6
			writeFiles := func(gen int) {
				for i := range n {
					p := filepath.Join(repo, fmt.Sprintf("f%d.txt", i))
					os.MkdirAll(filepath.Dir(p), 0o755)
					if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d generation %d\n", i, gen)), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			writeFiles(0)
			db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, key, _ := ed25519.GenerateKey(nil)
			fh := &failingHandler{next: server.New(server.Options{Store: db, Key: key}).Handler(), n: c.n, after: c.after}
			ts := httptest.NewServer(fh)
			defer ts.Close()
			tok, err := server.Mint(key, server.Principal{OwnerID: "o", AgentID: "indexer", Roles: []string{server.RoleCurator}}, time.Hour, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			target := workspace.NewServerTarget(ts.URL, tok, ts.Client())
			o := workspace.Options{Repo: repo, MaxBytes: 1 << 10, Now: time.Now}
			run := func() error {
				_, _, err := workspace.Index(ctx, target, o)
				return err
			}
			failed := false
			if err := run(); err != nil {
				failed = true
			}
			writeFiles(1) // every file changes: the next runs update them all
			if err := run(); err != nil {
				failed = true
			}
			if !failed {
				t.Fatal("no run failed: the failure was not injected")
			}
			for i := range 2 {
				if err := run(); err != nil {
					t.Fatalf("clean run %d: %v", i+1, err)
				}
			}
			page, err := db.List(ctx, store.Actor{OwnerID: "o", AgentID: "x", Curator: true}, store.Query{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, b := range page.Items {
				count[b.Title]++
				if !strings.Contains(string(b.Context), "generation 1") {
					t.Errorf("%s: not the current content: %s", b.Title, b.Context)
				}
			}
			if len(count) != n {
				t.Errorf("%d paths indexed, want %d: %v", len(count), n, count)
			}
			for p, k := range count {
				if k != 1 {
					t.Errorf("%s: %d breadcrumbs", p, k)
				}
			}
		})
	}
}
