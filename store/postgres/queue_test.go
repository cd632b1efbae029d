package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
)

// queueFixture opens a store on a database of its own with one webhook
// and n test deliveries, claimed; it returns the claims.
func queueFixture(t *testing.T, n int) (string, *postgres.DB, store.Actor, store.Webhook, []store.ClaimedDelivery) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	sel, _ := store.ParseSelector([]byte(`{}`))
	w, _, err := db.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := db.EnqueueTest(ctx, a, w.ID, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	cds, err := db.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: n, PerWebhook: n, Lease: time.Hour})
	if err != nil || len(cds) != n {
		t.Fatalf("claimed %d (%v), want %d", len(cds), err, n)
	}
	return url, db, a, w, cds
}

// idleInTx counts the backends of the database at url left inside a
// transaction with nothing running: a connection the pool took back
// mid-transaction.
func idleInTx(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSettleInvalidUTF8Cleaned: a receiver's answer that is not
// valid UTF-8 (a binary body, Latin-1 text) is kept as an attempt's
// excerpt, and a settle's reason may hold NUL or such bytes. PostgreSQL's
// text refuses both, which would fail the whole settle group, every other
// settle in it with it, and again each time the leases run out: both are
// kept cleaned (store.ValidText), each NUL and invalid run as U+FFFD.
func TestSettleInvalidUTF8Cleaned(t *testing.T) {
	ctx := context.Background()
	url, db, a, w, cds := queueFixture(t, 2)
	now := time.Now()
	ss := []store.Settle{
		{DeliveryID: cds[0].ID, Lease: cds[0].Lease, Status: store.DeliveryDelivered, Attempted: true,
			Attempt: &store.DeliveryAttempt{DeliveryID: cds[0].ID, WebhookID: w.ID, At: now, Status: 200, Class: "ok", Excerpt: "fine"}},
		{DeliveryID: cds[1].ID, Lease: cds[1].Lease, Status: store.DeliveryDelivered, Attempted: true, Reason: "caf\xe9\x00",
			Attempt: &store.DeliveryAttempt{DeliveryID: cds[1].ID, WebhookID: w.ID, At: now, Status: 200, Class: "ok", Excerpt: "caf\xe9 \xff\xfe"}},
	}
	errs, err := db.SettleDeliveries(ctx, ss)
	conn, cerr := pgx.Connect(ctx, url)
	if cerr != nil {
		t.Fatal(cerr)
	}
	defer conn.Close(ctx)
	if n := idleInTx(t, conn); n != 0 {
		t.Errorf("%d connections left idle in a transaction after the settle", n)
	}
	if err != nil {
		// What the group lost: the good settle beside the bad one too.
		dl, _, derr := db.Delivery(ctx, a, w.ID, cds[0].ID)
		t.Fatalf("settle group with an invalid UTF-8 excerpt: %v (the other delivery is left %s, %v); want it kept, the excerpt made valid",
			err, dl.Status, derr)
	}
	for i, e := range errs {
		if e != nil {
			t.Errorf("settle %d: %v", i, e)
		}
	}
	dl, ats, err := db.Delivery(ctx, a, w.ID, cds[1].ID)
	if err != nil || len(ats) != 1 || ats[0].Excerpt != "caf\uFFFD \uFFFD" {
		t.Fatalf("attempts %+v (%v)", ats, err)
	}
	if dl.Reason != "caf\uFFFD\uFFFD" {
		t.Errorf("reason %q, want %q", dl.Reason, "caf\uFFFD\uFFFD")
	}
}

// TestSettleCancelledBeforeSend: a settle with its context already done
// returns the caller's error, leaves no connection inside a transaction,
// and the deliveries are settled by the next call.
func TestSettleCancelledBeforeSend(t *testing.T) {
	ctx := context.Background()
	url, db, a, w, cds := queueFixture(t, 2)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ss := []store.Settle{
		{DeliveryID: cds[0].ID, Lease: cds[0].Lease, Status: store.DeliveryDelivered},
		{DeliveryID: cds[1].ID, Lease: cds[1].Lease, Status: store.DeliveryDelivered},
	}
	if _, err := db.SettleDeliveries(cctx, ss); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled settle: %v, want context.Canceled", err)
	}
	errs, err := db.SettleDeliveries(ctx, ss)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("settle after a cancelled one: %v %v", errs, err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if n := idleInTx(t, conn); n != 0 {
		t.Errorf("%d connections left idle in a transaction", n)
	}
	for _, cd := range cds {
		if dl, _, err := db.Delivery(ctx, a, w.ID, cd.ID); err != nil || dl.Status != store.DeliveryDelivered {
			t.Errorf("delivery %s: %s %v", cd.ID, dl.Status, err)
		}
	}
}

// waitLock waits until a backend of the database runs a statement that
// starts with prefix and waits on a lock.
func waitLock(t *testing.T, conn *pgx.Conn, prefix string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND ltrim(query) LIKE $1 || '%'`, prefix).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no statement %q waited on a lock", prefix)
}

// waitLockers waits until n backends of the database wait on locks.
func waitLockers(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var got int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("fewer than %d backends waited on locks", n)
}

// TestSettleBesideDeleteWebhook: DeleteWebhook locks the webhook and
// then, by the cascade, its deliveries; a settle locks its webhooks (FOR
// KEY SHARE) before its deliveries, in the same order, so the two never
// deadlock. Here the DELETE is made to take the webhook first by a third
// transaction holding it until both wait: both must finish, the settle
// with its result or its lease lost.
func TestSettleBesideDeleteWebhook(t *testing.T) {
	ctx := context.Background()
	url, db, a, w, cds := queueFixture(t, 1)
	hold, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(ctx)
	watch, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	tx, err := hold.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('ctxkit.system', 'on', true)`); err != nil {
		t.Fatal(err)
	}
	var id string
	if err := tx.QueryRow(ctx, `SELECT id FROM webhooks WHERE id = $1 FOR UPDATE`, w.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	delErr := make(chan error, 1)
	go func() { delErr <- db.DeleteWebhook(ctx, a, w.ID) }()
	waitLock(t, watch, "DELETE FROM webhooks")
	type result struct {
		errs []error
		err  error
	}
	setRes := make(chan result, 1)
	go func() {
		errs, err := db.SettleDeliveries(ctx, []store.Settle{{DeliveryID: cds[0].ID, Lease: cds[0].Lease, Status: store.DeliveryPending,
			NextAt: time.Now().Add(time.Minute), Attempted: true, Failed: time.Now(),
			Attempt: &store.DeliveryAttempt{DeliveryID: cds[0].ID, WebhookID: w.ID, At: time.Now(), Status: 500, Class: "status"}}})
		setRes <- result{errs, err}
	}()
	// The settle waits on the webhook's row too, in whichever statement
	// locks it first.
	waitLock(t, watch, "")
	waitLockers(t, watch, 2)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	derr := <-delErr
	sr := <-setRes
	if derr != nil {
		t.Errorf("DeleteWebhook beside a settle: %v; want it done", derr)
	}
	if sr.err != nil {
		t.Errorf("SettleDeliveries beside a DeleteWebhook: %v; want the settle done or its lease lost", sr.err)
	}
}

// holdWebhook locks w's row as an update of its cursor or failing_since
// does (NO KEY UPDATE: the settle's first round trip, FOR KEY SHARE, goes
// by) in a transaction of its own until the returned function ends it.
func holdWebhook(t *testing.T, url, id string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('ctxkit.system', 'on', true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT id FROM webhooks WHERE id = $1 FOR NO KEY UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback(ctx); conn.Close(ctx) }
}

// waitQuiet waits until no other backend of the database runs a
// statement or holds a transaction.
func waitQuiet(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND pid <> pg_backend_pid() AND (state <> 'idle' OR backend_xid IS NOT NULL)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("backends still busy")
}

// TestSettleCutBetweenTrips: a settle group whose second round trip
// (failing_since, attempts, COMMIT) is held on a lock is then cut, once
// by the caller's context and once by its connection being killed: the
// caller gets an error, nothing of the group is kept, no connection is
// left in a transaction, and the same settles then succeed. Once COMMIT
// is sent the caller's context no longer cuts the wait (pgx would close
// the socket and the server commit when the lock is free, after the
// caller was told context.Canceled): the lock timeout ends it, and the
// caller is told the server's real outcome.
func TestSettleCutBetweenTrips(t *testing.T) {
	// The cancelled case was a race in the connection's teardown (the
	// server may or may not read the rest of the pipeline), so it runs
	// several times.
	for _, how := range []string{"cancel", "cancel", "cancel", "cancel", "cancel", "cancel", "kill"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			url, db, a, w, cds := queueFixture(t, 2)
			watch, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close(ctx)
			now := time.Now()
			var ss []store.Settle
			for _, cd := range cds {
				ss = append(ss, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryPending, NextAt: now,
					Attempted: true, Failed: now,
					Attempt: &store.DeliveryAttempt{DeliveryID: cd.ID, WebhookID: w.ID, At: now, Status: 500, Class: "status"}})
			}
			release := holdWebhook(t, url, w.ID)
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			res := make(chan error, 1)
			go func() {
				_, err := db.SettleDeliveries(sctx, ss)
				res <- err
			}()
			waitLock(t, watch, "UPDATE webhooks SET failing_since")
			switch how {
			case "cancel":
				cancel()
			case "kill":
				var ok bool
				if err := watch.QueryRow(ctx, `SELECT bool_and(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()
					AND wait_event_type = 'Lock' AND ltrim(query) LIKE 'UPDATE webhooks SET failing_since%'`).Scan(&ok); err != nil || !ok {
					t.Fatalf("terminate: %v %v", ok, err)
				}
			}
			var serr error
			select {
			case serr = <-res:
			case <-time.After(60 * time.Second):
				release()
				t.Fatal("the cut settle did not return while the lock was held")
			}
			release()
			// The server may still be running what was sent: wait until
			// no backend of the database is in a transaction or running.
			waitQuiet(t, watch)
			if serr == nil {
				t.Fatal("a settle cut between its round trips returned no error")
			}
			t.Logf("the cut settle: %v", serr)
			for _, cd := range cds {
				dl, ats, err := db.Delivery(ctx, a, w.ID, cd.ID)
				if err != nil || dl.Attempts != 0 || len(ats) != 0 {
					t.Fatalf("after the cut settle (%v) delivery %s has %d attempts, %d kept (%v); want none", serr, cd.ID, dl.Attempts, len(ats), err)
				}
			}
			if n := idleInTx(t, watch); n != 0 {
				t.Errorf("%d connections left idle in a transaction", n)
			}
			errs, err := db.SettleDeliveries(ctx, ss)
			if err != nil || errs[0] != nil || errs[1] != nil {
				t.Fatalf("settling again: %v %v", errs, err)
			}
			if got, err := db.Webhook(ctx, a, w.ID); err != nil || got.FailingSince == nil {
				t.Fatalf("webhook after the failures: %+v %v", got.FailingSince, err)
			}
		})
	}
}

