package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// testWebhookSettleGroup: settles committed together do what they would
// one after another: a delivery settled twice in a group keeps the first
// settle (the second finds its lease gone), a webhook's failing_since is
// what its settles in order leave, and the attempts of the settles that
// held their lease are kept, in order.
func testWebhookSettleGroup(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	a, _ := newHook(t, s, alice, `{"any_tags":["a"]}`)
	b, _ := newHook(t, s, alice, `{"any_tags":["b"]}`)
	for i := range 3 {
		create(t, s, alice, crumb(fmt.Sprintf("a%d", i), "a"))
	}
	for i := range 2 {
		create(t, s, alice, crumb(fmt.Sprintf("b%d", i), "b"))
	}
	a, b = fanOut(t, s, alice, a), fanOut(t, s, alice, b)
	byHook := func(got []store.ClaimedDelivery) (as, bs []store.ClaimedDelivery) {
		slices.SortFunc(got, func(x, y store.ClaimedDelivery) int { return int(x.Seq - y.Seq) })
		for _, cd := range got {
			if cd.WebhookID == a.ID {
				as = append(as, cd)
			} else {
				bs = append(bs, cd)
			}
		}
		return as, bs
	}
	as, bs := byHook(claim(t, s, time.Minute))
	if len(as) != 3 || len(bs) != 2 {
		t.Fatalf("claimed %d of a and %d of b, want 3 and 2", len(as), len(bs))
	}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	at := func(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }
	retry := func(cd store.ClaimedDelivery, failed time.Time) store.Settle {
		return store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryPending, Attempted: true, Failed: failed,
			Attempt: &store.DeliveryAttempt{DeliveryID: cd.ID, WebhookID: cd.WebhookID, At: failed, Status: 503, Class: "status", Verdict: "retry",
				Excerpt: "busy\x00"}} // a NUL byte in the receiver's answer
	}
	delivered := func(cd store.ClaimedDelivery, when time.Time) store.Settle {
		return store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryDelivered, Attempted: true,
			Attempt: &store.DeliveryAttempt{DeliveryID: cd.ID, WebhookID: cd.WebhookID, At: when, Status: 200, Class: "ok", Verdict: "delivered"}}
	}
	settle := func(group []store.Settle, lost ...int) {
		t.Helper()
		errs, err := s.SettleDeliveries(ctx, group)
		if err != nil || len(errs) != len(group) {
			t.Fatalf("settle group: %d errors for %d settles, %v", len(errs), len(group), err)
		}
		for i, err := range errs {
			if want := slices.Contains(lost, i); want != errors.Is(err, store.ErrLeaseLost) || (!want && err != nil) {
				t.Errorf("settle %d: %v (lease lost expected: %v)", i, err, want)
			}
		}
	}
	failing := func(w store.Webhook, want time.Time) {
		t.Helper()
		got, err := s.Webhook(ctx, alice, w.ID)
		switch {
		case err != nil:
			t.Fatal(err)
		case want.IsZero() && got.FailingSince != nil:
			t.Errorf("webhook %s failing since %v, want not failing", w.ID, got.FailingSince)
		case !want.IsZero() && (got.FailingSince == nil || !got.FailingSince.Equal(want)):
			t.Errorf("webhook %s failing since %v, want %v", w.ID, got.FailingSince, want)
		}
	}
	bad := bs[1]
	bad.Lease = "another claimant's"
	settle([]store.Settle{
		retry(as[0], at(1)),     // a fails,
		delivered(as[1], at(2)), // then succeeds,
		retry(as[2], at(3)),     // then fails again: failing since this one
		retry(bs[0], at(4)),     // b fails
		delivered(bs[0], at(5)), // the same delivery again: its lease is gone
		{DeliveryID: bs[1].ID, Status: store.DeliveryDelivered}, // no lease
		delivered(bad, at(6)), // a lease not the delivery's
	}, 4, 5, 6)
	failing(a, at(3))
	failing(b, at(4))
	for _, c := range []struct {
		cd       store.ClaimedDelivery
		status   store.DeliveryStatus
		attempts []int // the kept attempts' HTTP statuses, newest first
	}{
		{as[0], store.DeliveryPending, []int{503}},
		{as[1], store.DeliveryDelivered, []int{200}},
		{bs[0], store.DeliveryPending, []int{503}},
		{bs[1], store.DeliveryPending, nil},
	} {
		dl, ats, err := s.Delivery(ctx, alice, c.cd.WebhookID, c.cd.ID)
		if err != nil {
			t.Fatal(err)
		}
		var statuses []int
		for _, at := range ats {
			statuses = append(statuses, at.Status)
		}
		if dl.Status != c.status || dl.Attempts != len(c.attempts) || !slices.Equal(statuses, c.attempts) {
			t.Errorf("delivery of seq %d: %s with %d attempts %v, want %s with %v", c.cd.Seq, dl.Status, dl.Attempts, statuses, c.status, c.attempts)
		}
	}

	// A success then a failure leave the failure's start; a failure of a
	// webhook failing already leaves its start as it was.
	// A failing webhook's claim takes one delivery of it: two claims
	// take two (bs[1] is leased still).
	as, bs = byHook(append(claim(t, s, time.Minute), claim(t, s, time.Minute)...))
	if len(as) != 2 || len(bs) != 1 {
		t.Fatalf("claimed again %d of a and %d of b, want 2 and 1", len(as), len(bs))
	}
	settle([]store.Settle{delivered(as[0], at(7)), retry(as[1], at(8)), retry(bs[0], at(9))})
	failing(a, at(8))
	failing(b, at(4))
	// A failure alone keeps a failing since as it was; a success alone
	// clears b.
	a2, b2 := byHook(claim(t, s, time.Minute))
	if len(a2) != 1 || len(b2) != 1 || a2[0].ID != as[1].ID {
		t.Fatalf("claimed a third time %d of a and %d of b, want 1 and 1", len(a2), len(b2))
	}
	settle([]store.Settle{retry(a2[0], at(10)), delivered(b2[0], at(11))})
	failing(a, at(8))
	failing(b, time.Time{})
	_, ats, err := s.Delivery(ctx, alice, a.ID, a2[0].ID)
	var when []time.Time
	for _, x := range ats {
		when = append(when, x.At)
	}
	if err != nil || !slices.EqualFunc(when, []time.Time{at(10), at(8), at(3)}, time.Time.Equal) {
		t.Fatalf("attempts of a retried delivery at %v, want at 10 s, 8 s, 3 s: %v", when, err)
	}
	if ats[0].Excerpt != "busy\uFFFD" {
		t.Fatalf("excerpt %q, want the NUL byte replaced", ats[0].Excerpt)
	}
}

