package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// eventStream records what one Events stream receives.
type eventStream struct {
	a      store.Actor
	filter *store.Selector
	mu     sync.Mutex
	got    []store.Event
	err    error
}

func (s *eventStream) snapshot() ([]store.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got), s.err
}

// change is what a stream should hear of a write.
func change(kind store.EventKind, b store.Breadcrumb) store.Change {
	c := store.Change{
		Event:   store.Event{Kind: kind, BreadcrumbID: b.ID, Version: b.Version, Tags: b.Tags, SchemaName: b.SchemaName},
		OwnerID: b.OwnerID, Visibility: b.Visibility, CreatedBy: b.CreatedBy,
	}
	if kind == store.Created || kind == store.Updated {
		c.Context = b.Context
	}
	return c
}

// selector parses a selector the test means to be valid.
func selector(t *testing.T, src string) *store.Selector {
	t.Helper()
	sel, err := store.ParseSelector([]byte(src))
	if err != nil {
		t.Fatalf("selector %s: %v", src, err)
	}
	return sel
}

// matches is the reference of what a stream with sel should hear of c.
func matches(t *testing.T, sel *store.Selector, c *store.Change) bool {
	t.Helper()
	var doc any
	if len(c.Context) > 0 {
		var err error
		if doc, err = view.DecodeJSON(c.Context); err != nil {
			t.Fatal(err)
		}
	}
	return sel.Match(&c.Event, doc)
}

func sameEvent(got store.Event, want store.Change) bool {
	return got.Kind == want.Kind && got.BreadcrumbID == want.BreadcrumbID && got.Version == want.Version &&
		slices.Equal(got.Tags, want.Tags) && got.SchemaName == want.SchemaName
}

func describe(es []store.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%d:%s %s v%d", e.Seq, e.Kind, e.BreadcrumbID[len(e.BreadcrumbID)-4:], e.Version)
	}
	return out
}

