package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// TestGateWriteNotStarvedByAgedQueue shows a write never gets the connection while queue transactions keep aging past queueMaxWait.
//
// A steady backlog of queue transactions (each back in line as soon as
// it is done) is modelled on a clock of the test's: n wait, each holds
// the connection for hold, so each has waited n*hold >= queueMaxWait by
// the time it is first in line. A write that comes should go after at
// most those that were waiting when it came: an aged queue transaction
// that came after the write must not go first.
func TestGateWriteNotStarvedByAgedQueue(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64 // ns since the start
	start := time.Unix(1e9, 0)
	g := &writeGate{now: func() time.Time { return start.Add(time.Duration(clock.Load())) }}
	if err := g.enter(ctx, false); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 64)
	enter := entrant(t, g, got)
	const (
		n    = 30
		hold = 5 * time.Millisecond // n*hold = 150 ms > queueMaxWait
	)
	for i := range n {
		enter(fmt.Sprintf("q%d", i), false)
		waitGate(t, g, 0, i+1)
		clock.Add(int64(hold))
	}
	enter("write", true)
	waitGate(t, g, 1, n)
	for step := 1; step <= 20*n; step++ {
		clock.Add(int64(hold))
		g.leave()
		name := <-got
		if name == "write" {
			if step > n+1 {
				t.Fatalf("the write went after %d handoffs; %d queue transactions were waiting when it came", step, n)
			}
			g.leave()
			return
		}
		// The queue transaction that went comes back to the line.
		enter(fmt.Sprintf("q%d", n+step), false)
		waitGate(t, g, 1, n)
	}
	t.Fatalf("the write still waits after %d handoffs, behind queue transactions that came after it", 20*n)
}

// TestWriteNotStarvedByQueueLoad shows a breadcrumb write waits as long as a steady flow of queue transactions lasts.
//
// 40 goroutines run queue transactions of ~4 ms back to back for up to
// 3 s (as a busy dispatcher's settles and claims would): each waits for
// the other 39, more than queueMaxWait. A create started meanwhile must
// finish well within a second.
func TestWriteNotStarvedByQueueLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs queue transactions for up to 3 s")
	}
	ctx := context.Background()
	d, a, _ := openWithWebhook(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := d.queueTx(ctx, func(*sql.Tx) error { time.Sleep(4 * time.Millisecond); return nil }); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	end := time.AfterFunc(3*time.Second, func() { close(stop) })
	time.Sleep(300 * time.Millisecond) // the flow settles
	began := time.Now()
	_, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{})
	took := time.Since(began)
	if end.Stop() {
		close(stop)
	}
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("took %v", took)
	if took > time.Second {
		t.Fatalf("a create waited %v behind queue transactions", took.Round(time.Millisecond))
	}
}

// pendingDelivery makes one pending delivery, due now, for w.
func pendingDelivery(t *testing.T, d *DB, a store.Actor, w store.Webhook) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	latest, _ := d.LatestSeq(ctx)
	cs, _, err := d.WebhookChanges(ctx, w, latest, 100, false)
	if err != nil || len(cs) != 1 {
		t.Fatalf("changes %d, %v", len(cs), err)
	}
	nd := store.NewDelivery{Seq: cs[0].Seq, Kind: string(cs[0].Kind), Event: []byte(`{}`)}
	if errs, err := d.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: latest, Deliveries: []store.NewDelivery{nd}}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
}

