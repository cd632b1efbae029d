package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
)

// TestReplicasClaimSettleExactlyOnce: two replicas claim and settle one
// queue at once with leases short enough to run out mid-settle, each
// group holding failures (failing_since updates on several webhooks),
// successes and a delivery settled twice, while trims and PATCHes run
// beside them. Every delivery ends delivered by exactly one successful
// settle, with one attempt kept per successful settle, and no call fails
// (a deadlock would be an error).
func TestReplicasClaimSettleExactlyOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := pgtest.Shared(t).NewDatabase(t)
	dbs := openReplicas(ctx, t, url)
	sel, _ := store.ParseSelector([]byte(`{}`))
	actors := []store.Actor{{OwnerID: "acme", AgentID: "alice"}, {OwnerID: "globex", AgentID: "bob"}}
	type hook struct {
		a store.Actor
		w store.Webhook
	}
	var hooks []hook
	const perHook = 40
	for i := range 4 {
		a := actors[i%2]
		w, _, err := dbs[0].CreateWebhook(ctx, a, store.Webhook{URL: fmt.Sprintf("https://example.com/%d", i), Selector: sel})
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, hook{a, w})
		for range perHook {
			if _, err := dbs[i%2].EnqueueTest(ctx, a, w.ID, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	total := perHook * len(hooks)
	var (
		mu        sync.Mutex
		delivered = map[string]int{} // successful delivered settles
		lost      int                // settles whose lease ran out and was taken
		firstErr  error
		done      = make(chan struct{})
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	finished := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered) == total || firstErr != nil
	}
	var wg sync.WaitGroup
	for r, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for !finished() && ctx.Err() == nil {
				cds, err := db.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 12, PerWebhook: 4, Lease: 30 * time.Millisecond})
				if err != nil {
					fail(fmt.Errorf("replica %d claim: %w", r, err))
					return
				}
				if len(cds) == 0 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				// Some groups outlive their leases, so the other replica
				// re-claims under them.
				time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
				var ss []store.Settle
				now := time.Now()
				for _, cd := range cds {
					s := store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Attempted: true,
						Attempt: &store.DeliveryAttempt{DeliveryID: cd.ID, WebhookID: cd.WebhookID, At: now, Class: "ok", Status: 200}}
					if cd.Attempts == 0 {
						s.Status, s.NextAt, s.Failed = store.DeliveryPending, now, now
						s.Attempt.Status, s.Attempt.Class = 500, "status"
					} else {
						s.Status = store.DeliveryDelivered
					}
					ss = append(ss, s)
				}
				ss = append(ss, ss[0]) // settled twice in one group
				errs, err := db.SettleDeliveries(ctx, ss)
				if err != nil {
					fail(fmt.Errorf("replica %d settle: %w", r, err))
					return
				}
				if errs[len(ss)-1] == nil {
					fail(fmt.Errorf("replica %d: a delivery settled twice in one group was settled twice", r))
					return
				}
				mu.Lock()
				for i, s := range ss[:len(ss)-1] {
					switch {
					case errs[i] == nil && s.Status == store.DeliveryDelivered:
						delivered[s.DeliveryID]++
					case errors.Is(errs[i], store.ErrLeaseLost):
						lost++
					case errs[i] != nil:
						if firstErr == nil {
							firstErr = errs[i]
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	// Beside them: trims, and PATCHes of each webhook (a row lock on it).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !finished() && ctx.Err() == nil; i++ {
			if _, err := dbs[i%2].TrimDeliveries(ctx, 1000); err != nil {
				fail(fmt.Errorf("trim: %w", err))
				return
			}
			h := hooks[i%len(hooks)]
			desc := fmt.Sprintf("patch %d", i)
			if _, err := dbs[(i+1)%2].UpdateWebhook(ctx, h.a, h.w.ID, store.WebhookPatch{Description: &desc}); err != nil {
				fail(fmt.Errorf("patch: %w", err))
				return
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		<-done
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	// The run only tests re-claims under a settle if some happened.
	t.Logf("%d settles found their lease taken", lost)
	if len(delivered) != total {
		t.Fatalf("%d of %d deliveries delivered", len(delivered), total)
	}
	for id, n := range delivered {
		if n != 1 {
			t.Errorf("delivery %s settled delivered %d times", id, n)
		}
	}
	for _, h := range hooks {
		page, err := dbs[0].Deliveries(ctx, h.a, h.w.ID, store.DeliveryQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, dl := range page.Items {
			_, ats, err := dbs[1].Delivery(ctx, h.a, h.w.ID, dl.ID)
			if err != nil {
				t.Fatal(err)
			}
			if dl.Status != store.DeliveryDelivered || dl.Attempts != len(ats) {
				t.Errorf("delivery %s: %s, %d attempts counted, %d kept", dl.ID, dl.Status, dl.Attempts, len(ats))
			}
		}
	}
}
