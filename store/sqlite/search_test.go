package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
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

// searchScores is what searches for each query report: titles and scores.
func searchScores(t *testing.T, s store.Store, a store.Actor, queries []string) []string {
	t.Helper()
	var out []string
	for _, q := range queries {
		res, err := s.Search(context.Background(), a, store.SearchQuery{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		line := q + ":"
		for _, h := range res.Hits {
			line += fmt.Sprintf(" %s=%v", h.Title, h.Score)
		}
		out = append(out, line)
	}
	return out
}

// TestSearchDocsMigration: a database from before search documents were
// kept gets them from its full-text index when opened, word for word: a
// view text the writer supplied stays searchable and every score stays
// what it is for a breadcrumb written now.
func TestSearchDocsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	for _, b := range []store.Breadcrumb{
		{Title: "deploy runbook", Description: "how to deploy", Tags: []string{"ops"}, Context: json.RawMessage(`{"x":"deploy deploy rollout"}`)},
		{Title: "carded", Context: json.RawMessage(`{"name":"n","card":"hiddencard"}`),
			LLMHints: json.RawMessage(`{"transform":{"s":{"type":"template","template":"{{context.name}}"}}}`), SearchText: "viewword deploy"},
		{Title: "empty", Context: json.RawMessage(`{}`)},
	} {
		if _, _, err := db.Create(ctx, a, b, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{"deploy", "viewword", "dep*", `"deploy rollout"`, "empty", "ops OR carded", "hiddencard"}
	want := searchScores(t, db, a, queries)
	db.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE search_docs`, `DELETE FROM schema_migrations WHERE version = 4`} {
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
	if got := searchScores(t, db, a, queries); !slices.Equal(got, want) {
		t.Fatalf("after the migration:\n%q\nbefore:\n%q", got, want)
	}
}
