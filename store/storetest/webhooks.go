package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

func selectorOf(t *testing.T, js string) *store.Selector {
	t.Helper()
	sel, err := store.ParseSelector([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func newHook(t *testing.T, s store.Store, a store.Actor, sel string) (store.Webhook, store.WebhookKeys) {
	t.Helper()
	w, keys, err := s.CreateWebhook(context.Background(), a, store.Webhook{URL: "https://example.com/hook", Selector: selectorOf(t, sel)})
	if err != nil {
		t.Fatal(err)
	}
	return w, keys
}

// latest is s's LatestSeq: the mark a fan-out reads up to.
func latest(t *testing.T, s store.Store) int64 {
	t.Helper()
	l, err := s.LatestSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fanOut moves w's cursor over every change it may see, making one
// delivery per change its selector passes (no context conditions here),
// and returns the webhook as stored after.
func fanOut(t *testing.T, s store.Store, a store.Actor, w store.Webhook) store.Webhook {
	t.Helper()
	ctx := context.Background()
	cs, _, err := s.WebhookChanges(ctx, w, latest(t, s), 100, false)
	if err != nil {
		t.Fatal(err)
	}
	upto := w.Cursor
	var ds []store.NewDelivery
	for _, c := range cs {
		upto = c.Seq
		if w.Selector.Match(&c.Event, nil) {
			ds = append(ds, store.NewDelivery{Seq: c.Seq, Kind: string(c.Kind), At: c.At, Event: []byte(fmt.Sprintf(`{"seq":%d}`, c.Seq))})
		}
	}
	if err := advance(s, w, upto, 0, ds); err != nil {
		t.Fatal(err)
	}
	w, err = s.Webhook(ctx, a, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// advance is one webhook's AdvanceWebhooks.
func advance(s store.Store, w store.Webhook, upto, missed int64, ds []store.NewDelivery) error {
	errs, err := s.AdvanceWebhooks(context.Background(), []store.Advance{{Webhook: w, Upto: upto, Missed: missed, Deliveries: ds}})
	if err != nil {
		return err
	}
	return errs[0]
}

// settleOne is one delivery's SettleDeliveries.
func settleOne(s store.Store, st store.Settle) error {
	errs, err := s.SettleDeliveries(context.Background(), []store.Settle{st})
	if err != nil {
		return err
	}
	return errs[0]
}

func testWebhooks(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	bob := store.Actor{OwnerID: "acme", AgentID: "bob"}
	other := store.Actor{OwnerID: "globex", AgentID: "alice"}
	for _, c := range []struct {
		in   store.Webhook
		path string
	}{
		{store.Webhook{Selector: selectorOf(t, `{}`)}, "url"},
		{store.Webhook{URL: "https://x/" + strings.Repeat("a", store.MaxWebhookURL), Selector: selectorOf(t, `{}`)}, "url"},
		{store.Webhook{URL: "https://x/a b", Selector: selectorOf(t, `{}`)}, "url"},
		{store.Webhook{URL: "https://x/", Selector: selectorOf(t, `{}`), Payload: "raw"}, "payload"},
		{store.Webhook{URL: "https://x/", Selector: selectorOf(t, `{}`), Description: strings.Repeat("d", store.MaxWebhookDescription+1)}, "description"},
		{store.Webhook{URL: "https://x/"}, "selector"},
	} {
		_, _, err := s.CreateWebhook(ctx, alice, c.in)
		var se *store.Error
		if !errors.As(err, &se) || se.Code != store.CodeInvalid || se.Path != c.path {
			t.Errorf("create %+v: %v, want invalid at %s", c.in.Payload, err, c.path)
		}
	}
	w, keys := newHook(t, s, alice, `{"any_tags":["deploy"]}`)
	if !strings.HasPrefix(keys.Current, "whsec_") || keys.Previous != "" {
		t.Fatalf("keys %+v", keys)
	}
	if w.Payload != store.PayloadView || w.Paused || w.OwnerID != "acme" || w.AgentID != "alice" {
		t.Fatalf("webhook %+v", w)
	}
	// Another agent, another owner: not found, as an unknown id.
	for _, a := range []store.Actor{bob, other} {
		if _, err := s.Webhook(ctx, a, w.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s/%s reads alice's webhook: %v", a.OwnerID, a.AgentID, err)
		}
		if err := s.DeleteWebhook(ctx, a, w.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s/%s deletes alice's webhook: %v", a.OwnerID, a.AgentID, err)
		}
		if _, err := s.UpdateWebhook(ctx, a, w.ID, store.WebhookPatch{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s/%s updates alice's webhook: %v", a.OwnerID, a.AgentID, err)
		}
		if _, err := s.Deliveries(ctx, a, w.ID, store.DeliveryQuery{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s/%s lists alice's deliveries: %v", a.OwnerID, a.AgentID, err)
		}
		if hooks, err := s.Webhooks(ctx, a); err != nil || len(hooks) != 0 {
			t.Errorf("%s/%s lists %d webhooks, %v", a.OwnerID, a.AgentID, len(hooks), err)
		}
	}
	if _, err := s.Webhook(ctx, alice, "not-a-uuid"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bad id: %v", err)
	}
	paused, desc := true, "ops"
	w2, err := s.UpdateWebhook(ctx, alice, w.ID, store.WebhookPatch{Paused: &paused, Description: &desc, Selector: selectorOf(t, `{"kinds":["created"]}`)})
	if err != nil || !w2.Paused || w2.PausedReason == "" || w2.Description != "ops" || len(w2.Selector.Kinds) != 1 {
		t.Fatalf("update: %+v, %v", w2, err)
	}
	bad := strings.Repeat("u", store.MaxWebhookURL+1)
	if _, err := s.UpdateWebhook(ctx, alice, w.ID, store.WebhookPatch{URL: &bad}); !store.IsCode(err, store.CodeInvalid) {
		t.Errorf("long url patch: %v", err)
	}
	_, rot, err := s.RotateWebhookSecret(ctx, alice, w.ID, 24*time.Hour)
	if err != nil || rot.Previous != keys.Current || rot.Current == keys.Current || time.Until(rot.PreviousUntil) < 23*time.Hour {
		t.Fatalf("rotate: %+v, %v", rot, err)
	}
	hooks, err := s.Webhooks(ctx, alice)
	if err != nil || len(hooks) != 1 || hooks[0].ID != w.ID {
		t.Fatalf("list: %v %v", hooks, err)
	}
	if b, _ := json.Marshal(hooks[0]); strings.Contains(string(b), "whsec_") {
		t.Fatalf("a listing shows a secret: %s", b)
	}
	// The per-agent bound.
	for i := 1; i < store.MaxWebhooks; i++ {
		newHook(t, s, alice, `{}`)
	}
	if _, _, err := s.CreateWebhook(ctx, alice, store.Webhook{URL: "https://x/", Selector: selectorOf(t, `{}`)}); !errors.Is(err, store.ErrTooManyWebhooks) {
		t.Fatalf("webhook %d: %v", store.MaxWebhooks+1, err)
	}
	newHook(t, s, bob, `{}`) // bob has a bound of his own
	if err := s.DeleteWebhook(ctx, alice, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Webhook(ctx, alice, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted webhook: %v", err)
	}
}

func claim(t *testing.T, s store.Store, lease time.Duration) []store.ClaimedDelivery {
	t.Helper()
	out, err := s.ClaimDeliveries(context.Background(), store.DeliveryClaim{Limit: 100, PerWebhook: 100, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func testWebhookQueue(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	bob := store.Actor{OwnerID: "acme", AgentID: "bob"}
	create(t, s, alice, crumb("before", "deploy")) // before the webhook: not delivered
	w, keys := newHook(t, s, alice, `{"any_tags":["deploy"]}`)
	create(t, s, alice, crumb("one", "deploy"))
	create(t, s, alice, crumb("skip", "other"))
	priv := crumb("bob's secret", "deploy")
	priv.Visibility = store.Private
	create(t, s, bob, priv) // bob's private record: alice's webhook never sees it
	create(t, s, alice, crumb("two", "deploy"))

	cs, missed, err := s.WebhookChanges(ctx, w, latest(t, s), 100, false)
	if err != nil || missed != 0 || len(cs) != 3 {
		t.Fatalf("changes: %d, missed %d, %v", len(cs), missed, err)
	}
	w = fanOut(t, s, alice, w)
	// A second fan-out from the old cursor (another replica) is refused.
	stale := w
	stale.Cursor = 0
	if err := advance(s, stale, 99, 0, nil); !errors.Is(err, store.ErrCursorMoved) {
		t.Fatalf("stale advance: %v", err)
	}
	got := claim(t, s, time.Minute)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	if got[0].Keys.Current != keys.Current || got[0].URL != "https://example.com/hook" || got[0].Lease == "" || len(got[0].Body) == 0 {
		t.Fatalf("claimed %+v", got[0])
	}
	if again := claim(t, s, time.Minute); len(again) != 0 {
		t.Fatalf("leased deliveries claimed again: %d", len(again))
	}
	// Delivered; retried; a lost lease.
	if err := settleOne(s, store.Settle{DeliveryID: got[0].ID, Lease: got[0].Lease, Status: store.DeliveryDelivered, Attempted: true}); err != nil {
		t.Fatal(err)
	}
	if err := settleOne(s, store.Settle{DeliveryID: got[0].ID, Lease: got[0].Lease, Status: store.DeliveryDelivered, Attempted: true}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("settled twice: %v", err)
	}
	start := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
	if err := settleOne(s, store.Settle{DeliveryID: got[1].ID, Lease: got[1].Lease, Status: store.DeliveryPending,
		NextAt: time.Now().Add(time.Hour), Attempted: true, Failed: start}); err != nil {
		t.Fatal(err)
	}
	if again := claim(t, s, time.Minute); len(again) != 0 {
		t.Fatalf("a retry due in an hour was claimed: %d", len(again))
	}
	if w, _ = s.Webhook(ctx, alice, w.ID); w.FailingSince == nil || !w.FailingSince.Equal(start) {
		t.Fatalf("failing since %v, want %v", w.FailingSince, start)
	}
	if err := s.RecordAttempt(ctx, store.DeliveryAttempt{DeliveryID: got[1].ID, WebhookID: w.ID, At: start, Status: 503, Class: "status",
		LatencyMS: 12.5, Excerpt: strings.Repeat("x", 3000), Verdict: "retry"}); err != nil {
		t.Fatal(err)
	}
	dl, ats, err := s.Delivery(ctx, alice, w.ID, got[1].ID)
	if err != nil || dl.Attempts != 1 || dl.Status != store.DeliveryPending || len(ats) != 1 || len(ats[0].Excerpt) != store.MaxAttemptExcerpt || ats[0].Status != 503 {
		t.Fatalf("delivery %+v attempts %+v: %v", dl, ats, err)
	}
	if _, _, err := s.Delivery(ctx, bob, w.ID, got[1].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob reads alice's delivery: %v", err)
	}
	// The owner pauses on the failing horizon; a pause from before the
	// current run of failures began is stale.
	if err := s.PauseFailing(ctx, w.ID, start.Add(-time.Hour), "stale"); err != nil {
		t.Fatal(err)
	}
	if w, _ = s.Webhook(ctx, alice, w.ID); w.Paused {
		t.Fatal("a stale pause took")
	}
	if err := s.PauseFailing(ctx, w.ID, start, "failing for a day"); err != nil {
		t.Fatal(err)
	}
	if w, _ = s.Webhook(ctx, alice, w.ID); !w.Paused || w.PausedReason != "failing for a day" {
		t.Fatalf("not paused: %+v", w)
	}
	// Dead-letter list, redeliver one and all.
	page, err := s.Deliveries(ctx, alice, w.ID, store.DeliveryQuery{Status: store.DeliveryDelivered})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != got[0].ID {
		t.Fatalf("delivered: %+v %v", page, err)
	}
	dl, err = s.Redeliver(ctx, alice, w.ID, got[0].ID)
	if err != nil || dl.Status != store.DeliveryPending || dl.Attempts != 0 {
		t.Fatalf("redeliver: %+v %v", dl, err)
	}
	if _, err := s.Redeliver(ctx, alice, w.ID, got[0].ID); !store.IsCode(err, store.CodeInvalid) {
		t.Fatalf("redeliver a pending one: %v", err)
	}
	resume := false
	if w, err = s.UpdateWebhook(ctx, alice, w.ID, store.WebhookPatch{Paused: &resume}); err != nil || w.Paused || w.FailingSince != nil {
		t.Fatalf("resume: %+v %v", w, err)
	}
	got = claim(t, s, time.Minute)
	if len(got) != 1 {
		t.Fatalf("after resume claimed %d, want 1", len(got))
	}
	if err := settleOne(s, store.Settle{DeliveryID: got[0].ID, Lease: got[0].Lease, Status: store.DeliveryFailed,
		Attempted: true, Failed: time.Now(), Reason: "final: 404"}); err != nil {
		t.Fatal(err)
	}
	page, err = s.Deliveries(ctx, alice, w.ID, store.DeliveryQuery{Status: store.DeliveryFailed})
	if err != nil || len(page.Items) != 1 || page.Items[0].Reason != "final: 404" {
		t.Fatalf("failed: %+v %v", page, err)
	}
	if n, err := s.RedeliverFailed(ctx, alice, w.ID, 1000); err != nil || n != 1 {
		t.Fatalf("redeliver failed: %d %v", n, err)
	}
	// Paging.
	all, err := s.Deliveries(ctx, alice, w.ID, store.DeliveryQuery{Limit: 1})
	if err != nil || len(all.Items) != 1 || all.NextCursor == "" {
		t.Fatalf("page 1: %+v %v", all, err)
	}
	next, err := s.Deliveries(ctx, alice, w.ID, store.DeliveryQuery{Limit: 1, Cursor: all.NextCursor})
	if err != nil || len(next.Items) != 1 || next.Items[0].ID >= all.Items[0].ID {
		t.Fatalf("page 2: %+v %v", next, err)
	}
	for _, q := range []store.DeliveryQuery{{Status: "lost"}, {Limit: -1}, {Limit: store.MaxDeliveryPage + 1}, {Cursor: "x"}} {
		if _, err := s.Deliveries(ctx, alice, w.ID, q); !store.IsCode(err, store.CodeInvalid) {
			t.Errorf("query %+v: %v", q, err)
		}
	}
	// Attempts are kept DeliveryRetention, then Expire prunes them.
	old := time.Now().Add(-store.DeliveryRetention - time.Hour)
	if err := s.RecordAttempt(ctx, store.DeliveryAttempt{DeliveryID: got[0].ID, WebhookID: w.ID, At: old, Class: "ok", Verdict: "delivered"}); err != nil {
		t.Fatal(err)
	}
	if _, ats, _ := s.Delivery(ctx, alice, w.ID, got[0].ID); len(ats) != 1 {
		t.Fatalf("attempts before expiry: %d", len(ats))
	}
	if _, err := s.Expire(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ats, _ := s.Delivery(ctx, alice, w.ID, got[0].ID); len(ats) != 0 {
		t.Fatalf("an attempt older than %s survived Expire", store.DeliveryRetention)
	}
	// A test message.
	tm, err := s.EnqueueTest(ctx, alice, w.ID, []byte(`{"type":"test"}`))
	if err != nil || tm.Kind != "test" || tm.Status != store.DeliveryPending {
		t.Fatalf("test: %+v %v", tm, err)
	}
}

// testWebhookLease: a lease that runs out makes the delivery due again;
// the first claimant's settle is then refused.
func testWebhookLease(t *testing.T, s store.Store) {
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	w, _ := newHook(t, s, alice, `{}`)
	create(t, s, alice, crumb("one"))
	fanOut(t, s, alice, w)
	first := claim(t, s, time.Millisecond)
	if len(first) != 1 {
		t.Fatalf("claimed %d", len(first))
	}
	var second []store.ClaimedDelivery
	deadline := time.Now().Add(30 * time.Second)
	for len(second) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		second = claim(t, s, time.Minute)
	}
	if len(second) != 1 || second[0].ID != first[0].ID || second[0].Lease == first[0].Lease {
		t.Fatalf("after the lease ran out: %+v", second)
	}
	// In one batch: the first claimant's settle is refused alone; the
	// second's, with its attempt, is kept.
	errs, err := s.SettleDeliveries(context.Background(), []store.Settle{
		{DeliveryID: first[0].ID, Lease: first[0].Lease, Status: store.DeliveryDelivered},
		{DeliveryID: second[0].ID, Lease: second[0].Lease, Status: store.DeliveryPending, NextAt: time.Now(), Attempted: true, Failed: time.Now(),
			Attempt: &store.DeliveryAttempt{DeliveryID: second[0].ID, WebhookID: w.ID, At: time.Now(), Status: 500, Class: "status", Verdict: "retry"}},
	})
	if err != nil || !errors.Is(errs[0], store.ErrLeaseLost) || errs[1] != nil {
		t.Fatalf("batch settle: %v %v", errs, err)
	}
	if _, ats, err := s.Delivery(context.Background(), alice, w.ID, second[0].ID); err != nil || len(ats) != 1 || ats[0].Status != 500 {
		t.Fatalf("the batch's attempt: %+v %v", ats, err)
	}
	second = claim(t, s, time.Minute)
	if len(second) != 1 {
		t.Fatalf("the retried delivery: %+v", second)
	}
	if err := settleOne(s, store.Settle{DeliveryID: second[0].ID, Lease: second[0].Lease, Status: store.DeliveryPending}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if again := claim(t, s, time.Minute); len(again) != 1 || again[0].Attempts != 1 {
		t.Fatalf("a released delivery: %+v", again)
	}
}

// testWebhookClaimFairness: an owner's webhooks together get at most
// PerOwner less those in flight, other owners are not held back, a
// claimed delivery carries its owner, and a failing webhook gets one
// attempt in flight at most.
func testWebhookClaimFairness(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	mallory := store.Actor{OwnerID: "evil", AgentID: "mallory"}
	var evil []store.Webhook
	for range 3 {
		w, _ := newHook(t, s, mallory, `{}`)
		evil = append(evil, w)
	}
	good, _ := newHook(t, s, alice, `{}`)
	for i := range 10 {
		create(t, s, mallory, crumb(fmt.Sprint("m", i)))
	}
	for i := range 10 {
		create(t, s, alice, crumb(fmt.Sprint("a", i)))
	}
	for _, w := range evil {
		fanOut(t, s, mallory, w)
	}
	fanOut(t, s, alice, good)
	// mallory's deliveries are the oldest due: without the owner bound
	// they would fill the claim.
	c, err := s.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 10, PerWebhook: 4, PerOwner: 5,
		OwnerBusy: map[string]int{"evil": 2}, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, d := range c {
		per[d.OwnerID]++
	}
	if per["evil"] != 3 || per["acme"] != 4 || len(per) != 2 {
		t.Fatalf("claimed per owner %v, want evil:3 acme:4", per)
	}
	for _, d := range c {
		if d.WebhookID == good.ID && d.OwnerID != "acme" {
			t.Fatalf("alice's delivery carries owner %q", d.OwnerID)
		}
	}
	// One of alice's fails: her webhook is failing, one in flight at most.
	var first store.ClaimedDelivery
	for _, d := range c {
		if d.WebhookID == good.ID {
			if first.ID == "" {
				first = d
				if err := settleOne(s, store.Settle{DeliveryID: d.ID, Lease: d.Lease, Status: store.DeliveryPending, NextAt: time.Now(),
					Attempted: true, Failed: time.Now()}); err != nil {
					t.Fatal(err)
				}
				continue
			}
		}
		if err := settleOne(s, store.Settle{DeliveryID: d.ID, Lease: d.Lease, Status: store.DeliveryPending}); err != nil {
			t.Fatal(err)
		}
	}
	c, err = s.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 100, PerWebhook: 4, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	per = map[string]int{}
	for _, d := range c {
		per[d.WebhookID]++
		if d.WebhookID == good.ID && d.FailingSince.IsZero() {
			t.Errorf("a failing webhook's delivery has no FailingSince")
		}
	}
	if per[good.ID] != 1 || len(c) != 13 {
		t.Fatalf("failing webhook: %d claimed (of %d in all), want 1 (of 13)", per[good.ID], len(c))
	}
	if c2, err := s.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 100, PerWebhook: 4, Busy: map[string]int{good.ID: 1},
		Lease: time.Minute}); err != nil {
		t.Fatal(err)
	} else {
		for _, d := range c2 {
			if d.WebhookID == good.ID {
				t.Fatalf("failing webhook with one in flight: claimed another")
			}
		}
	}
}

// testWebhookClaimants: claimants racing never hold the same delivery,
// and the per-webhook bound holds; Trim dead-letters the oldest.
func testWebhookClaimants(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	w, _ := newHook(t, s, alice, `{}`)
	w2, _ := newHook(t, s, alice, `{}`)
	for i := range 40 {
		create(t, s, alice, crumb(fmt.Sprint("n", i)))
	}
	fanOut(t, s, alice, w)
	fanOut(t, s, alice, w2)
	c, err := s.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 100, PerWebhook: 3, Busy: map[string]int{w2.ID: 1}, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, d := range c {
		per[d.WebhookID]++
	}
	if per[w.ID] != 3 || per[w2.ID] != 2 {
		t.Fatalf("per webhook %v, want 3 and 2", per)
	}
	for _, d := range c {
		if err := settleOne(s, store.Settle{DeliveryID: d.ID, Lease: d.Lease, Status: store.DeliveryPending}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, err := s.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 7, PerWebhook: 50, Lease: time.Minute})
				if err != nil && !store.IsCode(err, store.CodeUnavailable) {
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
	wg.Wait()
	if len(seen) != 80 {
		t.Errorf("claimed %d distinct deliveries, want all 80", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("delivery %s claimed %d times", id, n)
		}
	}
	// Trim: every delivery is leased now, so nothing is trimmed.
	bl, err := s.TrimDeliveries(ctx, 10)
	if err != nil || len(bl) != 2 || bl[0].Pending != 40 || bl[0].Trimmed != 0 {
		t.Fatalf("trim leased: %+v %v", bl, err)
	}
	w3, _ := newHook(t, s, alice, `{}`)
	for i := range 5 {
		create(t, s, alice, crumb(fmt.Sprint("m", i)))
	}
	fanOut(t, s, alice, w3)
	bl, err = s.TrimDeliveries(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bl {
		if b.WebhookID == w3.ID && (b.Trimmed != 3 || b.Pending != 2 || b.Oldest.IsZero()) {
			t.Fatalf("trim: %+v", b)
		}
	}
	page, err := s.Deliveries(ctx, alice, w3.ID, store.DeliveryQuery{Status: store.DeliveryFailed})
	if err != nil || len(page.Items) != 3 || !strings.Contains(page.Items[0].Reason, "backlog") {
		t.Fatalf("trimmed: %+v %v", page, err)
	}
}

// testWebhookBinding: a webhook acts by the token it is bound to (the
// creating one, then the last that managed it), and a revocation of that
// token pauses it, unless it was bound to another meanwhile.
func testWebhookBinding(t *testing.T, s store.Store) {
	ctx := context.Background()
	curator := store.Actor{OwnerID: "acme", AgentID: "alice", Curator: true}
	emitter := store.Actor{OwnerID: "acme", AgentID: "alice"}
	issued := time.Date(2026, 1, 2, 3, 4, 5, 678901000, time.UTC)
	w, _, err := s.CreateWebhook(ctx, curator, store.Webhook{URL: "https://example.com/hook", Selector: selectorOf(t, `{}`),
		Payload: store.PayloadFull, TokenID: "tok-1", TokenIssued: issued})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Webhook(ctx, emitter, w.ID)
	if err != nil || got.TokenID != "tok-1" || !got.TokenIssued.Equal(issued) || !got.Curator {
		t.Fatalf("as created: %+v, %v", got, err)
	}
	create(t, s, emitter, crumb("one", "deploy"))
	w = fanOut(t, s, emitter, w)
	cds := claim(t, s, time.Minute)
	if len(cds) != 1 {
		t.Fatalf("claimed %d, want 1", len(cds))
	}
	if h := cds[0].Hook; h.ID != w.ID || h.OwnerID != "acme" || h.AgentID != "alice" || !h.Curator || h.Payload != store.PayloadFull ||
		h.TokenID != "tok-1" || !h.TokenIssued.Equal(issued) {
		t.Fatalf("claimed delivery's webhook: %+v", h)
	}
	if string(cds[0].Body) != fmt.Sprintf(`{"seq":%d}`, cds[0].Seq) {
		t.Fatalf("claimed body %q: want the event as stored", cds[0].Body)
	}
	if err := settleOne(s, store.Settle{DeliveryID: cds[0].ID, Lease: cds[0].Lease, Status: store.DeliveryPending}); err != nil {
		t.Fatal(err)
	}

	// Bound to a later emitter token: no curator reach, and a pause for
	// the old token's revocation no longer applies.
	later := issued.Add(time.Hour)
	got, err = s.UpdateWebhook(ctx, emitter, w.ID, store.WebhookPatch{Bind: &store.WebhookBinding{TokenID: "tok-2", Issued: later}})
	if err != nil || got.TokenID != "tok-2" || !got.TokenIssued.Equal(later) || got.Curator {
		t.Fatalf("bound: %+v, %v", got, err)
	}
	if err := s.PauseRevoked(ctx, w.ID, "tok-1", issued); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Webhook(ctx, emitter, w.ID); got.Paused || got.Curator || got.TokenID != "tok-2" {
		t.Fatalf("paused for a token it is no longer bound to: %+v", got)
	}
	if cds := claim(t, s, time.Minute); len(cds) != 1 || cds[0].Hook.Curator || cds[0].Hook.TokenID != "tok-2" {
		t.Fatalf("claimed after binding: %+v", cds)
	} else if err := settleOne(s, store.Settle{DeliveryID: cds[0].ID, Lease: cds[0].Lease, Status: store.DeliveryPending}); err != nil {
		t.Fatal(err)
	}

	// Its own token revoked: paused with the reason, nothing claimed.
	if err := s.PauseRevoked(ctx, w.ID, "tok-2", later); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Webhook(ctx, emitter, w.ID); !got.Paused || got.PausedReason != store.RevokedReason || got.PausedAt == nil {
		t.Fatalf("after its token's revocation: %+v", got)
	}
	if cds := claim(t, s, time.Minute); len(cds) != 0 {
		t.Fatalf("a revoked webhook's deliveries claimed: %d", len(cds))
	}
	// Bound to a new token and resumed by one PATCH.
	resume := false
	got, err = s.UpdateWebhook(ctx, emitter, w.ID, store.WebhookPatch{Paused: &resume,
		Bind: &store.WebhookBinding{TokenID: "tok-3", Issued: later.Add(time.Hour)}})
	if err != nil || got.Paused || got.TokenID != "tok-3" {
		t.Fatalf("resumed: %+v, %v", got, err)
	}
	if cds := claim(t, s, time.Minute); len(cds) != 1 {
		t.Fatalf("claimed after resuming: %d, want 1", len(cds))
	}
}
