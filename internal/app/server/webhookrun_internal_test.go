package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// patchAfterRound is a store that changes a webhook's selector once the
// fan-out's first round is stored: a PATCH that lands mid catch-up.
type patchAfterRound struct {
	store.Store
	once  sync.Once
	patch func()
}

func (p *patchAfterRound) AdvanceWebhooks(ctx context.Context, as []store.Advance) ([]error, error) {
	errs, err := p.Store.AdvanceWebhooks(ctx, as)
	p.once.Do(p.patch)
	return errs, err
}

// TestFanOutReloadsWebhooksEachRound: a catch-up longer than one page
// reads the webhooks again each round, so a selector changed meanwhile
// applies from the next round on.
func TestFanOutReloadsWebhooksEachRound(t *testing.T) {
	s, _, _ := boundaryServer(t)
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	sel, err := store.ParseSelector([]byte(`{"any_tags": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := s.opts.Store.CreateWebhook(ctx, alice, store.Webhook{URL: "https://example.com/hook", Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	const events = fanOutPage + 40
	for i := 0; i < events; i++ {
		if _, _, err := s.opts.Store.Create(ctx, alice, store.Breadcrumb{Title: fmt.Sprintf("b%d", i), Tags: []string{"b"},
			Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	db := &patchAfterRound{Store: s.opts.Store}
	db.patch = func() {
		b, err := store.ParseSelector([]byte(`{"any_tags": ["b"]}`))
		if err == nil {
			_, err = db.Store.UpdateWebhook(ctx, alice, w.ID, store.WebhookPatch{Selector: b})
		}
		if err != nil {
			t.Error(err)
		}
	}
	s.opts.Store = db
	latest, err := db.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	made, err := s.hooks.fanOutAll(ctx, latest)
	if err != nil {
		t.Fatal(err)
	}
	// The first round (one page) passed under the old selector; the
	// rest under the new one.
	if made != events-fanOutPage {
		t.Fatalf("%d deliveries made, want %d: the rounds after the PATCH kept the old selector", made, events-fanOutPage)
	}
}
