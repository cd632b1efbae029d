package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// BenchmarkSearchScaling: see storetest.BenchSearch (CTXKIT_BENCH_FULL=1
// for 10,000 and 100,000 breadcrumbs).
func BenchmarkSearchScaling(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ctxkit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	storetest.BenchSearch(b, db, db)
}

// BenchmarkSearchLargeDocuments: see storetest.BenchSearchLargeDocuments.
func BenchmarkSearchLargeDocuments(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ctxkit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	storetest.BenchSearchLargeDocuments(b, db, db)
}

// BenchmarkSelectorStreams: see storetest.BenchSelectorStreams.
func BenchmarkSelectorStreams(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ctxkit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	storetest.BenchSelectorStreams(b, db)
}
