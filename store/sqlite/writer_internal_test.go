package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// gateWaiting is how many wait at g: writes and queue transactions.
func gateWaiting(g *writeGate) (writes, queue int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.writes), len(g.queue)
}

// waitGate waits until g has writes and queue waiters.
func waitGate(t *testing.T, g *writeGate, writes, queue int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if w, q := gateWaiting(g); w == writes && q == queue {
			return
		}
		if time.Now().After(deadline) {
			w, q := gateWaiting(g)
			t.Fatalf("waiting: %d writes and %d queue transactions, want %d and %d", w, q, writes, queue)
		}
	}
}

// entrant returns a function that enters g on a goroutine of its own, as
// a write or a queue transaction, and sends name to got once inside.
func entrant(t *testing.T, g *writeGate, got chan<- string) func(name string, write bool) {
	return func(name string, write bool) {
		go func() {
			if err := g.enter(context.Background(), write); err != nil {
				t.Error(err)
				return
			}
			got <- name
		}()
	}
}

// holdWriter holds the writing connection with a write until release is
// closed; done has the write's error.
func holdWriter(d *DB) (release chan struct{}, done <-chan error) {
	held, release := make(chan struct{}), make(chan struct{})
	out := make(chan error, 1)
	go func() {
		out <- d.inTx(context.Background(), func(*sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	return release, out
}

// TestWritesGoBeforeQueue: a breadcrumb write that finds the writing
// connection held by a queue transaction, with many more queue
// transactions waiting, goes next.
func TestWritesGoBeforeQueue(t *testing.T) {
	ctx := context.Background()
	d, _, _ := openWithWebhook(t)
	held, release := make(chan struct{}), make(chan struct{})
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.queueTx(ctx, func(*sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	const queued = 20
	for range queued {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.queueTx(ctx, func(*sql.Tx) error { note("queue"); return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	waitGate(t, &d.gate, 0, queued)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := d.inTx(ctx, func(*sql.Tx) error { note("write"); return nil }); err != nil {
			t.Error(err)
		}
	}()
	waitGate(t, &d.gate, 1, queued)
	close(release)
	wg.Wait()
	if len(order) != queued+1 || order[0] != "write" {
		t.Fatalf("order %v: the write should go first", order)
	}
}

// TestGateOrder: writes before queue transactions, each class oldest
// first, and a queue transaction that waited queueMaxWait before writes,
// then a write.
func TestGateOrder(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1e9, 0)
	g := &writeGate{now: func() time.Time { return now }}
	if err := g.enter(ctx, false); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 8)
	enter := entrant(t, g, got)
	enter("q1", false)
	waitGate(t, g, 0, 1)
	now = now.Add(time.Millisecond)
	enter("q2", false)
	waitGate(t, g, 0, 2)
	enter("w1", true)
	waitGate(t, g, 1, 2)
	enter("w2", true)
	waitGate(t, g, 2, 2)
	next := func(want string) {
		t.Helper()
		g.leave()
		if s := <-got; s != want {
			t.Fatalf("went next: %s, want %s", s, want)
		}
	}
	next("w1")
	now = now.Add(queueMaxWait) // q1 has waited queueMaxWait + 1ms, q2 queueMaxWait
	next("q1")
	next("w2") // after an aged queue transaction, a write
	next("q2")
	g.leave()
	if g.held {
		t.Fatal("the gate is held with no one in it")
	}
}

// TestGateCancel: a waiter whose context ends leaves the line, and the
// gate is never held by two, nor lost, whatever the timing of ends.
func TestGateCancel(t *testing.T) {
	g := &writeGate{}
	var (
		inside atomic.Int32
		wg     sync.WaitGroup
	)
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(300))*time.Microsecond)
			defer cancel()
			if err := g.enter(ctx, i%3 == 0); err != nil {
				return
			}
			if inside.Add(1) != 1 {
				t.Error("two inside the gate")
			}
			time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			inside.Add(-1)
			g.leave()
		}()
	}
	wg.Wait()
	if w, q := gateWaiting(g); g.held || w != 0 || q != 0 {
		t.Fatalf("after everyone: held %v, %d writes and %d queue transactions waiting", g.held, w, q)
	}
	// And it still opens.
	if err := g.enter(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	g.leave()
}

// TestClaimLeasesOnlyWhatIsStillDue: ClaimDeliveries reads its candidates
// before it takes the writer; what was leased, or whose webhook was
// paused, in between is left out of the claim, and no error is made of it.
func TestClaimLeasesOnlyWhatIsStillDue(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		between func(d *DB, a store.Actor, w store.Webhook) error
	}{
		{"leased by another claim", func(d *DB, _ store.Actor, _ store.Webhook) error {
			cds, err := d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 10, PerWebhook: 10})
			if err == nil && len(cds) != 2 {
				t.Errorf("the other claim took %d, want 2", len(cds))
			}
			return err
		}},
		{"webhook paused", func(d *DB, a store.Actor, w store.Webhook) error {
			paused := true
			_, err := d.UpdateWebhook(ctx, a, w.ID, store.WebhookPatch{Paused: &paused})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, a, w := openWithWebhook(t)
			for range 2 {
				if _, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
					t.Fatal(err)
				}
			}
			latest, _ := d.LatestSeq(ctx)
			cs, _, err := d.WebhookChanges(ctx, w, latest, 100, false)
			if err != nil || len(cs) != 2 {
				t.Fatalf("changes %d, %v", len(cs), err)
			}
			var nds []store.NewDelivery
			for _, c := range cs {
				nds = append(nds, store.NewDelivery{Seq: c.Seq, Kind: string(c.Kind), Event: []byte(`{}`)})
			}
			if errs, err := d.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: latest, Deliveries: nds}}); err != nil || errs[0] != nil {
				t.Fatal(err, errs)
			}
			once := true
			claimRead = func() {
				if once {
					once = false
					if err := tc.between(d, a, w); err != nil {
						t.Error(err)
					}
				}
			}
			t.Cleanup(func() { claimRead = nil })
			cds, err := d.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 10, PerWebhook: 10})
			if err != nil || len(cds) != 0 {
				t.Fatalf("claimed %d, %v; want none", len(cds), err)
			}
		})
	}
}

