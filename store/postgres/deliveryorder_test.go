package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// TestDeliveriesNewestFirstBesideTestMessages shows that a webhook's
// deliveries are no longer listed newest first, nor its oldest failed
// ones redelivered first, once event deliveries (ids from
// store.EventDeliveryID, led by the event's seq) sit beside test
// messages or deliveries made before them (UUIDv7, led by a clock).
func TestDeliveriesNewestFirstBesideTestMessages(t *testing.T) {
	deliveryOrder(t, open(t))
}

// deliveryOrder: a test message, then two event deliveries made later;
// the list must be newest first by creation, and RedeliverFailed(1) of
// the three, all failed, must take the oldest, the test message.
func deliveryOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	sel, err := store.ParseSelector([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := s.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/hook", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	probe, err := s.EnqueueTest(ctx, a, w.ID, []byte(`{"test":true}`))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the events, and their deliveries, come strictly later
	var nds []store.NewDelivery
	for seq := int64(1); seq <= 2; seq++ {
		nds = append(nds, store.NewDelivery{Seq: seq, Kind: "created", At: time.Now(), Event: []byte(fmt.Sprintf(`{"seq":%d}`, seq))})
	}
	if errs, err := s.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: 2, Deliveries: nds}}); err != nil || errs[0] != nil {
		t.Fatalf("advance: %v, %v", errs, err)
	}
	page, err := s.Deliveries(ctx, a, w.ID, store.DeliveryQuery{})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("deliveries: %+v, %v", page.Items, err)
	}
	var got []string
	for _, dl := range page.Items {
		got = append(got, fmt.Sprintf("seq %d at %s", dl.Seq, dl.CreatedAt.Format(time.StampMicro)))
	}
	if page.Items[0].Seq != 2 || page.Items[1].Seq != 1 || page.Items[2].ID != probe.ID {
		t.Errorf("deliveries not newest first: %v", got)
	}

	// All three fail, the test message first; redeliver the oldest one.
	cds, err := s.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 3, PerWebhook: 3, Lease: time.Hour})
	if err != nil || len(cds) != 3 {
		t.Fatalf("claimed %d, %v", len(cds), err)
	}
	var ss []store.Settle
	for _, cd := range cds {
		ss = append(ss, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryFailed,
			Attempted: true, Failed: time.Now(), Reason: "gone"})
	}
	if errs, err := s.SettleDeliveries(ctx, ss); err != nil {
		t.Fatal(err)
	} else {
		for _, e := range errs {
			if e != nil {
				t.Fatal(e)
			}
		}
	}
	if n, err := s.RedeliverFailed(ctx, a, w.ID, 1); err != nil || n != 1 {
		t.Fatalf("redelivered %d, %v", n, err)
	}
	again, _, err := s.Delivery(ctx, a, w.ID, probe.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != store.DeliveryPending {
		t.Errorf("RedeliverFailed(1) left the oldest failed delivery (the test message) %s; it took a newer one", again.Status)
	}
}
