package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
	enter := func(name string, write bool) {
		go func() {
			if err := g.enter(ctx, write); err != nil {
				t.Error(err)
				return
			}
			got <- name
		}()
	}
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

	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- d.inTx(ctx, func(*sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
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