// TestClaimLeaseStartsWhenTaken shows a claim that waited for the writer returns a lease already run out, so the delivery is leased twice.
//
// The claim reads its candidates, then waits at the gate behind a long
// breadcrumb write; the store's clock moves on by more than the lease
// meanwhile. The lease it returns must still be held: a second claim
// right after must not take the same delivery, and the first claim's
// settle must not find its lease lost.
func TestClaimLeaseStartsWhenTaken(t *testing.T) {
	ctx := context.Background()
	d, a, w := openWithWebhook(t)
	var clock atomic.Int64
	start := time.Now()
	d.now = func() time.Time { return start.Add(time.Duration(clock.Load())) }
	pendingDelivery(t, d, a, w)

	release, done := holdWriter(d)
	const lease = time.Second
	type claimed struct {
		cds []store.ClaimedDelivery
		err error
	}
	first := make(chan claimed, 1)
	go func() {
		cds, err := d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 10, PerWebhook: 10, Lease: lease})
		first <- claimed{cds, err}
	}()
	waitGate(t, &d.gate, 0, 1) // the claim has read; it waits for the writer
	clock.Add(int64(2 * lease))
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c1 := <-first
	if c1.err != nil || len(c1.cds) != 1 {
		t.Fatalf("first claim: %d, %v", len(c1.cds), c1.err)
	}
	cds, err := d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 10, PerWebhook: 10, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	if len(cds) != 0 {
		t.Errorf("a second claim, at once, took delivery %s again: the first claim's lease ran out before it was returned", cds[0].ID)
	}
	errs, err := d.SettleDeliveries(ctx, []store.Settle{{DeliveryID: c1.cds[0].ID, Lease: c1.cds[0].Lease, Status: store.DeliveryDelivered}})
	if err != nil || errs[0] != nil {
		t.Errorf("settling the first claim's lease at once: %v %v", err, errs)
	}
}

// TestWriteWaitingAtGateRefusedOnceDamaged shows a write that waited at the gate while damage was found still writes to the damaged file.
//
// inTx checks for damage before it waits for the writer; a write queued
// behind a transaction, when a read meanwhile finds the file damaged,
// must be refused like every write after it.
func TestWriteWaitingAtGateRefusedOnceDamaged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	fill(t, path, 200)
	pages, size := tablePages(t, path, "breadcrumbs")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	damage(t, path, pages[len(pages)/3:2*len(pages)/3], size)

	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- d.queueTx(ctx, func(*sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	wrote := make(chan error, 1)
	go func() {
		_, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "queued", Context: json.RawMessage(`{}`)}, store.Idempotency{})
		wrote <- err
	}()
	waitGate(t, &d.gate, 1, 0)
	if _, err := d.List(ctx, a, store.Query{Limit: store.MaxLimit}); !store.IsCode(err, store.CodeCorrupt) {
		t.Fatalf("list over damaged pages: %v, want store_corrupt", err)
	}
	close(release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; !store.IsCode(err, store.CodeCorrupt) {
		t.Fatalf("a write that waited while the damage was found: %v, want store_corrupt", err)
	}
}

