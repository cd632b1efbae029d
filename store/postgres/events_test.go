package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
)

// TestEventsInOrderUnderConcurrentWriters: writers on two replicas whose
// commits take a random while after their events are numbered (a
// deferred trigger sleeps in each COMMIT), so that they would end out of
// number order if nothing kept a reader from passing one still to
// commit. A stream of each replica, the webhook reads (WebhookChanges,
// bounded by a LatestSeq answer of the other replica, taking no lock)
// and LatestSeq must never pass a number that commits later: each stream
// yields every event once, in order, and no number at or below a
// LatestSeq answer appears after it.
func TestEventsInOrderUnderConcurrentWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := pgtest.Shared(t).NewDatabase(t)
	dbs := openReplicas(ctx, t, url)
	conn := connect(ctx, t, url)
	// The test's own reads see every owner's events.
	if _, err := conn.Exec(ctx, `SELECT set_config('ctxkit.system', 'on', false)`); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, `CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(random() * 0.02); RETURN NULL; END $$;
		CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW EXECUTE FUNCTION slow_commit()`)
	if err != nil {
		t.Fatal(err)
	}

	const writers, each = 8, 25
	actor := store.Actor{OwnerID: "o", AgentID: "w"}
	type streamed struct {
		seqs []int64
		err  error
	}
	streams := make([]chan streamed, len(dbs))
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	for i, db := range dbs {
		streams[i] = make(chan streamed, 1)
		go func() {
			var got streamed
			for e, err := range db.Events(sctx, actor, 0, nil) {
				if err != nil {
					if sctx.Err() == nil {
						got.err = err
					}
					break
				}
				got.seqs = append(got.seqs, e.Seq)
				if len(got.seqs) == writers*each {
					break
				}
			}
			streams[i] <- got
		}()
	}

	// While the writes go on, LatestSeq answers, with how many events
	// were stored at or below each just after it, and webhook reads: a
	// number at or below an answer stored later was passed.
	type answer struct{ seq, below int64 }
	var (
		mu      sync.Mutex
		answers []answer
		hook    []int64 // what a webhook that follows WebhookChanges gets
	)
	watchDone := make(chan error, 1)
	go func() {
		w := store.Webhook{OwnerID: actor.OwnerID, AgentID: actor.AgentID}
		watch, err := pgx.Connect(sctx, url)
		if err == nil {
			defer watch.Close(context.Background())
			_, err = watch.Exec(sctx, `SELECT set_config('ctxkit.system', 'on', false)`)
		}
		if err != nil {
			watchDone <- err
			return
		}
		for sctx.Err() == nil {
			l, err := dbs[1].LatestSeq(sctx)
			if err != nil {
				watchDone <- err
				return
			}
			var below int64
			if err := watch.QueryRow(sctx, `SELECT count(*) FROM events WHERE seq <= $1`, l).Scan(&below); err != nil {
				watchDone <- err
				return
			}
			// Read up to the answer, on the other replica, as the fan-out
			// does: a short page moves the cursor to the mark.
			cs, _, err := dbs[0].WebhookChanges(sctx, w, l, 64, false)
			if err != nil {
				watchDone <- err
				return
			}
			for _, c := range cs {
				if c.Seq > l {
					watchDone <- fmt.Errorf("a read bounded by %d returned %d", l, c.Seq)
					return
				}
			}
			mu.Lock()
			answers = append(answers, answer{l, below})
			for _, c := range cs {
				hook = append(hook, c.Seq)
				w.Cursor = c.Seq
			}
			if len(cs) < 64 {
				w.Cursor = max(w.Cursor, l)
			}
			mu.Unlock()
		}
		watchDone <- nil
	}()

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := dbs[i%len(dbs)]
			for j := range each {
				in := store.Breadcrumb{Title: fmt.Sprintf("w%d-%d", i, j), Context: json.RawMessage(`{}`)}
				if _, _, err := db.Create(ctx, actor, in, store.Idempotency{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var all []int64
	rows, err := conn.Query(ctx, `SELECT seq FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	all, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*each {
		t.Fatalf("%d events stored, want %d", len(all), writers*each)
	}
	for i, ch := range streams {
		select {
		case got := <-ch:
			if got.err != nil {
				t.Fatalf("stream %d: %v", i, got.err)
			}
			if fmt.Sprint(got.seqs) != fmt.Sprint(all) {
				t.Errorf("stream %d yielded %v,\nthe table holds %v", i, got.seqs, all)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("stream %d: not every event within 20 s (a number it passed committed later)", i)
		}
	}
	// Let the webhook reads catch up with the last writes, then stop.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(hook)
		mu.Unlock()
		if n >= len(all) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-watchDone; err != nil && ctx.Err() == nil && sctx.Err() == nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(hook) != fmt.Sprint(all) {
		t.Errorf("webhook reads yielded %v,\nthe table holds %v", hook, all)
	}
	if len(answers) == 0 {
		t.Fatal("no LatestSeq answers while writing")
	}
	// Every event numbered at or below an answer was stored when it was
	// given.
	for _, a := range answers {
		var below int64
		for _, s := range all {
			if s <= a.seq {
				below++
			}
		}
		if below != a.below {
			t.Fatalf("LatestSeq answered %d when %d events were stored at or below it; %d are now", a.seq, a.below, below)
		}
	}
}

// TestEventWritesCommitTogether: writes whose commits are slow (a
// deferred trigger sleeps 300 ms in each COMMIT, as a slow WAL flush
// would) overlap their commits; they do not queue on the event lock one
// commit at a time.
func TestEventWritesCommitTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn := connect(ctx, t, url)
	_, err = conn.Exec(ctx, `CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$;
		CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW EXECUTE FUNCTION slow_commit()`)
	if err != nil {
		t.Fatal(err)
	}
	const writers = 4
	actor := store.Actor{OwnerID: "o", AgentID: "w"}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := store.Breadcrumb{Title: fmt.Sprintf("w%d", i), Context: json.RawMessage(`{}`)}
			if _, _, err := db.Create(ctx, actor, in, store.Idempotency{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One after another they take 4 × 300 ms at least.
	if took >= writers*300*time.Millisecond*3/4 {
		t.Fatalf("%d writes with 300 ms commits took %v: their commits did not overlap", writers, took)
	}
}

// TestImportHoldsEventLockOnlyToCommit: an import holds the event lock
// from its events' insert to its commit only, not while its rows load or
// its ANALYZE waits: a reader of the events table (LatestSeq) is served
// meanwhile, where it would wait for the whole import and hold every
// writer of every replica behind it.
func TestImportHoldsEventLockOnlyToCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn := connect(ctx, t, url)
	// The import's ANALYZE waits for this lock, its rows loaded.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `LOCK TABLE search_terms IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	items := make([]store.Breadcrumb, 600) // two chunks
	for i := range items {
		items[i] = store.Breadcrumb{Title: fmt.Sprintf("i%d", i), Context: json.RawMessage(`{}`)}
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Import(ctx, store.Actor{OwnerID: "o", AgentID: "a"}, items)
		done <- err
	}()
	probe := connect(ctx, t, url)
	for waiting := 0; waiting == 0; {
		select {
		case err := <-done:
			t.Fatalf("the import ended before its ANALYZE waited: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if err := probe.QueryRow(ctx, `SELECT COUNT(*) FROM pg_locks WHERE NOT granted AND relation = 'search_terms'::regclass`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	seq, err := db.LatestSeq(rctx)
	rcancel()
	if err != nil || seq != 0 {
		t.Errorf("LatestSeq while an import waits for its ANALYZE: %d, %v", seq, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seq, err := db.LatestSeq(ctx); err != nil || seq != int64(len(items)) {
		t.Fatalf("LatestSeq after the import: %d, %v; want %d", seq, err, len(items))
	}
}

// connect is a connection of the test's own to url, closed when the test
// ends.
func connect(ctx context.Context, t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// listen is a connection that LISTENs on the channel of changes.
func listen(ctx context.Context, t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c := connect(ctx, t, url)
	if _, err := c.Exec(ctx, `LISTEN `+postgres.Channel); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCloseSendsWaitingNotifications: a store closed right after a write
// still tells the other replicas of it; their streams would otherwise
// wait for their poll.
func TestCloseSendsWaitingNotifications(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := pgtest.Shared(t).NewDatabase(t)
	l := listen(ctx, t, url)
	const rounds = 8
	for i := range rounds {
		db, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		in := store.Breadcrumb{Title: fmt.Sprintf("c%d", i), Context: json.RawMessage(`{}`)}
		if _, _, err := db.Create(ctx, store.Actor{OwnerID: "o", AgentID: "a"}, in, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	for i := range rounds {
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := l.WaitForNotification(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("%d of %d writes notified before their store closed: %v", i, rounds, err)
		}
	}
}

// TestNotificationsPastTheBound: more changes than the notifications a
// store keeps waiting (an import of many breadcrumbs) still wake the
// other replicas' readers, with one notification that names no owner.
func TestNotificationsPastTheBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	url := pgtest.Shared(t).NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := listen(ctx, t, url)
	items := make([]store.Breadcrumb, 10_001)
	for i := range items {
		items[i] = store.Breadcrumb{Title: "i", Context: json.RawMessage(`{}`)}
	}
	if _, err := db.Import(ctx, store.Actor{OwnerID: "o", AgentID: "a"}, items); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	n, err := l.WaitForNotification(wctx)
	if err != nil {
		t.Fatalf("an import of %d breadcrumbs notified nothing: %v", len(items), err)
	}
	var p struct {
		Owner *string `json:"owner"`
	}
	if json.Unmarshal([]byte(n.Payload), &p) == nil && p.Owner != nil {
		t.Fatalf("payload %s names one owner: the other changes' owners are not woken", n.Payload)
	}
}
