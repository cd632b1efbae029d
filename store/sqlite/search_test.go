package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// TestSearchBackfill: breadcrumbs written before search existed are
// indexed when the database is next opened.
func TestSearchBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	if _, _, err := db.Create(ctx, a, store.Breadcrumb{Title: "old record", Context: json.RawMessage(`{"x":"payload"}`)}, store.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	// A transformed view's hidden field stays unsearchable after the backfill.
	if _, _, err := db.Create(ctx, a, store.Breadcrumb{Title: "carded", Context: json.RawMessage(`{"name":"n","card":"hiddencard"}`),
		LLMHints:   json.RawMessage(`{"transform":{"s":{"type":"template","template":"{{context.name}}"}}}`),
		SearchText: "n"}, store.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM breadcrumb_search`, `INSERT INTO search_pending (id) SELECT id FROM breadcrumbs`} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Search(ctx, a, store.SearchQuery{Text: "payload"})
	hits := res.Hits
	if err != nil || len(hits) != 1 {
		t.Fatalf("after backfill: %v %+v", err, hits)
	}
	if res, err := db.Search(ctx, a, store.SearchQuery{Text: "hiddencard"}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("hidden field searchable after backfill: %v %+v", err, hits)
	}
	if res, err := db.Search(ctx, a, store.SearchQuery{Text: "carded"}); err != nil || len(res.Hits) != 1 {
		t.Fatalf("title after backfill: %v %+v", err, hits)
	}
}

// FuzzSearch: no query text makes the backend fail: it is either refused
// as an invalid q or runs (FTS5 never sees user text as syntax).
func FuzzSearch(f *testing.F) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "ctxkit.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	if _, _, err := db.Create(ctx, a, store.Breadcrumb{Title: "near and or not", Context: json.RawMessage(`{"t":"quoted \"text\" col:umn"}`)}, store.Idempotency{}); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`near OR "and"`, `col:umn`, `NEAR(a b)`, `^x`, `"a" + "b"`, `not*`, `-"" x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := db.Search(ctx, a, store.SearchQuery{Text: q}); err != nil && !store.IsCode(err, store.CodeInvalid) {
			t.Fatalf("%q: %v", q, err)
		}
	})
}
