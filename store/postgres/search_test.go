package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
)

// TestSearchUnderRowLevelSecurity: an owner's transaction sees only its own
// search words, and a search finds its candidates through the search_terms
// index, not by reading every row of the owner.
func TestSearchUnderRowLevelSecurity(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	alice := store.Actor{OwnerID: "alice", AgentID: "a1"}
	bob := store.Actor{OwnerID: "bob", AgentID: "b1"}
	var many []store.Breadcrumb
	for i := range 2000 {
		many = append(many, store.Breadcrumb{Title: "filler", Context: json.RawMessage(`{"n":` + strings.Repeat("1", 1+i%5) + `}`)})
	}
	many = append(many, store.Breadcrumb{Title: "needle", Context: json.RawMessage(`{}`)})
	if _, err := db.Import(ctx, alice, many); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Create(ctx, bob, store.Breadcrumb{Title: "bob needle", Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	res, err := db.Search(ctx, alice, store.SearchQuery{Text: "needle"})
	hits := res.Hits
	if err != nil || len(hits) != 1 || hits[0].Title != "needle" {
		t.Fatalf("alice: %v %+v", err, hits)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM search_terms`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d search terms visible without an owner (%v)", n, err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	tx.Exec(ctx, `SELECT set_config('ctxkit.owner_id', 'bob', true)`)
	tx.QueryRow(ctx, `SELECT count(DISTINCT breadcrumb_id) FROM search_terms`).Scan(&n)
	if n != 1 {
		t.Errorf("bob sees the words of %d breadcrumbs, want 1", n)
	}
	tx.Exec(ctx, `SELECT set_config('ctxkit.owner_id', 'alice', true)`)
	tx.Exec(ctx, `ANALYZE search_terms`)
	rows, err := tx.Query(ctx, `EXPLAIN SELECT breadcrumb_id FROM search_terms WHERE owner_id = 'alice' AND term = ANY('{needle}'::text[])`)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan = append(plan, line)
	}
	if p := strings.Join(plan, "\n"); !strings.Contains(p, "Index") {
		t.Errorf("candidate lookup does not use an index under RLS:\n%s", p)
	}
}

// TestSearchBackfill: breadcrumbs written before search existed are
// indexed when the database is next opened.
func TestSearchBackfill(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
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
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := conn.Begin(ctx)
	tx.Exec(ctx, `SELECT set_config('ctxkit.system', 'on', true)`)
	if _, err := tx.Exec(ctx, `UPDATE breadcrumbs SET search = NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM search_terms`); err != nil {
		t.Fatal(err)
	}
	tx.Commit(ctx)
	conn.Close(ctx)
	db, err = postgres.Open(ctx, url)
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

// TestSearchDocsMigration: a database from before search documents were
// kept gets them from the tsvectors when a server opens it: a view text
// the writer supplied stays searchable and every score stays what it is
// for a breadcrumb written now.
func TestSearchDocsMigration(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
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
	scores := func() []string {
		var out []string
		for _, q := range queries {
			res, err := db.Search(ctx, a, store.SearchQuery{Text: q})
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
	want := scores()
	db.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE search_docs`, `DELETE FROM schema_migrations WHERE version = 3`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	conn.Close(ctx)
	if db, err = postgres.Open(ctx, url); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := scores(); !slices.Equal(got, want) {
		t.Fatalf("after the migration:\n%q\nbefore:\n%q", got, want)
	}
}
