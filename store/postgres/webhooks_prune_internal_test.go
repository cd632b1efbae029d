package postgres

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
)

// TestWebhookPruneRacesRead: a prune that commits as WebhookChanges reads
// (prunedRead) is counted as missed; the events it took are not skipped
// in silence.
func TestWebhookPruneRacesRead(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	sel, _ := store.ParseSelector([]byte(`{}`))
	w, _, err := d.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := d.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const backlog = 2
	pruneAt := latest - backlog // as Expire with a backlog of 2
	once := false
	prunedRead = func() {
		if once {
			return
		}
		once = true
		err := d.inTx(ctx, scope{system: true}, func(*pgxpool.Conn) (*pgx.Batch, error) {
			batch := &pgx.Batch{}
			queuePrune(batch, d.now(), backlog)
			batch.Queue(`DELETE FROM events WHERE seq <= $1`, pruneAt)
			return batch, nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	defer func() { prunedRead = nil }()
	cs, missed, err := d.WebhookChanges(ctx, w, latest, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	if !once {
		t.Fatal("the prune did not run")
	}
	if len(cs) == 0 || missed != pruneAt || cs[0].Seq != pruneAt+1 {
		t.Fatalf("cursor %d, changes %v, missed through %d; want missed %d, first %d", w.Cursor, cs, missed, pruneAt, pruneAt+1)
	}
}

// TestWebhookChangesOneRead: WebhookChanges reads the pruned mark and the
// events past it in one statement, one snapshot, so one round trip
// whatever the prunes (a mark read apart from the events has to be read
// again after them), and counts what was pruned past the cursor as
// missed: with events left past the mark, with none (the mark's row
// alone), and with the cursor past the mark (nothing missed).
func TestWebhookChangesOneRead(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	sel, _ := store.ParseSelector([]byte(`{}`))
	w, _, err := d.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{"n":1}`)}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := d.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const backlog = 2
	pruneAt := latest - backlog
	err = d.inTx(ctx, system, func(*pgxpool.Conn) (*pgx.Batch, error) {
		batch := &pgx.Batch{}
		queuePrune(batch, d.now(), backlog)
		batch.Queue(`DELETE FROM events WHERE seq <= $1`, pruneAt)
		return batch, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		cursor, mark  int64
		withContext   bool
		missed, first int64 // first: the first change's seq, 0 for none
		n             int
	}{
		{"events past the mark", w.Cursor, latest, false, pruneAt, pruneAt + 1, backlog},
		{"with contexts", w.Cursor, latest, true, pruneAt, pruneAt + 1, backlog},
		{"none past the mark", w.Cursor, pruneAt, false, pruneAt, 0, 0},
		{"cursor past the mark", pruneAt + 1, latest, false, 0, pruneAt + 2, backlog - 1},
	} {
		hook := w
		hook.Cursor = c.cursor
		// The fewest pool acquisitions of a few tries: the store's own
		// work in the background (notifications) only adds.
		trips := int64(-1)
		for range 3 {
			before := d.pool.Stat().AcquireCount()
			cs, missed, err := d.WebhookChanges(ctx, hook, c.mark, 100, c.withContext)
			if n := d.pool.Stat().AcquireCount() - before; trips < 0 || n < trips {
				trips = n
			}
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if missed != c.missed || len(cs) != c.n || (c.n > 0 && cs[0].Seq != c.first) {
				t.Fatalf("%s: changes %v, missed through %d; want %d from %d, missed %d", c.name, cs, missed, c.n, c.first, c.missed)
			}
			for _, ch := range cs {
				if c.withContext && string(ch.Context) != `{"n":1}` {
					t.Errorf("%s: change %d context %s", c.name, ch.Seq, ch.Context)
				}
			}
		}
		if trips != 1 {
			t.Errorf("%s: %d round trips, want 1", c.name, trips)
		}
	}
}
