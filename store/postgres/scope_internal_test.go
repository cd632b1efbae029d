package postgres

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/internal/pgtest"
	"github.com/ctxkit/ctxkit/store"
)

// TestScopeEndsWithTransaction: after reads (one pipeline) and writes (a
// transaction) for an owner, no pooled connection still names that owner,
// and the statement bounds are in force.
func TestScopeEndsWithTransaction(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "acme", AgentID: "x"}
	for i := 0; i < 20; i++ {
		b, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`)}, store.Idempotency{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Get(ctx, a, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	conns := d.pool.AcquireAllIdle(ctx)
	if len(conns) == 0 {
		t.Fatal("no idle connections to inspect")
	}
	for _, c := range conns {
		var owner, sys *string
		var timeout string
		err := c.QueryRow(ctx, `SELECT current_setting('ctxkit.owner_id', true), current_setting('ctxkit.system', true), current_setting('statement_timeout')`).Scan(&owner, &sys, &timeout)
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
		if (owner != nil && *owner != "") || (sys != nil && *sys != "") {
			t.Errorf("a pooled connection still carries owner %q system %q", deref(owner), deref(sys))
		}
		if timeout != "30s" {
			t.Errorf("statement_timeout %q", timeout)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
