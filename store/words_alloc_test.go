package store_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// TestWordsAllocations: splitting a text of lowercase words, such as a
// gateway traffic record's search text, allocates the slice of words
// once, not once per doubling of it.
func TestWordsAllocations(t *testing.T) {
	text := strings.Repeat("attempts\nlatency_ms\n0.7\nmodel\ngpt-x\nprovider\nup\nstatus\n200\n", 6)
	want := len(store.Words(text))
	if want < 60 {
		t.Fatalf("%d words; the test wants some sixty", want)
	}
	if n := testing.AllocsPerRun(100, func() { store.Words(text) }); n > 1 {
		t.Errorf("%v allocations to split %d words, want 1", n, want)
	}
	if got := store.Words(" ,; "); got != nil {
		t.Errorf("no words: %q, want nil", got)
	}
}
