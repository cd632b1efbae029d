package store_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// TestReviewSelectorMatchCostIsBounded: a selector within every bound
// (16 conditions, one descendant segment each) matched against a context
// within store.MaxContextBytes must cost a bounded amount per change. The
// feed's reader matches every stream's selector under its one lock, for
// every owner's streams, so one agent that writes its own large records
// and opens streams with such selectors holds up every owner's events.
// Today each `$..*` condition collects every node of the document,
// sixteen times over, per stream, per change: a 1 MiB array of zeros
// (half a million nodes) costs 768 MiB allocated and two seconds.
func TestReviewSelectorMatchCostIsBounded(t *testing.T) {
	// ne holds on every node that is not "never": every condition is
	// evaluated in full.
	var conds []string
	for range store.MaxConditions {
		conds = append(conds, `{"path":"$..*","op":"ne","value":"never"}`)
	}
	sel, err := store.ParseSelector([]byte(`{"context_match":[` + strings.Join(conds, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	// A quarter of MaxContextBytes keeps the test light; the cost grows
	// with the size.
	n := store.MaxContextBytes / 8
	doc, err := view.DecodeJSON([]byte(`{"a":[` + strings.Repeat("0,", n-1) + `0]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := &store.Event{Kind: store.Created, Version: 1}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if !sel.Match(e, doc) {
		t.Fatal("the selector should match")
	}
	runtime.ReadMemStats(&after)
	const limit = 16 << 20
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("matching one change allocated %d MiB; want at most %d MiB", got>>20, limit>>20)
	}
}