// TestCheckpointsOffTheWriter: the writing connection no longer
// checkpoints the log at SQLite's default 1,000 pages (a commit that did
// held every writer behind it for the copy): the checkpointer does, and
// keeps the log small.
func TestCheckpointsOffTheWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~12 MB twice")
	}
	ctx := context.Background()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	big := json.RawMessage(`{"text": "` + strings.Repeat("x", 16<<10) + `"}`)
	write := func(t *testing.T, d *DB) {
		for range 400 {
			if _, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "x", Context: big}, store.Idempotency{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	walSize := func(t *testing.T, path string) int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// 400 records of 16 KiB are ~38 MB of log (the record, its version
	// and its search rows). Checkpointed from the writer at SQLite's
	// default, the log would stay near 4 MB; left to the writer's
	// backstop, it grows to 40 MB; from the checkpointer, with the writer
	// adding pages as fast as it can, it starts over past restartPages.
	const bound = (restartPages + walBackstop) / 2 * 4096
	t.Run("writer alone", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ctxkit.db")
		d, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		d.ckpt.close()
		write(t, d)
		if n := walSize(t, path); n < bound {
			t.Fatalf("the log is %d bytes: the writer checkpointed it", n)
		}
	})
	t.Run("with the checkpointer", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ctxkit.db")
		d, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		write(t, d)
		if n := walSize(t, path); n >= bound {
			t.Fatalf("the log is %d bytes: not checkpointed", n)
		}
		if d.ckpt.ran.Load() == 0 {
			t.Fatal("no checkpoint ran")
		}
	})
}
