package postgres_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

func open(t *testing.T) store.Store {
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

// TestRowLevelSecurity: with no owner named for the transaction, the role
// ctxkit connects as sees no rows at all; naming an owner shows that owner's
// rows and other owners' public ones, whatever the query asks for.
func TestRowLevelSecurity(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if su, err := db.Superuser(ctx); err != nil || su {
		t.Fatalf("test role is a superuser (%v): RLS would not apply", err)
	}
	alice := store.Actor{OwnerID: "alice", AgentID: "a1"}
	bob := store.Actor{OwnerID: "bob", AgentID: "b1"}
	for _, c := range []struct {
		a   store.Actor
		vis store.Visibility
	}{{alice, store.Team}, {alice, store.Public}, {bob, store.Team}} {
		if _, _, err := db.Create(ctx, c.a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`), Visibility: c.vis}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, table := range []string{"breadcrumbs", "history", "events", "search_terms"} {
		if n := count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("%s: %d rows visible without an owner", table, n)
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx.Exec(ctx, `SELECT set_config('ctxkit.owner_id', 'bob', true)`)
	var n int
	tx.QueryRow(ctx, `SELECT count(*) FROM breadcrumbs`).Scan(&n)
	if n != 2 { // bob's own and alice's public one
		t.Errorf("bob sees %d breadcrumbs, want 2", n)
	}
	tx.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n)
	if n != 1 {
		t.Errorf("bob sees %d events, want 1", n)
	}
	// A write into another owner's rows is refused by the policy even when
	// the statement itself does not filter.
	tag, err := tx.Exec(ctx, `UPDATE breadcrumbs SET title = 'stolen'`)
	if err != nil || tag.RowsAffected() != 1 {
		t.Errorf("bob's unfiltered update touched %d rows (%v), want only his own", tag.RowsAffected(), err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO events (seq, kind, breadcrumb_id, owner_id, version, visibility, created_by, tags, schema_name, at)
		VALUES (-1, 'created', gen_random_uuid(), 'alice', 1, 'team', 'x', '{}', '', now())`); err == nil {
		t.Errorf("bob inserted an event for alice")
	}
	tx.Rollback(ctx)
	// SET LOCAL ends with the transaction: the pooled connection keeps nothing.
	if n := count(`SELECT count(*) FROM breadcrumbs`); n != 0 {
		t.Errorf("after the transaction %d rows are visible", n)
	}
	var setting *string
	conn.QueryRow(ctx, `SELECT current_setting('ctxkit.owner_id', true)`).Scan(&setting)
	if setting != nil && *setting != "" {
		t.Errorf("owner setting outlived its transaction: %q", *setting)
	}
}

// TestReplicasStartTogether: several servers migrating one empty database
// at once all start; the migrations ran once.
func TestReplicasStartTogether(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	const n = 6
	errs := make(chan error, n)
	dbs := make(chan *postgres.DB, n)
	for range n {
		go func() {
			db, err := postgres.Open(ctx, url)
			errs <- err
			dbs <- db
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("open: %v", err)
		}
		if db := <-dbs; db != nil {
			defer db.Close()
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) < 2 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	var runs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&runs); err != nil || runs != len(files) {
		t.Fatalf("schema_migrations has %d rows (%v), want %d (one per migration, each run once)", runs, err, len(files))
	}
}

// TestEventsSurviveListenerLoss: when the connection that LISTENs is cut,
// the replica reconnects, and its streams get what was written through
// another replica meanwhile, and after.
func TestEventsSurviveListenerLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pg := pgtest.Shared(t)
	url := pg.NewDatabase(t)
	a, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	actor := store.Actor{OwnerID: "o", AgentID: "x"}
	got := make(chan store.Event, 16)
	go func() {
		for e, err := range a.Events(ctx, actor, -1, nil) {
			if err != nil {
				return
			}
			got <- e
		}
	}()
	write := func(title string) string {
		t.Helper()
		c, _, err := b.Create(ctx, actor, store.Breadcrumb{Title: title, Context: json.RawMessage(`{}`)}, store.Idempotency{})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	expect := func(id string) {
		t.Helper()
		select {
		case e := <-got:
			if e.BreadcrumbID != id {
				t.Fatalf("event for %s, want %s", e.BreadcrumbID, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event for %s through the other replica", id)
		}
	}
	time.Sleep(100 * time.Millisecond) // the stream has started
	expect(write("before"))

	admin, err := pgx.Connect(ctx, pg.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var cut int
	err = admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = $1 AND query LIKE 'LISTEN%'`, dbName(url)).Scan(&cut)
	if err != nil || cut == 0 {
		t.Fatalf("cut %d listeners: %v", cut, err)
	}
	expect(write("while reconnecting"))
	expect(write("after"))
}

func dbName(url string) string {
	cfg, _ := pgx.ParseConfig(url)
	return cfg.Database
}
