package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// TestCreateBatch runs the batch conformance tests; the refused row is
// one a trigger on the writing connection aborts.
func TestCreateBatch(t *testing.T) {
	open := func(t *testing.T) store.Store {
		d, err := Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	storetest.RunBatch(t, open, func(t *testing.T, s store.Store) {
		_, err := s.(*DB).w.Exec(`CREATE TEMP TRIGGER refuse_poison BEFORE INSERT ON main.breadcrumbs
			WHEN NEW.title = '` + storetest.PoisonTitle + `' BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END`)
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestCreateBatchKeepsStatements writes batches one after another: the
// first prepares the batch's statements and keeps them, the later ones
// prepare none, and every record of every batch is there to read.
func TestCreateBatchKeepsStatements(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "acme", AgentID: "writer"}
	batch := func(n int) []store.Creation {
		cs := make([]store.Creation, n)
		for i := range cs {
			cs[i] = store.Creation{Actor: a, In: store.Breadcrumb{Title: "kept statements", Context: []byte(`{"n":1}`), Tags: []string{"x", "y"}}}
		}
		return cs
	}
	var ids []string
	firstKept := 0
	for round := range 3 {
		out, err := d.CreateBatch(ctx, batch(4))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range out {
			if r.Err != nil {
				t.Fatalf("round %d, create %d: %v", round, i, r.Err)
			}
			ids = append(ids, r.Breadcrumb.ID)
		}
		d.batchStmts.mu.Lock()
		kept, pending := len(d.batchStmts.stmts), len(d.batchStmts.pending)
		d.batchStmts.mu.Unlock()
		if kept == 0 || pending != 0 {
			t.Fatalf("round %d: %d statements kept, %d waiting; want some kept, none waiting", round, kept, pending)
		}
		if round == 0 {
			firstKept = kept
		} else if kept != firstKept {
			// A later batch prepared a statement anew.
			t.Fatalf("round %d: %d statements kept; the first batch kept %d", round, kept, firstKept)
		}
	}
	for _, id := range ids {
		if _, err := d.Get(ctx, a, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
