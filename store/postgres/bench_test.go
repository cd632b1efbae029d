package postgres_test

import (
	"context"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// BenchmarkSearchScaling: see storetest.BenchSearch (CTXKIT_BENCH_FULL=1
// for 10,000 and 100,000 breadcrumbs).
func BenchmarkSearchScaling(b *testing.B) {
	db, err := postgres.Open(context.Background(), pgtest.Shared(b).NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	storetest.BenchSearch(b, db, db)
}

// BenchmarkSearchLargeDocuments: see storetest.BenchSearchLargeDocuments.
func BenchmarkSearchLargeDocuments(b *testing.B) {
	db, err := postgres.Open(context.Background(), pgtest.Shared(b).NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	storetest.BenchSearchLargeDocuments(b, db, db)
}