// testWebhookAdvanceGroup: advances stored together do what they would
// one after another: a webhook advanced twice moves on from the first's
// cursor, and an advance from a cursor moved since is refused without
// its deliveries, beside the others of the call. Each delivery's id is
// its event's and webhook's (store.EventDeliveryID).
func testWebhookAdvanceGroup(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	other := store.Actor{OwnerID: "globex", AgentID: "carol"}
	w, _ := newHook(t, s, alice, `{}`)
	v, _ := newHook(t, s, other, `{}`)
	create(t, s, alice, crumb("one"))
	create(t, s, alice, crumb("two"))
	create(t, s, other, crumb("three"))
	cs, _, err := s.WebhookChanges(ctx, w, latest(t, s), 100, false)
	if err != nil || len(cs) != 2 {
		t.Fatalf("changes: %d, %v", len(cs), err)
	}
	vs, _, err := s.WebhookChanges(ctx, v, latest(t, s), 100, false)
	if err != nil || len(vs) != 1 {
		t.Fatalf("changes of globex: %d, %v", len(vs), err)
	}
	nd := func(c store.Change) []store.NewDelivery {
		return []store.NewDelivery{{Seq: c.Seq, Kind: string(c.Kind), At: c.At, Event: []byte(fmt.Sprintf(`{"seq":%d}`, c.Seq))}}
	}
	second := w
	second.Cursor = cs[0].Seq
	errs, err := s.AdvanceWebhooks(ctx, []store.Advance{
		{Webhook: w, Upto: cs[0].Seq, Deliveries: nd(cs[0])},
		{Webhook: v, Upto: vs[0].Seq, Deliveries: nd(vs[0])},
		{Webhook: second, Upto: cs[1].Seq, Deliveries: nd(cs[1])},
		{Webhook: w, Upto: cs[1].Seq + 100, Deliveries: nd(cs[1])}, // from the cursor the first moved
	})
	if err != nil || len(errs) != 4 || errs[0] != nil || errs[1] != nil || errs[2] != nil || !errors.Is(errs[3], store.ErrCursorMoved) {
		t.Fatalf("advance: %v, %v", errs, err)
	}
	if got, err := s.Webhook(ctx, alice, w.ID); err != nil || got.Cursor != cs[1].Seq {
		t.Fatalf("cursor %d, want %d: %v", got.Cursor, cs[1].Seq, err)
	}
	if got, err := s.Webhook(ctx, other, v.ID); err != nil || got.Cursor != vs[0].Seq {
		t.Fatalf("globex's cursor %d, want %d: %v", got.Cursor, vs[0].Seq, err)
	}
	page, err := s.Deliveries(ctx, alice, w.ID, store.DeliveryQuery{})
	if err != nil || len(page.Items) != 2 || page.Items[0].Seq != cs[1].Seq || page.Items[1].Seq != cs[0].Seq {
		t.Fatalf("deliveries: %+v, %v", page.Items, err)
	}
	// An event's delivery has the id it would have were the fan-out made
	// again (its first lost in a crash): its webhook-id stays the same.
	at := map[int64]time.Time{}
	for _, c := range cs {
		at[c.Seq] = c.At
	}
	for _, dl := range page.Items {
		if want := store.EventDeliveryID(w.ID, dl.Seq, at[dl.Seq]); dl.ID != want {
			t.Fatalf("delivery of event %d: id %s, want %s", dl.Seq, dl.ID, want)
		}
	}
	if page, err := s.Deliveries(ctx, other, v.ID, store.DeliveryQuery{}); err != nil || len(page.Items) != 1 {
		t.Fatalf("globex's deliveries: %+v, %v", page.Items, err)
	}
}

// testWebhookDeliveryOrder: a test message, then two events' deliveries
// made later (ids of store.EventDeliveryID beside a UUIDv7): the list is
// newest first by when they were made, and RedeliverFailed(1) of the
// three, all failed, takes the oldest, the test message.
func testWebhookDeliveryOrder(t *testing.T, s store.Store) {
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
