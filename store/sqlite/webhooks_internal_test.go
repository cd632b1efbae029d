package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// openWithWebhook opens a store of the test's own, closed when the test
// ends, with a webhook of every change of alice's.
func openWithWebhook(t *testing.T) (*DB, store.Actor, store.Webhook) {
	t.Helper()
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	sel, _ := store.ParseSelector([]byte(`{}`))
	w, _, err := d.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return d, a, w
}

// TestWebhookMissedEvents: a webhook whose cursor is behind the events
// pruned by Expire is told so (MissedThrough), not silently moved on.
func TestWebhookMissedEvents(t *testing.T) {
	ctx := context.Background()
	d, a, w := openWithWebhook(t)
	var seqs []int64
	for range 3 {
		_, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{})
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := d.LatestSeq(ctx)
		seqs = append(seqs, seq)
	}
	// As Expire notes it when the backlog passes EventBacklog.
	for _, backlog := range []int64{seqs[2] - seqs[1], seqs[2] - seqs[0]} { // the second would go back: kept
		if err := d.queueTx(ctx, func(tx *sql.Tx) error { return notePruned(ctx, tx, int(backlog)) }); err != nil {
			t.Fatal(err)
		}
	}
	cs, missed, err := d.WebhookChanges(ctx, w, seqs[2], 100, false)
	if err != nil || missed != seqs[1] || len(cs) != 1 || cs[0].Seq != seqs[2] {
		t.Fatalf("changes %d, missed %d (want %d), %v", len(cs), missed, seqs[1], err)
	}
	errs, err := d.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: seqs[2], Missed: missed}})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	if w, err = d.Webhook(ctx, a, w.ID); err != nil || w.MissedThrough != seqs[1] || w.Cursor != seqs[2] {
		t.Fatalf("webhook %+v, %v", w, err)
	}
}

// TestWebhookPruneRacesRead: a prune that commits between WebhookChanges'
// read of the pruned mark and its read of the events is counted as
// missed; the events it took are not skipped in silence.
func TestWebhookPruneRacesRead(t *testing.T) {
	ctx := context.Background()
	d, a, w := openWithWebhook(t)
	for range 4 {
		if _, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := d.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pruneAt := latest - 2 // as Expire with a backlog of 2
	once := false
	prunedRead = func() {
		if once {
			return
		}
		once = true
		err := d.queueTx(ctx, func(tx *sql.Tx) error {
			if err := notePruned(ctx, tx, 2); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM events WHERE seq <= ?`, pruneAt)
			return err
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
	if len(cs) == 0 || (missed < cs[0].Seq-1 && cs[0].Seq-1 > w.Cursor) {
		t.Fatalf("cursor %d, first change %v, missed through %d: events pruned in silence", w.Cursor, cs, missed)
	}
	if missed != pruneAt || cs[0].Seq != pruneAt+1 {
		t.Fatalf("missed %d, first %d; want %d, %d", missed, cs[0].Seq, pruneAt, pruneAt+1)
	}
}
