package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
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

// TestClaimReadsPendingOnly: a claim probes every webhook for its due
// deliveries, and a reading connection drops its cache after every
// commit, so what it reads is read from the file each time. Among many
// settled deliveries, the pending ones it searches sit on a few pages
// of an index of their own, not on a page per webhook; and the claim
// still finds each webhook's due delivery.
func TestClaimReadsPendingOnly(t *testing.T) {
	ctx := context.Background()
	d, a, _ := openWithWebhook(t)
	sel, _ := store.ParseSelector([]byte(`{}`))
	for range 99 {
		if _, _, err := d.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel}); err != nil {
			t.Fatal(err)
		}
	}
	// 300 settled deliveries and one pending for each of the 100 webhooks.
	_, err := d.w.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
		INSERT INTO webhook_deliveries (id, webhook_id, seq, kind, body, status, first_due, next_at, created_at, updated_at)
		SELECT printf('%s-%04d', w.id, n.i), w.id, n.i + 1, 'created', x'7b7d', CASE WHEN n.i = 300 THEN 'pending' ELSE 'delivered' END,
		n.i, n.i, n.i, n.i FROM webhooks w, n`)
	if err != nil {
		t.Fatal(err)
	}
	plan := ""
	rows, err := d.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+claimCandidatesQuery, 1000, 4)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan += detail + "\n"
	}
	rows.Close()
	m := regexp.MustCompile(`SEARCH x USING (?:COVERING )?INDEX (\w+)`).FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("the claim does not search an index for each webhook's due deliveries:\n%s", plan)
	}
	var leaves int
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM dbstat WHERE name = ? AND pagetype = 'leaf'`, m[1]).Scan(&leaves); err != nil {
		t.Fatal(err)
	}
	if leaves > 5 {
		t.Fatalf("the claim searches %s, of %d leaf pages for 100 pending deliveries:\n%s", m[1], leaves, plan)
	}
	got, err := d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 1000, PerWebhook: 4})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range got {
		if c.Status != store.DeliveryPending || !strings.HasSuffix(c.ID, "-0300") {
			t.Fatalf("claimed %s (%s): not the pending delivery", c.ID, c.Status)
		}
		seen[c.WebhookID] = true
	}
	if len(got) != 100 || len(seen) != 100 {
		t.Fatalf("claimed %d deliveries of %d webhooks, want 100 of 100", len(got), len(seen))
	}
}
