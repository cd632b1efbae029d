package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// testSubscriptions: an agent's subscriptions are its own (another agent
// of the same owner, a curator and another owner see none of them, and
// get ErrNotFound for their ids), read back with their selectors as given,
// are bounded in number, and go on delete.
func testSubscriptions(t *testing.T, s store.Store) {
	ctx := context.Background()
	sel := selector(t, `{"any_tags":["hot"],"schema_name":"s.*","kinds":["created","expired"],"context_match":[{"path":"$.n","op":"in","value":[1,2.5]}]}`)
	sub, err := s.CreateSubscription(ctx, alice, store.Subscription{Name: "hot ones", Description: "why", Selector: sel, ID: "ignored", OwnerID: "evil"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.ID == "" || sub.ID == "ignored" || sub.OwnerID != alice.OwnerID || sub.AgentID != alice.AgentID || sub.CreatedAt.IsZero() {
		t.Fatalf("created: %+v", sub)
	}
	got, err := s.Subscription(ctx, alice, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(sub)
	if string(a) != string(b) {
		t.Fatalf("read back %s, created %s", a, b)
	}
	if !got.Selector.Match(&store.Event{Kind: store.Created, Tags: []string{"hot"}, SchemaName: "s.v1"}, map[string]any{"n": json.Number("2.50")}) {
		t.Fatal("the selector read back does not match what it did")
	}
	for _, other := range []store.Actor{bob, curator, mallory} {
		if _, err := s.Subscription(ctx, other, sub.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%+v read alice's subscription: %v", other, err)
		}
		if list, err := s.Subscriptions(ctx, other); err != nil || len(list) != 0 {
			t.Errorf("%+v lists %d subscriptions: %v", other, len(list), err)
		}
		if err := s.DeleteSubscription(ctx, other, sub.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%+v deleted alice's subscription: %v", other, err)
		}
	}
	for _, id := range []string{"nope", "01900000-0000-7000-8000-000000000000", ""} {
		if _, err := s.Subscription(ctx, alice, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown id %q: %v", id, err)
		}
	}

	// Bad input is refused with the field at fault; nothing is stored.
	for _, c := range []struct {
		in   store.Subscription
		path string
	}{
		{store.Subscription{Selector: sel}, "name"},
		{store.Subscription{Name: strings.Repeat("n", store.MaxSubscriptionName+1), Selector: sel}, "name"},
		{store.Subscription{Name: "bad\x00", Selector: sel}, "name"},
		{store.Subscription{Name: "x", Description: strings.Repeat("d", store.MaxSubscriptionDescription+1), Selector: sel}, "description"},
		{store.Subscription{Name: "x"}, "selector"},
		{store.Subscription{Name: "x", Selector: &store.Selector{Kinds: []store.EventKind{"renamed"}}}, "selector.kinds[0]"},
	} {
		_, err := s.CreateSubscription(ctx, bob, c.in)
		var se *store.Error
		if !errors.As(err, &se) || se.Code != store.CodeInvalid || se.Path != c.path {
			t.Errorf("%+v: %v, want invalid at %s", c.in, err, c.path)
		}
	}

	// The bound is per agent.
	for i := 1; i < store.MaxSubscriptions; i++ {
		if _, err := s.CreateSubscription(ctx, alice, store.Subscription{Name: fmt.Sprint("s", i), Selector: &store.Selector{}}); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	if _, err := s.CreateSubscription(ctx, alice, store.Subscription{Name: "one too many", Selector: &store.Selector{}}); !errors.Is(err, store.ErrTooManySubscriptions) {
		t.Fatalf("past the bound: %v", err)
	}
	if _, err := s.CreateSubscription(ctx, bob, store.Subscription{Name: "bob's", Selector: &store.Selector{}}); err != nil {
		t.Fatalf("another agent at alice's bound: %v", err)
	}
	list, err := s.Subscriptions(ctx, alice)
	if err != nil || len(list) != store.MaxSubscriptions || list[0].ID != sub.ID {
		t.Fatalf("list: %d %v", len(list), err)
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].ID >= list[i].ID {
			t.Fatalf("not oldest first at %d", i)
		}
	}
	if err := s.DeleteSubscription(ctx, alice, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscription(ctx, alice, sub.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted subscription still there: %v", err)
	}
	if err := s.DeleteSubscription(ctx, alice, sub.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted twice: %v", err)
	}
	if _, err := s.CreateSubscription(ctx, alice, store.Subscription{Name: "room again", Selector: &store.Selector{}}); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

// testSelectorPrivacy: a context condition never matches a change its
// stream may not see, and what it sees of the context is the version the
// event names: a private breadcrumb of bob's whose context would pass
// alice's conditions never reaches alice's stream; an update that makes a
// record pass is matched on the new version, and one that makes it fail
// is not.
func testSelectorPrivacy(t *testing.T, s store.Store) {
	ctx := context.Background()
	start, err := s.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sel := selector(t, `{"context_match":[{"path":"$.secret","op":"eq","value":"x"}]}`)
	hidden := create(t, s, bob, store.Breadcrumb{Title: "bob's", Context: json.RawMessage(`{"secret":"x"}`), Visibility: store.Private})
	team := create(t, s, bob, store.Breadcrumb{Title: "team", Context: json.RawMessage(`{"secret":"y"}`)})
	if _, err := s.Update(ctx, bob, team.ID, 0, func(b *store.Breadcrumb) error { b.Context = json.RawMessage(`{"secret":"x"}`); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, bob, team.ID, 0, func(b *store.Breadcrumb) error { b.Context = json.RawMessage(`{"secret":"z"}`); return nil }); err != nil {
		t.Fatal(err)
	}
	marker := create(t, s, bob, store.Breadcrumb{Title: "marker", Context: json.RawMessage(`{"secret":"x","end":true}`)})
	got := collectFiltered(t, s, alice, start, sel, 2)
	if len(got) != 2 || got[0].BreadcrumbID != team.ID || got[0].Version != 2 || got[1].BreadcrumbID != marker.ID {
		t.Fatalf("alice's stream: %v", describe(got))
	}
	// The live path too: a stream open while the writes happen.
	done := liveFirst(t, s, alice, sel)
	create(t, s, bob, store.Breadcrumb{Title: "bob's again", Context: json.RawMessage(`{"secret":"x"}`), Visibility: store.Private})
	last := create(t, s, bob, store.Breadcrumb{Title: "last", Context: json.RawMessage(`{"secret":"x"}`)})
	if out := <-done; len(out) != 1 || out[0].BreadcrumbID != last.ID {
		t.Fatalf("alice's live stream: %v (hidden %s)", describe(out), hidden.ID)
	}
}

// testSelectorContextRule: a context condition is a yes/no question about
// a record, so it answers only what its stream's agent may still read (the
// rule of History): once a record is deleted or expired, its changes
// match an agent's conditions no more, only a curator's; and a record with
// a read budget never answers an agent's (a match is no counted read), so
// neither can serve as an oracle. A live record without a budget matches
// as before, from the backlog and live.
func testSelectorContextRule(t *testing.T, s store.Store) {
	ctx := context.Background()
	sel := selector(t, `{"kinds":["created"],"context_match":[{"path":"$.pin","op":"eq","value":"4711"}]}`)
	pin := json.RawMessage(`{"pin":"4711"}`)
	hour := time.Now().Add(time.Hour)
	gone := create(t, s, alice, store.Breadcrumb{Title: "gone", Context: pin})
	if err := s.Delete(ctx, curator, gone.ID); err != nil {
		t.Fatal(err)
	}
	expired := create(t, s, alice, store.Breadcrumb{Title: "expired", Context: pin, ExpiresAt: &hour})
	if n, err := s.Expire(ctx, hour.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	budget := create(t, s, alice, store.Breadcrumb{Title: "budget", Context: pin, MaxReads: 3})
	open := create(t, s, alice, store.Breadcrumb{Title: "open", Context: pin})

	ids := func(es []store.Event) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = e.BreadcrumbID
		}
		return out
	}
	names := map[string]string{gone.ID: "gone", expired.ID: "expired", budget.ID: "budget", open.ID: "open"}
	describeIDs := func(got []string) []string {
		out := make([]string, len(got))
		for i, id := range got {
			out[i] = names[id]
		}
		return out
	}
	// From the backlog: bob learns nothing of the three; the curator, who
	// may read their history, matches them all.
	if got := ids(collectFiltered(t, s, bob, 0, sel, 1)); !slices.Equal(got, []string{open.ID}) {
		t.Fatalf("bob's stream from the backlog: %v, want [open]", describeIDs(got))
	}
	if got := ids(collectFiltered(t, s, curator, 0, sel, 4)); !slices.Equal(got, []string{gone.ID, expired.ID, budget.ID, open.ID}) {
		t.Fatalf("the curator's stream from the backlog: %v, want [gone expired budget open]", describeIDs(got))
	}

	// Live: a budgeted record created while bob's stream is open does not
	// pass it either; the live record after it does.
	done := liveFirst(t, s, bob, sel)
	budget2 := create(t, s, alice, store.Breadcrumb{Title: "budget again", Context: pin, MaxReads: 1})
	last := create(t, s, alice, store.Breadcrumb{Title: "last", Context: pin})
	if out := <-done; len(out) != 1 || out[0].BreadcrumbID != last.ID {
		t.Fatalf("bob's live stream: %v (budgeted %s, want %s)", describe(out), budget2.ID, last.ID)
	}
	// Matching spent none of the budget.
	if b, err := s.Get(ctx, curator, budget.ID); err != nil || b.Reads != 0 {
		t.Fatalf("the budgeted record after the streams: %+v %v", b, err)
	}
}

// liveFirst opens a stream of a's changes that pass sel from now on, and
// delivers the first one (none when the stream ends first, within 30 s)
// on the channel it returns.
func liveFirst(t *testing.T, s store.Store, a store.Actor, sel *store.Selector) <-chan []store.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	live, err := s.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []store.Event, 1)
	go func() {
		var out []store.Event
		for e, err := range s.Events(ctx, a, live, sel) {
			if err != nil {
				break
			}
			if out = append(out, e); len(out) == 1 {
				break
			}
		}
		done <- out
	}()
	return done
}
