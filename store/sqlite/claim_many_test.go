package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// TestClaimManyDeliveries: a claim of more due deliveries than one SQLite
// statement takes parameters (32,766) is leased whole, in chunks.
func TestClaimManyDeliveries(t *testing.T) {
	const n = 33000
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	sel, err := store.ParseSelector([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := s.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/hook", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]store.NewDelivery, n)
	for i := range ds {
		ds[i] = store.NewDelivery{Seq: int64(i + 1), Kind: "created", Event: []byte(fmt.Sprintf(`{"seq":%d}`, i+1))}
	}
	errs, err := s.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: n, Deliveries: ds}})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	got, err := s.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: n, PerWebhook: n, Lease: time.Minute})
	if err != nil {
		t.Fatalf("claim of %d due deliveries: %v", n, err)
	}
	if len(got) != n {
		t.Fatalf("%d claimed, want %d", len(got), n)
	}
}