// TestAdvancesInOrder: advances of one webhook named several times, among
// others', are stored as if one after another; one whose compare-and-set
// fails stores none of its deliveries.
func TestAdvancesInOrder(t *testing.T) {
	ctx := context.Background()
	d, a, w1 := openWithWebhook(t)
	sel, _ := store.ParseSelector([]byte(`{}`))
	w2, _, err := d.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/2", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	c := w1.Cursor
	nd := func(seq int64) []store.NewDelivery {
		return []store.NewDelivery{{Seq: seq, Kind: "created", Event: []byte(`{}`)}}
	}
	at := func(w store.Webhook, cursor int64) store.Webhook { w.Cursor = cursor; return w }
	errs, err := d.AdvanceWebhooks(ctx, []store.Advance{
		{Webhook: at(w1, c), Upto: c + 10, Deliveries: nd(c + 1)},
		{Webhook: at(w2, c), Upto: c + 10, Deliveries: nd(c + 1)},
		{Webhook: at(w1, c+10), Upto: c + 20, Deliveries: nd(c + 11)},
		{Webhook: at(w1, c), Upto: c + 30, Deliveries: nd(c + 21)},    // moved meanwhile
		{Webhook: at(w2, c+99), Upto: c + 40, Deliveries: nd(c + 31)}, // never there
		{Webhook: at(w2, c+10), Upto: c + 20, Missed: c + 15, Deliveries: nd(c + 12)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, nil, nil, store.ErrCursorMoved, store.ErrCursorMoved, nil}
	for i := range want {
		if errs[i] != want[i] {
			t.Errorf("advance %d: %v, want %v", i, errs[i], want[i])
		}
	}
	for _, tc := range []struct {
		w            store.Webhook
		cursor, miss int64
		seqs         []int64
	}{{w1, c + 20, 0, []int64{c + 1, c + 11}}, {w2, c + 20, c + 15, []int64{c + 1, c + 12}}} {
		got, err := d.Webhook(ctx, a, tc.w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Cursor != tc.cursor || got.MissedThrough != tc.miss {
			t.Errorf("webhook %s: cursor %d missed %d, want %d and %d", tc.w.URL, got.Cursor, got.MissedThrough, tc.cursor, tc.miss)
		}
		page, err := d.Deliveries(ctx, a, tc.w.ID, store.DeliveryQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, dl := range page.Items {
			seqs = append([]int64{dl.Seq}, seqs...)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tc.seqs) {
			t.Errorf("webhook %s: deliveries of seqs %v, want %v", tc.w.URL, seqs, tc.seqs)
		}
	}
}

// TestClaimEndedAtGateLeasesNothing: a claim whose context ends while it
// waits for the writer returns the error and leases nothing.
func TestClaimEndedAtGateLeasesNothing(t *testing.T) {
	ctx := context.Background()
	d, a, w := openWithWebhook(t)
	pendingDelivery(t, d, a, w)
	release, done := holdWriter(d)
	cctx, cancel := context.WithCancel(ctx)
	claimed := make(chan error, 1)
	go func() {
		cds, err := d.ClaimDeliveries(cctx, store.DeliveryClaim{Limit: 10, PerWebhook: 10})
		if len(cds) != 0 {
			t.Errorf("a claim that failed returned %d deliveries", len(cds))
		}
		claimed <- err
	}()
	waitGate(t, &d.gate, 0, 1)
	cancel()
	if err := <-claimed; err == nil {
		t.Error("a claim whose context ended at the gate: no error")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w, q := gateWaiting(&d.gate); w != 0 || q != 0 {
		t.Fatalf("%d writes and %d queue transactions still wait", w, q)
	}
	cds, err := d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 10, PerWebhook: 10})
	if err != nil || len(cds) != 1 {
		t.Fatalf("after the ended claim: %d claimed, %v; want the delivery", len(cds), err)
	}
}

// TestCloseWithCheckpointerAtGate: Close does not wait for the gate the
// checkpointer waits at, and the last connection's close still
// checkpoints the log: nothing written is lost, no log is left.
func TestCloseWithCheckpointerAtGate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	// A write holds the gate; a batch of ~1.5 restartPages waits behind it,
	// and a queue transaction behind the batch, which gets the gate when
	// the batch commits: the checkpointer, woken by that commit with the
	// log past restartPages, waits behind the queue transaction.
	held, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() { first <- d.inTx(ctx, func(*sql.Tx) error { close(held); <-release; return nil }) }()
	<-held
	big := json.RawMessage(`{"text": "` + strings.Repeat("y", 64<<10) + `"}`)
	var cs []store.Creation
	n := 45 * restartPages / 1000 // ~33 pages each
	for i := range n {
		cs = append(cs, store.Creation{Actor: a, In: store.Breadcrumb{Title: fmt.Sprint(i), Context: big}})
	}
	batch := make(chan error, 1)
	go func() {
		res, err := d.CreateBatch(ctx, cs)
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
		batch <- err
	}()
	waitGate(t, &d.gate, 1, 0)
	qheld, qrelease := make(chan struct{}), make(chan struct{})
	queued := make(chan error, 1)
	go func() { queued <- d.queueTx(ctx, func(*sql.Tx) error { close(qheld); <-qrelease; return nil }) }()
	waitGate(t, &d.gate, 1, 1)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-batch; err != nil {
		t.Fatal(err)
	}
	<-qheld
	waitGate(t, &d.gate, 0, 1) // the checkpointer
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits while the checkpointer waits at the gate")
	}
	close(qrelease)
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the log is left after the last connection closed")
	}
	d, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	page, err := d.List(ctx, a, store.Query{Limit: store.MaxLimit})
	if err != nil || len(page.Items) != n {
		t.Fatalf("after reopening: %d records, %v; want %d", len(page.Items), err, n)
	}
}