// testEventsFanOut: streams of two owners' agents, curators and a stranger,
// each with one of several filters, open while writes of every kind
// interleave across owners (creates of each visibility, updates that
// change tags, schema and visibility, deletes). Each stream receives
// exactly the changes the visibility rule and its filter let through, in
// order, with no gap and no repeat, and the same events, with the same
// sequence numbers, as a stream opened afterwards from the same point
// reads from the backlog. One stream per actor does not read until the
// writes are done: it falls behind by more than any buffer a backend
// keeps, and still gets everything.
func testEventsFanOut(t *testing.T, s store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eve := store.Actor{OwnerID: "evil", AgentID: "eve"}
	stranger := store.Actor{OwnerID: "initech", AgentID: "peter", Curator: true}
	actors := []store.Actor{alice, bob, curator, mallory, eve, stranger}
	filters := []*store.Selector{nil, selector(t, `{"all_tags":["hot"]}`), selector(t, `{"all_tags":["hot","cold"]}`),
		selector(t, `{"schema_name":"s.v1"}`), selector(t, `{"any_tags":["cold"],"schema_name":"s.*"}`),
		selector(t, `{"kinds":["deleted","updated"]}`),
		selector(t, `{"context_match":[{"path":"$.n","op":"gt","value":1}]}`),
		selector(t, `{"all_tags":["hot"],"context_match":[{"path":"$.n","op":"in","value":[0,3]}]}`)}
	start, err := s.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}

	gate := make(chan struct{})
	var (
		streams []*eventStream
		wg      sync.WaitGroup
	)
	listen := func(a store.Actor, f *store.Selector, gate <-chan struct{}) *eventStream {
		st := &eventStream{a: a, filter: f}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e, err := range s.Events(ctx, a, start, f) {
				if gate != nil {
					<-gate
				}
				st.mu.Lock()
				st.got, st.err = append(st.got, e), err
				st.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		return st
	}
	var stalled []*eventStream
	for _, a := range actors {
		for _, f := range filters {
			streams = append(streams, listen(a, f, nil))
		}
		stalled = append(stalled, listen(a, nil, gate))
	}

	// Writes, mostly acme's so that its curator's stalled stream falls far
	// behind; every one is checked to have succeeded.
	r := rand.New(rand.NewPCG(11, 12))
	writers := []store.Actor{alice, alice, bob, bob, curator, mallory, eve}
	var (
		log  []store.Change
		live []store.Breadcrumb
	)
	randomContent := func(b *store.Breadcrumb) {
		b.Visibility = []store.Visibility{store.Team, store.Private, store.Public}[r.IntN(3)]
		b.Tags = nil
		for _, tag := range []string{"hot", "cold"} {
			if r.IntN(2) == 0 {
				b.Tags = append(b.Tags, tag)
			}
		}
		b.SchemaName = []string{"", "s.v1", "s.v2"}[r.IntN(3)]
		b.Context = json.RawMessage(fmt.Sprintf(`{"n":%d}`, r.IntN(4)))
	}
	const writes = 450
	for i := range writes {
		a := writers[r.IntN(len(writers))]
		var mine []int
		for j := range live {
			if store.Writable(a, &live[j]) {
				mine = append(mine, j)
			}
		}
		switch op := r.IntN(10); {
		case op < 5 || len(mine) == 0:
			in := crumb(fmt.Sprint("w", i))
			randomContent(&in)
			b := create(t, s, a, in)
			live = append(live, b)
			log = append(log, change(store.Created, b))
		case op < 8:
			j := mine[r.IntN(len(mine))]
			b, err := s.Update(ctx, a, live[j].ID, 0, func(b *store.Breadcrumb) error { randomContent(b); return nil })
			if err != nil {
				t.Fatalf("update %d: %v", i, err)
			}
			live[j] = b
			log = append(log, change(store.Updated, b))
		default:
			j := mine[r.IntN(len(mine))]
			if err := s.Delete(ctx, a, live[j].ID); err != nil {
				t.Fatalf("delete %d: %v", i, err)
			}
			log = append(log, change(store.Deleted, live[j]))
			live = slices.Delete(live, j, j+1)
		}
	}
	close(gate)

	// A record deleted by now answers no context condition of an agent
	// who is not its owner's curator (store.Change.ContextFor): its
	// changes reach such a stream when the reader matched them while the
	// record was live, and not when the stream read them from the
	// database after the delete, as a stream that fell behind does.
	gone := map[string]bool{}
	for _, c := range log {
		if c.Kind == store.Deleted {
			gone[c.BreadcrumbID] = true
		}
	}
	maybe := func(st *eventStream, c *store.Change) bool {
		return st.filter.NeedsContext() && (c.Kind == store.Created || c.Kind == store.Updated) &&
			gone[c.BreadcrumbID] && !(st.a.Curator && st.a.OwnerID == c.OwnerID)
	}
	check := func(st *eventStream) {
		t.Helper()
		var want, must []store.Change
		for _, c := range log {
			if c.VisibleTo(st.a) && matches(t, st.filter, &c) {
				want = append(want, c)
				if !maybe(st, &c) {
					must = append(must, c)
				}
			}
		}
		// fits reports whether got is want with some of the changes that
		// maybe come left out, in order, and complete that it has every
		// one that must come.
		fits := func(got []store.Event) (ok, complete bool) {
			j, n := 0, 0
			for i := range want {
				if j < len(got) && sameEvent(got[j], want[i]) {
					j++
					if !maybe(st, &want[i]) {
						n++
					}
					continue
				}
				if j < len(got) && !maybe(st, &want[i]) {
					return false, false
				}
			}
			for i := 1; i < len(got); i++ {
				if got[i-1].Seq >= got[i].Seq {
					return false, false
				}
			}
			return j == len(got), n == len(must)
		}
		var got []store.Event
		for deadline := time.Now().Add(30 * time.Second); ; {
			var err error
			if got, err = st.snapshot(); err != nil {
				t.Fatalf("%+v %+v: stream ended: %v", st.a, st.filter, err)
			}
			ok, complete := fits(got)
			if !ok {
				t.Fatalf("%+v %+v: got %d events %v, want %d", st.a, st.filter, len(got), describe(got), len(want))
			}
			if complete {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%+v %+v: got %d events %v, want %d of which %d must come", st.a, st.filter, len(got), describe(got), len(want), len(must))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(must) == 0 {
			return
		}
		direct := collectFiltered(t, s, st.a, start, st.filter, len(must))
		if !slices.EqualFunc(direct, must, sameEvent) || !slices.IsSortedFunc(direct, func(x, y store.Event) int { return cmp.Compare(x.Seq, y.Seq) }) {
			t.Fatalf("%+v %+v: from the backlog %v, want %d events", st.a, st.filter, describe(direct), len(must))
		}
	}
	for _, st := range append(streams, stalled...) {
		check(st)
	}
	if got, _ := stalled[2].snapshot(); len(got) < 300 {
		t.Fatalf("the acme curator's stalled stream saw %d changes; the test means it to fall behind by more than a buffer", len(got))
	}
	cancel()
	wg.Wait()
}

// collectFiltered reads n events from a stream that starts after the
// writes, so from the backlog.
func collectFiltered(t *testing.T, s store.Store, a store.Actor, after int64, f *store.Selector, n int) []store.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []store.Event
	for e, err := range s.Events(ctx, a, after, f) {
		if err != nil {
			t.Fatal(err)
		}
		if out = append(out, e); len(out) == n {
			break
		}
	}
	return out
}
