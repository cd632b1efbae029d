package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// TestGuessedDeliveryIDStaysOwners: a delivery id anyone can work out
// (store.EventDeliveryID of a webhook id and an event seq) reads and
// redelivers only for the webhook's owner: another owner asking by it,
// under the webhook's id or under a webhook of their own, is told not found.
func TestGuessedDeliveryIDStaysOwners(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	acme := store.Actor{OwnerID: "acme", AgentID: "alice"}
	globex := store.Actor{OwnerID: "globex", AgentID: "carol"}
	sel, err := store.ParseSelector([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := s.CreateWebhook(ctx, acme, store.Webhook{URL: "https://example.com/hook", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := s.CreateWebhook(ctx, globex, store.Webhook{URL: "https://example.com/other", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if errs, err := s.AdvanceWebhooks(ctx, []store.Advance{{Webhook: w, Upto: 1,
		Deliveries: []store.NewDelivery{{Seq: 1, Kind: "created", At: at, Event: []byte(`{"seq":1}`)}}}}); err != nil || errs[0] != nil {
		t.Fatalf("advance: %v, %v", errs, err)
	}
	id := store.EventDeliveryID(w.ID, 1, at)
	if _, _, err := s.Delivery(ctx, acme, w.ID, id); err != nil {
		t.Fatalf("the owner's own delivery %s: %v", id, err)
	}
	notFound := func(err error) bool {
		return errors.Is(err, store.ErrDeliveryNotFound) || errors.Is(err, store.ErrWebhookNotFound)
	}
	for _, hook := range []string{w.ID, v.ID} {
		name := fmt.Sprintf("globex by %s under %s", id, hook)
		if dl, _, err := s.Delivery(ctx, globex, hook, id); !notFound(err) {
			t.Errorf("%s: read %+v, %v; want not found", name, dl, err)
		}
		if dl, err := s.Redeliver(ctx, globex, hook, id); !notFound(err) {
			t.Errorf("%s: redelivered %+v, %v; want not found", name, dl, err)
		}
	}
}
