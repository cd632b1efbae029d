package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
)

// TestWebhookReplicas: two stores on one database (two replicas) fan out
// and claim at once: each event is made ready once per webhook, and no
// delivery is leased to both.
func TestWebhookReplicas(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	dbs := openReplicas(ctx, t, url)
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	sel, _ := store.ParseSelector([]byte(`{}`))
	w, _, err := dbs[0].CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		if _, _, err := dbs[1].Create(ctx, a, store.Breadcrumb{Title: "x", Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	// Both replicas fan out from the same cursor: one wins.
	mark, err := dbs[0].LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, _, err := db.WebhookChanges(ctx, w, mark, 100, false)
			if err != nil {
				errs[i] = err
				return
			}
			var ds []store.NewDelivery
			for _, c := range cs {
				ds = append(ds, store.NewDelivery{Seq: c.Seq, Kind: string(c.Kind), Event: []byte(`{}`)})
			}
			res, err := db.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: cs[len(cs)-1].Seq, Deliveries: ds}})
			if err == nil {
				err = res[0]
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrCursorMoved):
			t.Fatal(err)
		}
	}
	if won != 1 {
		t.Fatalf("%d fan-outs won, want 1", won)
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
	)
	for _, db := range dbs {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 15 {
					got, err := db.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 5, PerWebhook: 100, Lease: time.Minute})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, d := range got {
						seen[d.ID]++
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if len(seen) != 60 {
		t.Fatalf("%d deliveries claimed, want 60", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("delivery %s leased %d times", id, n)
		}
	}
}

// openReplicas opens two stores on the database at url, as two replicas
// of ctxkit would, closed when the test ends.
func openReplicas(ctx context.Context, t *testing.T, url string) [2]*postgres.DB {
	t.Helper()
	var dbs [2]*postgres.DB
	for i := range dbs {
		db, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs
}
