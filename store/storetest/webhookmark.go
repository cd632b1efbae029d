package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// testWebhookChangesMark: WebhookChanges reads up to the mark it is
// given and no further, a page at a time; and a reader that follows the
// fan-out's rule under concurrent writers (read up to a LatestSeq answer,
// then move the cursor to it on a short page) gets every event once, in
// order, never one above its mark: no event at or below a mark commits
// after it.
func testWebhookChangesMark(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice := store.Actor{OwnerID: "acme", AgentID: "alice"}
	w, _ := newHook(t, s, alice, `{}`)
	var seqs []int64
	for i := range 3 {
		create(t, s, alice, crumb(fmt.Sprintf("before %d", i)))
		seqs = append(seqs, latest(t, s))
	}
	mark := latest(t, s)
	create(t, s, alice, crumb("after one"))
	create(t, s, alice, crumb("after two"))

	got := func(w store.Webhook, mark int64, limit int) []int64 {
		t.Helper()
		cs, missed, err := s.WebhookChanges(ctx, w, mark, limit, false)
		if err != nil || missed != 0 {
			t.Fatalf("changes up to %d: missed %d, %v", mark, missed, err)
		}
		out := []int64{}
		for _, c := range cs {
			out = append(out, c.Seq)
		}
		return out
	}
	if g := got(w, mark, 100); !slices.Equal(g, seqs) {
		t.Fatalf("changes up to %d: %v, want %v", mark, g, seqs)
	}
	if g := got(w, mark, 2); !slices.Equal(g, seqs[:2]) {
		t.Fatalf("a page of 2 up to %d: %v, want %v", mark, g, seqs[:2])
	}
	at := w
	at.Cursor = seqs[1]
	if g := got(at, mark, 2); !slices.Equal(g, seqs[2:]) {
		t.Fatalf("from %d up to %d: %v, want %v", at.Cursor, mark, g, seqs[2:])
	}
	at.Cursor = mark
	if g := got(at, mark, 100); len(g) != 0 {
		t.Fatalf("from the mark: %v, want none", g)
	}
	if g := got(w, seqs[0], 100); !slices.Equal(g, seqs[:1]) {
		t.Fatalf("up to %d: %v, want %v", seqs[0], g, seqs[:1])
	}
	if g := got(w, 0, 100); len(g) != 0 {
		t.Fatalf("up to 0: %v, want none", g)
	}

	// Concurrent writers; a reader follows them by marks.
	w, _ = newHook(t, s, alice, `{}`)
	const writers, each, page = 4, 30, 7
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				in := store.Breadcrumb{Title: fmt.Sprintf("w%d-%d", i, j), Context: json.RawMessage(`{}`)}
				if _, _, err := s.Create(ctx, alice, in, store.Idempotency{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var followed []int64
	cursor := w.Cursor
	follow := func() int64 {
		t.Helper()
		mark := latest(t, s)
		at := w
		at.Cursor = cursor
		for {
			cs, missed, err := s.WebhookChanges(ctx, at, mark, page, false)
			if err != nil || missed != 0 {
				t.Fatalf("changes: missed %d, %v", missed, err)
			}
			for _, c := range cs {
				if c.Seq > mark || c.Seq <= at.Cursor {
					t.Fatalf("a read after %d up to %d returned %d", at.Cursor, mark, c.Seq)
				}
				followed = append(followed, c.Seq)
				at.Cursor = c.Seq
			}
			if len(cs) < page {
				cursor = mark // nothing more at or below it, now or later
				return mark
			}
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(time.Millisecond):
		}
		follow()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	end := follow()
	all, _, err := s.WebhookChanges(ctx, w, end, writers*each+1, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*each {
		t.Fatalf("%d events after the webhook's cursor, want %d", len(all), writers*each)
	}
	want := make([]int64, len(all))
	for i, c := range all {
		want[i] = c.Seq
	}
	if !slices.Equal(followed, want) {
		t.Fatalf("the reader that followed the marks got %v,\nthe store holds %v", followed, want)
	}
}
