package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/pgtest"
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
