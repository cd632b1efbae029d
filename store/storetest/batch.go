package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// Refuse makes the store's database refuse, from now on, to store a
// breadcrumb titled PoisonTitle (a trigger, say): a row the database
// turns down though it passed the store's checks.
type Refuse func(t *testing.T, s store.Store)

// PoisonTitle is the title Refuse makes the database refuse.
const PoisonTitle = "poison: the database refuses this row"

// RunBatch runs the conformance tests of store.BatchCreator: open must
// return a store that is one, refuse makes its database refuse a row.
func RunBatch(t *testing.T, open Open, refuse Refuse) {
	t.Run("BatchLikeCreates", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		testBatchLikeCreates(t, s)
	})
	t.Run("BatchOneRefusedRow", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		refuse(t, s)
		testBatchRefusedRow(t, s)
	})
	t.Run("BatchBound", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		_, err := s.(store.BatchCreator).CreateBatch(context.Background(), make([]store.Creation, store.MaxBatch+1))
		var e *store.Error
		if !errors.As(err, &e) || e.Code != store.CodeTooLarge || e.Path != "batch" {
			t.Fatalf("a batch over MaxBatch: %v, want too_large naming batch", err)
		}
	})
}

// testBatchLikeCreates: a batch of several owners' and agents' creates,
// with an invalid one, keys used before, twice in the batch and with
// another request, comes out as the same creates one by one would: each
// its outcome, the valid ones stored with their history and events in
// order, each owner seeing only its own.
func testBatchLikeCreates(t *testing.T, s store.Store) {
	ctx := context.Background()
	prior, _, err := s.Create(ctx, alice, crumb("prior"), store.Idempotency{Key: "k0", RequestHash: "h0"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs := []store.Creation{
		{Actor: alice, In: crumb("a1", "batch")},
		{Actor: mallory, In: crumb("m1", "batch")},
		{Actor: alice, In: store.Breadcrumb{Title: "bad", Context: json.RawMessage(`[1]`)}},
		{Actor: bob, In: store.Breadcrumb{Title: "b1", Context: json.RawMessage(`{"n":2}`), Visibility: store.Private, Tags: []string{"batch"}}},
		{Actor: alice, In: crumb("a2"), Idem: store.Idempotency{Key: "k1", RequestHash: "h1"}},
		{Actor: alice, In: crumb("a2"), Idem: store.Idempotency{Key: "k1", RequestHash: "h1"}},    // replays the one before
		{Actor: alice, In: crumb("a2x"), Idem: store.Idempotency{Key: "k1", RequestHash: "h2"}},   // conflicts with it
		{Actor: alice, In: crumb("prior"), Idem: store.Idempotency{Key: "k0", RequestHash: "h0"}}, // replays a Create
		{Actor: alice, In: crumb("again"), Idem: store.Idempotency{Key: "k0", RequestHash: "hX"}}, // conflicts with it
		{Actor: mallory, In: crumb("m2")},
	}
	out, err := s.(store.BatchCreator).CreateBatch(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(cs) {
		t.Fatalf("%d outcomes for %d creates", len(out), len(cs))
	}
	for _, i := range []int{0, 1, 3, 4, 9} {
		o := out[i]
		if o.Err != nil || o.Replayed || o.Breadcrumb.Version != 1 || o.Breadcrumb.Title != cs[i].In.Title ||
			o.Breadcrumb.OwnerID != cs[i].Actor.OwnerID || o.Breadcrumb.CreatedBy != cs[i].Actor.AgentID {
			t.Errorf("create %d: %+v", i, o)
			continue
		}
		got, err := s.Get(ctx, cs[i].Actor, o.Breadcrumb.ID)
		if err != nil || got.Title != cs[i].In.Title || got.Checksum != o.Breadcrumb.Checksum {
			t.Errorf("create %d not stored: %v %+v", i, err, got)
		}
		if h, err := s.History(ctx, cs[i].Actor, o.Breadcrumb.ID); err != nil || len(h) != 1 {
			t.Errorf("create %d: history %d, %v", i, len(h), err)
		}
	}
	wantCode(t, out[2].Err, store.CodeInvalid)
	if out[5].Err != nil || !out[5].Replayed || out[5].Breadcrumb.ID != out[4].Breadcrumb.ID {
		t.Errorf("a key used twice in the batch: %+v, want a replay of %s", out[5], out[4].Breadcrumb.ID)
	}
	if !errors.Is(out[6].Err, store.ErrIdempotencyConflict) {
		t.Errorf("a key used again with another request: %v", out[6].Err)
	}
	if out[7].Err != nil || !out[7].Replayed || out[7].Breadcrumb.ID != prior.ID {
		t.Errorf("a key a Create used: %+v, want a replay of %s", out[7], prior.ID)
	}
	if !errors.Is(out[8].Err, store.ErrIdempotencyConflict) {
		t.Errorf("a key a Create used, another request: %v", out[8].Err)
	}

	// Alice sees her two and bob's events (bob's is private: not hers to
	// see), in the batch's order; mallory only hers.
	ids := func(es []store.Event) []string {
		var out []string
		for _, e := range es {
			if e.Kind != store.Created || e.Version != 1 {
				t.Errorf("event %+v", e)
			}
			out = append(out, e.BreadcrumbID)
		}
		return out
	}
	if got, want := fmt.Sprint(ids(collect(t, s, alice, after, 2))), fmt.Sprint([]string{out[0].Breadcrumb.ID, out[4].Breadcrumb.ID}); got != want {
		t.Errorf("alice's events %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(ids(collect(t, s, mallory, after, 2))), fmt.Sprint([]string{out[1].Breadcrumb.ID, out[9].Breadcrumb.ID}); got != want {
		t.Errorf("mallory's events %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(ids(collect(t, s, curator, after, 3))), fmt.Sprint([]string{out[0].Breadcrumb.ID, out[3].Breadcrumb.ID, out[4].Breadcrumb.ID}); got != want {
		t.Errorf("acme's curator's events %s, want %s", got, want)
	}
	if p, err := s.List(ctx, alice, store.Query{Tags: []string{"batch"}}); err != nil || len(p.Items) != 1 {
		t.Errorf("alice lists %d tagged (not bob's private one, not mallory's): %v", len(p.Items), err)
	}
	if _, err := s.Get(ctx, alice, out[1].Breadcrumb.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("alice reads mallory's: %v", err)
	}
	// A batch of nothing valid writes nothing and fails nothing else.
	out, err = s.(store.BatchCreator).CreateBatch(ctx, []store.Creation{{Actor: alice, In: store.Breadcrumb{Title: "bad"}}})
	if err != nil || len(out) != 1 || out[0].Err == nil {
		t.Errorf("an invalid batch of one: %v %+v", err, out)
	}
}

// testBatchRefusedRow: a row the database refuses fails its create
// alone; the creates before and after it are stored.
func testBatchRefusedRow(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, _, err := s.Create(ctx, alice, crumb(PoisonTitle), store.Idempotency{}); err == nil {
		t.Fatal("the database took the row it should refuse")
	}
	cs := []store.Creation{
		{Actor: alice, In: crumb("before")},
		{Actor: alice, In: crumb(PoisonTitle)},
		{Actor: mallory, In: crumb("after")},
	}
	out, err := s.(store.BatchCreator).CreateBatch(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if out[1].Err == nil {
		t.Errorf("the refused row: %+v", out[1])
	}
	for _, i := range []int{0, 2} {
		if out[i].Err != nil {
			t.Errorf("create %d failed with the refused row: %v", i, out[i].Err)
			continue
		}
		if _, err := s.Get(ctx, cs[i].Actor, out[i].Breadcrumb.ID); err != nil {
			t.Errorf("create %d not stored: %v", i, err)
		}
	}
	if p, _ := s.List(ctx, alice, store.Query{}); len(p.Items) != 1 {
		t.Errorf("alice has %d breadcrumbs, want 1", len(p.Items))
	}
}
