package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Importer loads breadcrumbs in bulk (both backends' Import).
type Importer interface {
	Import(ctx context.Context, a store.Actor, in []store.Breadcrumb) ([]store.Breadcrumb, error)
}

// groupSize is how many generated breadcrumbs share a group word: a query
// on one matches that many at every store size.
const groupSize = 50

// Corpus generates breadcrumbs from index from to to: each has the group
// word grpN (N = index/groupSize), a record word recN, and words drawn from
// a Zipf-distributed vocabulary of 5,000.
func Corpus(from, to int) []store.Breadcrumb {
	r := rand.New(rand.NewPCG(uint64(from), 7))
	zipf := rand.NewZipf(r, 1.1, 1, 4999)
	out := make([]store.Breadcrumb, 0, to-from)
	for i := from; i < to; i++ {
		words := make([]string, 24)
		for j := range words {
			words[j] = "w" + strconv.FormatUint(zipf.Uint64(), 10)
		}
		ctx, _ := json.Marshal(map[string]any{"id": i, "text": fmt.Sprint(words), "group": fmt.Sprintf("grp%d", i/groupSize)})
		out = append(out, store.Breadcrumb{Title: fmt.Sprintf("rec%d %s %s", i, words[0], words[1]), Description: fmt.Sprint(words[2:6]),
			Tags: []string{"t" + strconv.Itoa(i%20)}, Context: ctx})
	}
	return out
}

// sizes are the two store sizes of BenchSearch: 1,000 and 10,000 by
// default (the quick pass), 10,000 and 100,000 with CTXKIT_BENCH_FULL=1.
func sizes() (int, int) {
	if os.Getenv("CTXKIT_BENCH_FULL") == "1" {
		return 10_000, 100_000
	}
	return 1_000, 10_000
}

// BenchSearch measures top-10 search latency at two store sizes in one run
// and reports the p50 of each (µs) and their ratio; the timed loop runs the
// queries at the larger size.
func BenchSearch(b *testing.B, s store.Store, imp Importer) {
	ctx := context.Background()
	a := store.Actor{OwnerID: "bench", AgentID: "a"}
	small, large := sizes()
	load := func(from, to int) {
		for start := from; start < to; start += 10_000 {
			if _, err := imp.Import(ctx, a, Corpus(start, min(start+10_000, to))); err != nil {
				b.Fatal(err)
			}
		}
	}
	queries := func(n int) []string {
		r := rand.New(rand.NewPCG(1, 2))
		groups := n / groupSize
		var qs []string
		for range 40 {
			g, h := r.IntN(groups), r.IntN(groups)
			qs = append(qs, fmt.Sprintf("grp%d", g), fmt.Sprintf("grp%d w1", g), fmt.Sprintf("grp%d OR grp%d", g, h),
				fmt.Sprintf("grp%d -w3", g), fmt.Sprintf("rec%d", r.IntN(n)))
		}
		return qs
	}
	p50 := func(n int) time.Duration {
		var ds []time.Duration
		for _, q := range queries(n) {
			t0 := time.Now()
			hits, err := s.Search(ctx, a, store.SearchQuery{Text: q, Limit: 10})
			ds = append(ds, time.Since(t0))
			if err != nil || len(hits) == 0 {
				b.Fatalf("%q: %v, %d hits", q, err, len(hits))
			}
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	load(0, small)
	p50(small) // warm up
	ps := p50(small)
	load(small, large)
	p50(large)
	pl := p50(large)
	qs := queries(large)
	i := 0
	for b.Loop() {
		if _, err := s.Search(ctx, a, store.SearchQuery{Text: qs[i%len(qs)], Limit: 10}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	// Reported after the loop, which resets reported metrics when it starts.
	b.ReportMetric(float64(ps.Microseconds()), fmt.Sprintf("p50-%d-µs", small))
	b.ReportMetric(float64(pl.Microseconds()), fmt.Sprintf("p50-%d-µs", large))
	b.ReportMetric(float64(pl)/float64(ps), "p50-ratio")
}
