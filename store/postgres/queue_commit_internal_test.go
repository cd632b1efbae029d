package postgres

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
)

// commitSeen records, by a statement trigger on each table the webhook
// queue or a breadcrumb write changes, the synchronous_commit in force
// inside the writing transaction: the setting its COMMIT runs with.
var commitSeen = []string{
	`CREATE TABLE commit_seen (n bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL, setting text NOT NULL)`,
	`CREATE FUNCTION commit_seen() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO commit_seen (tbl, op, setting) VALUES (TG_TABLE_NAME, TG_OP, current_setting('synchronous_commit'));
		RETURN NULL;
	END $$`,
}

// TestQueueCommitsWithoutFlush: the webhook queue's writes (queue) run
// with synchronous_commit off, as a trigger inside their transactions
// sees; breadcrumb writes, webhook changes and the maintenance sweep run
// with the server's setting (on); and the queue's setting never outlives
// its transaction: on a pool of one connection, after each queue call
// that connection shows synchronous_commit on, and the breadcrumb write
// that follows runs with it on.
func TestQueueCommitsWithoutFlush(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.Shared(t).NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	d, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	raw, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	var server string
	if err := raw.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&server); err != nil || server != "on" {
		t.Fatalf("the test server's synchronous_commit is %q (%v), want on", server, err)
	}
	setup := commitSeen
	for _, tbl := range []string{"breadcrumbs", "webhooks", "webhook_deliveries", "webhook_attempts"} {
		setup = append(setup, `CREATE TRIGGER commit_seen AFTER INSERT OR UPDATE OR DELETE ON `+tbl+`
			FOR EACH STATEMENT EXECUTE FUNCTION commit_seen()`)
	}
	for _, s := range setup {
		if _, err := raw.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	var last int64
	// check runs f and wants every write the trigger saw in it (at least
	// one) to have run with synchronous_commit want.
	check := func(name, want string, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rows, err := raw.Query(ctx, `SELECT n, tbl, op, setting FROM commit_seen WHERE n > $1 ORDER BY n`, last)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for rows.Next() {
			var tbl, op, setting string
			if err := rows.Scan(&last, &tbl, &op, &setting); err != nil {
				t.Fatal(err)
			}
			seen++
			if setting != want {
				t.Errorf("%s: its %s on %s ran with synchronous_commit %s, want %s", name, op, tbl, setting, want)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if seen == 0 {
			t.Fatalf("%s: wrote nothing", name)
		}
	}
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	write := func() error {
		_, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{})
		return err
	}
	// queued checks a queue call, then that its setting did not stay
	// with the pool's one connection.
	queued := func(name string, f func() error) {
		t.Helper()
		check(name, "off", f)
		var got string
		if err := d.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "on" {
			t.Errorf("after %s the pooled connection has synchronous_commit %s, want on", name, got)
		}
		check("a breadcrumb write after "+name, "on", write)
	}

	sel, _ := store.ParseSelector([]byte(`{}`))
	var w store.Webhook
	check("CreateWebhook", "on", func() error {
		w, _, err = d.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel})
		return err
	})
	for range 2 {
		check("Create", "on", write)
	}
	queued("AdvanceWebhooks", func() error {
		latest, err := d.LatestSeq(ctx)
		if err != nil {
			return err
		}
		cs, _, err := d.WebhookChanges(ctx, w, latest, 100, false)
		if err != nil {
			return err
		}
		adv := store.Advance{Webhook: w, Upto: latest}
		for _, c := range cs {
			ev, _ := json.Marshal(c.Event)
			adv.Deliveries = append(adv.Deliveries, store.NewDelivery{Seq: c.Seq, Kind: string(c.Kind), Event: ev})
		}
		errs, err := d.AdvanceWebhooks(ctx, []store.Advance{adv})
		if err == nil && errs[0] != nil {
			err = errs[0]
		}
		if err == nil && len(adv.Deliveries) != 2 {
			t.Fatalf("%d deliveries, want 2", len(adv.Deliveries))
		}
		return err
	})
	var cds []store.ClaimedDelivery
	queued("ClaimDeliveries", func() error {
		cds, err = d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 10, PerWebhook: 10, Lease: time.Hour})
		if err == nil && len(cds) != 2 {
			t.Fatalf("claimed %d, want 2", len(cds))
		}
		return err
	})
	now := time.Now()
	queued("SettleDeliveries", func() error {
		errs, err := d.SettleDeliveries(ctx, []store.Settle{
			{DeliveryID: cds[0].ID, Lease: cds[0].Lease, Status: store.DeliveryPending, NextAt: now, Attempted: true, Failed: now,
				Attempt: &store.DeliveryAttempt{DeliveryID: cds[0].ID, WebhookID: w.ID, At: now, Status: 500, Class: "http_5xx"}},
			{DeliveryID: cds[1].ID, Lease: cds[1].Lease, Status: store.DeliveryPending}, // a release
		})
		for _, e := range errs {
			if err == nil {
				err = e
			}
		}
		return err
	})
	queued("RecordAttempt", func() error {
		return d.RecordAttempt(ctx, store.DeliveryAttempt{DeliveryID: cds[0].ID, WebhookID: w.ID, At: now, Status: 500, Class: "http_5xx"})
	})
	check("EnqueueTest", "on", func() error {
		_, err := d.EnqueueTest(ctx, a, w.ID, []byte(`{}`))
		return err
	})
	queued("TrimDeliveries", func() error {
		bl, err := d.TrimDeliveries(ctx, 1)
		if err == nil && (len(bl) != 1 || bl[0].Trimmed != 2) {
			t.Fatalf("trim: %+v, want 2 of 3 trimmed", bl)
		}
		return err
	})
	check("Redeliver", "on", func() error {
		_, err := d.Redeliver(ctx, a, w.ID, cds[0].ID)
		return err
	})
	check("RedeliverFailed", "on", func() error {
		_, err := d.RedeliverFailed(ctx, a, w.ID, 10)
		return err
	})
	check("PauseFailing", "on", func() error { return d.PauseFailing(ctx, w.ID, now, "failing") })
	check("PauseRevoked", "on", func() error { return d.PauseRevoked(ctx, w.ID, w.TokenID, w.TokenIssued) })
	check("UpdateWebhook", "on", func() error {
		desc := "changed"
		_, err := d.UpdateWebhook(ctx, a, w.ID, store.WebhookPatch{Description: &desc})
		return err
	})
	check("RotateWebhookSecret", "on", func() error {
		_, _, err := d.RotateWebhookSecret(ctx, a, w.ID, time.Minute)
		return err
	})
	check("Expire", "on", func() error {
		_, err := d.Expire(ctx, now.Add(store.DeliveryRetention+time.Hour))
		return err
	})
	check("DeleteWebhook", "on", func() error { return d.DeleteWebhook(ctx, a, w.ID) })
}
