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

// TestWebhookPruneRacesRead: a prune that commits between WebhookChanges'
// read of the pruned mark and its read of the events is counted as
// missed; the events it took are not skipped in silence.
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