// walFrames is the log's size in frames, asked of a connection of the
// test's own (a passive checkpoint, which never restarts the log).
func walFrames(t *testing.T, path string) int {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var busy, frames, copied int
	if err := c.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	return frames
}

// TestLogRestartsAfterLongReader: a reader holding an old snapshot keeps
// the log from being checkpointed, so it grows past restartPages; once
// the reader is done, a few small writes bring it back under
// restartPages (the checkpointer finishes the checkpoint, under the
// gate, and the next write starts the log over).
func TestLogRestartsAfterLongReader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	write := func(n, size int) {
		t.Helper()
		for range n {
			in := store.Breadcrumb{Title: "x", Context: json.RawMessage(`{"text": "` + strings.Repeat("z", size) + `"}`)}
			if _, _, err := d.Create(ctx, a, in, store.Idempotency{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(1, 10)
	reader, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow(`SELECT count(*) FROM breadcrumbs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	write(40*restartPages/1000, 32<<10)
	if f := walFrames(t, path); f < restartPages {
		t.Fatalf("with a reader on an old snapshot, the log is %d frames; the test needs more than %d", f, restartPages)
	}
	reader.Rollback()
	for range 5 {
		time.Sleep(2 * checkpointGap)
		write(1, 10)
	}
	time.Sleep(2 * checkpointGap)
	if f := walFrames(t, path); f >= restartPages {
		t.Fatalf("after the reader: the log is %d frames, not started over", f)
	}
}

// TestConcurrentClaimsLeaseEachOnce: claims that read their candidates
// beside each other's leases never both return one delivery; each is
// claimed once, and each claim's settle holds its lease.
func TestConcurrentClaimsLeaseEachOnce(t *testing.T) {
	ctx := context.Background()
	d, _, w := openWithWebhook(t)
	const n = 300
	var nds []store.NewDelivery
	for i := range n {
		nds = append(nds, store.NewDelivery{Seq: w.Cursor + 1 + int64(i), Kind: "created", Event: []byte(`{}`)})
	}
	if errs, err := d.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: w.Cursor + n, Deliveries: nds}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	var (
		mu      sync.Mutex
		claimed = map[string]int{}
		wg      sync.WaitGroup
	)
	deadline := time.Now().Add(30 * time.Second)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cds, err := d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 7, PerWebhook: 7})
				if err != nil {
					t.Error(err)
					return
				}
				if len(cds) == 0 {
					mu.Lock()
					all := len(claimed) == n
					mu.Unlock()
					if all {
						return
					}
					if time.Now().After(deadline) {
						t.Error("out of time: deliveries left leased")
						return
					}
					continue
				}
				var ss []store.Settle
				mu.Lock()
				for _, cd := range cds {
					claimed[cd.ID]++
					ss = append(ss, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryDelivered})
				}
				mu.Unlock()
				errs, err := d.SettleDeliveries(ctx, ss)
				if err != nil {
					t.Error(err)
					return
				}
				for i, e := range errs {
					if e != nil {
						t.Errorf("settle of %s: %v", ss[i].DeliveryID, e)
					}
				}
			}
		}()
	}
	wg.Wait()
	for id, k := range claimed {
		if k != 1 {
			t.Errorf("delivery %s claimed %d times", id, k)
		}
	}
	if len(claimed) != n {
		t.Errorf("%d deliveries claimed, want %d", len(claimed), n)
	}
}
