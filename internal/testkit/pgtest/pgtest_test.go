package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// TestNewDatabase: each database is the ordinary role's own, so tests run
// as ctxkit does in production (row-level security applies).
func TestNewDatabase(t *testing.T) {
	ctx := context.Background()
	s := pgtest.Shared(t)
	a, b := s.NewDatabase(t), s.NewDatabase(t)
	if a == b {
		t.Fatal("two databases share a URL")
	}
	c, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var super, bypass, owner bool
	err = c.QueryRow(ctx, `SELECT r.rolsuper, r.rolbypassrls, d.datdba = r.oid
		FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()`).Scan(&super, &bypass, &owner)
	if err != nil {
		t.Fatal(err)
	}
	if super || bypass || !owner {
		t.Fatalf("role: superuser %v, bypassrls %v, owns the database %v", super, bypass, owner)
	}
}

// TestRestart: a server of the test's own, stopped as pg_ctl -m immediate
// does, drops its connections mid-session and accepts new ones on the same
// address once started again, with the data committed before.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	s := pgtest.Start(t)
	url := s.NewDatabase(t)
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	s.Restart(t, 0)
	if _, err := c.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a connection survived an immediate shutdown")
	}
	c2, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	defer c2.Close(ctx)
	var n int
	if err := c2.QueryRow(ctx, `SELECT count(*) FROM kept`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("committed rows after recovery: %d %v", n, err)
	}
}
