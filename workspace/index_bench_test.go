package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// BenchmarkReindexUnchanged indexes a generated repository (5,000 files
// with CTXKIT_BENCH_FULL=1, else 300), then times a second run over the
// unchanged tree; it reports both and their ratio, which with
// CTXKIT_BENCH_FULL=1 must be at most 10%.
func BenchmarkReindexUnchanged(b *testing.B) {
	n := 300
	full := os.Getenv("CTXKIT_BENCH_FULL") == "1"
	if full {
		n = 5000
	}
	ctx := context.Background()
	repo := filepath.Join(b.TempDir(), "repo")
	for i := range n {
		p := filepath.Join(repo, fmt.Sprintf("pkg%d", i%50), fmt.Sprintf("file%d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		body := fmt.Sprintf("package pkg%d\n\n// F%d does work number %d.\nfunc F%d() int { return %d }\n", i%50, i, i, i, i) + strings.Repeat("// filler line of text\n", 40)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "ctxkit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	target := &storeTarget{db: db, desc: "bench", actor: store.Actor{OwnerID: "o", AgentID: "index", Curator: true}}
	o := Options{Repo: repo, MaxBytes: 64 << 10, Now: time.Now}
	t0 := time.Now()
	if _, st, err := Index(ctx, target, o); err != nil || st.Created != n {
		b.Fatalf("first run: %v %+v", err, st)
	}
	first := time.Since(t0)
	var again time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, st, err := Index(ctx, target, o); err != nil || st.Unchanged != n {
			b.Fatalf("re-run: %v %+v", err, st)
		}
		again = time.Since(t0)
	}
	b.ReportMetric(first.Seconds()*1000, "first-ms")
	b.ReportMetric(again.Seconds()*1000, "rerun-ms")
	ratio := again.Seconds() / first.Seconds()
	b.ReportMetric(ratio, "rerun-ratio")
	if full && ratio > 0.10 {
		b.Fatalf("re-indexing %d unchanged files took %v, %.0f%% of the first run's %v: the limit is 10%%", n, again, 100*ratio, first)
	}
}