// TestAdvanceOwnerFromWebhookRow: AdvanceWebhooks runs with the system
// scope; each delivery's owner_id comes from the webhook's row, not from
// the Advance's Webhook as the caller passed it, so a value naming another
// owner (stale or mixed up) cannot file the deliveries where the webhook's
// own owner never sees them (row-level security) and the other owner's
// room counts them.
func TestAdvanceOwnerFromWebhookRow(t *testing.T) {
	ctx := context.Background()
	_, db, a, w, _ := queueFixture(t, 1)
	forged := w
	forged.OwnerID = "globex"
	errs, err := db.AdvanceWebhooks(ctx, []store.Advance{{Webhook: forged, Upto: w.Cursor + 1,
		Deliveries: []store.NewDelivery{{Seq: w.Cursor + 1, Kind: "created", Event: []byte(`{}`)}}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("advance: %v %v", errs, err)
	}
	page, err := db.Deliveries(ctx, a, w.ID, store.DeliveryQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 {
		t.Fatalf("the owner lists %d deliveries of its webhook, want 2 (the test one and the advanced one)", len(page.Items))
	}
}

// TestSettleFirstTripFailsRollsBack: a statement of the first round trip
// fails (a status PostgreSQL cannot store: reasons are cleaned, see
// TestSettleInvalidUTF8Cleaned) after another settle's
// update succeeded in the same pipeline: the caller gets the error,
// neither settle is kept, no connection is left in a transaction, and
// the good settle then succeeds alone.
func TestSettleFirstTripFailsRollsBack(t *testing.T) {
	ctx := context.Background()
	url, db, a, w, cds := queueFixture(t, 2)
	good := store.Settle{DeliveryID: cds[0].ID, Lease: cds[0].Lease, Status: store.DeliveryDelivered, Attempted: true,
		Attempt: &store.DeliveryAttempt{DeliveryID: cds[0].ID, WebhookID: w.ID, At: time.Now(), Status: 200, Class: "ok"}}
	bad := store.Settle{DeliveryID: cds[1].ID, Lease: cds[1].Lease, Status: store.DeliveryStatus("fail\xff"), Attempted: true}
	_, err := db.SettleDeliveries(ctx, []store.Settle{good, bad})
	if err == nil {
		t.Fatal("a settle group with a status PostgreSQL refuses: no error")
	}
	if se := (*store.Error)(nil); errors.As(err, &se) && se.Path == "context" {
		t.Errorf("a bad settle's error names the field %q: %v", se.Path, err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	waitQuiet(t, conn)
	if dl, ats, err := db.Delivery(ctx, a, w.ID, cds[0].ID); err != nil || dl.Status != store.DeliveryPending || len(ats) != 0 {
		t.Fatalf("the good settle of the failed group was kept: %s, %d attempts (%v)", dl.Status, len(ats), err)
	}
	errs, err := db.SettleDeliveries(ctx, []store.Settle{good})
	if err != nil || errs[0] != nil {
		t.Fatalf("settling the good one again: %v %v", errs, err)
	}
}
