package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Importer loads breadcrumbs in bulk (both backends' Import).
type Importer interface {
	Import(ctx context.Context, a store.Actor, in []store.Breadcrumb) ([]store.Breadcrumb, error)
}

// Corpus generates breadcrumbs from index from to to. Besides words drawn
// from a Zipf-distributed vocabulary of 5,000 (w0 common, w4999 rare), each
// has words of known frequency: broad50 in half of them, broad10 in a
// tenth, the phrase "alpha beta" in a tenth, mid<i%1000> (a thousandth),
// and rec<i> (one).
func Corpus(from, to int) []store.Breadcrumb {
	r := rand.New(rand.NewPCG(uint64(from), 7))
	zipf := rand.NewZipf(r, 1.1, 1, 4999)
	out := make([]store.Breadcrumb, 0, to-from)
	for i := from; i < to; i++ {
		words := make([]string, 24)
		for j := range words {
			words[j] = "w" + strconv.FormatUint(zipf.Uint64(), 10)
		}
		text := strings.Join(words, " ")
		if i%2 == 0 {
			text += " broad50"
		}
		if i%10 == 0 {
			text += " broad10"
		}
		if i%10 == 3 {
			text += " alpha beta"
		}
		ctx, _ := json.Marshal(map[string]any{"id": i, "text": text, "mid": fmt.Sprintf("mid%d", i%1000)})
		out = append(out, store.Breadcrumb{Title: fmt.Sprintf("rec%d %s %s", i, words[0], words[1]), Description: strings.Join(words[2:6], " "),
			Tags: []string{"t" + strconv.Itoa(i%20)}, Context: ctx})
	}
	return out
}

// full reports whether CTXKIT_BENCH_FULL=1 asks for the full sizes.
func full() bool { return os.Getenv("CTXKIT_BENCH_FULL") == "1" }

// sizes are the two store sizes of BenchSearch: 1,000 and 10,000 by
// default (the quick pass), 10,000 and 100,000 with CTXKIT_BENCH_FULL=1.
func sizes() (int, int) {
	if full() {
		return 10_000, 100_000
	}
	return 1_000, 10_000
}

// benchQueries is the query mix at store size n: broad words (in half and
// a tenth of the records), common and rare vocabulary words, mid-frequency
// words, single records, a phrase, prefixes, OR and exclusion.
func benchQueries(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	var qs []string
	for range 8 {
		qs = append(qs, "broad50", "broad10", "broad50 broad10", "broad50 -broad10", `"alpha beta"`, "w1", "w2 w3",
			fmt.Sprintf("w%d", 200+r.IntN(800)), fmt.Sprintf("mid%d", r.IntN(1000)), fmt.Sprintf("mid%d OR mid%d", r.IntN(1000), r.IntN(1000)),
			fmt.Sprintf("rec%d", r.IntN(n)), "w1*", fmt.Sprintf("rec%d*", 1+r.IntN(9)))
	}
	return qs
}

// BenchSearch measures top-10 search latency at two store sizes in one run
// and reports the p50 of each (µs) and their ratio; the timed loop runs the
// queries at the larger size. With CTXKIT_BENCH_FULL=1 (10,000 against
// 100,000 breadcrumbs) it fails when the ratio is above 3.
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
	// Another owner's breadcrumbs share every word: search must not pay
	// for them.
	other := store.Actor{OwnerID: "bench-other", AgentID: "a"}
	if _, err := imp.Import(ctx, other, Corpus(0, small)); err != nil {
		b.Fatal(err)
	}
	p50 := func(n int) time.Duration {
		var ds []time.Duration
		for _, q := range benchQueries(n) {
			t0 := time.Now()
			res, err := s.Search(ctx, a, store.SearchQuery{Text: q, Limit: 10})
			ds = append(ds, time.Since(t0))
			if err != nil || len(res.Hits) == 0 {
				b.Fatalf("%q: %v, %d hits", q, err, len(res.Hits))
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
	qs := benchQueries(large)
	i := 0
	for b.Loop() {
		if _, err := s.Search(ctx, a, store.SearchQuery{Text: qs[i%len(qs)], Limit: 10}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	ratio := float64(pl) / float64(ps)
	// Reported after the loop, which resets reported metrics when it starts.
	b.ReportMetric(float64(ps.Microseconds()), fmt.Sprintf("p50-%d-µs", small))
	b.ReportMetric(float64(pl.Microseconds()), fmt.Sprintf("p50-%d-µs", large))
	b.ReportMetric(ratio, "p50-ratio")
	if full() && ratio > 3 {
		b.Fatalf("p50 at %d breadcrumbs is %v, %.1f× the %v at %d: the limit is 3×", large, pl, ratio, ps, small)
	}
}

// BenchSearchLargeDocuments measures search at its most costly: the
// default rank bound of matches (1,000), each with MaxSearchWords words of
// view text (words w0..w4999, uniformly drawn), queried with a word, a
// prefix, a phrase, and MaxQueryTerms words, phrases and prefixes ORed.
func BenchSearchLargeDocuments(b *testing.B, s store.Store, imp Importer) {
	ctx := context.Background()
	a := store.Actor{OwnerID: "bench", AgentID: "a"}
	r := rand.New(rand.NewPCG(5, 6))
	words := make([]string, store.MaxSearchWords)
	for start := 0; start < store.DefaultMaxRanked; start += 100 {
		var batch []store.Breadcrumb
		for i := start; i < start+100; i++ {
			for j := range words {
				words[j] = "w" + strconv.Itoa(r.IntN(5000))
			}
			batch = append(batch, store.Breadcrumb{Title: fmt.Sprintf("doc %d w%d", i, r.IntN(5000)), Context: json.RawMessage(`{}`),
				SearchText: strings.Join(words, " ")})
		}
		if _, err := imp.Import(ctx, a, batch); err != nil {
			b.Fatal(err)
		}
	}
	var terms []string
	for i := range store.MaxQueryTerms {
		switch i % 3 {
		case 0:
			terms = append(terms, fmt.Sprintf("w%d", i))
		case 1:
			terms = append(terms, fmt.Sprintf(`"w%d w%d"`, i, i+1))
		default:
			terms = append(terms, fmt.Sprintf("w%d*", i))
		}
	}
	qs := []string{"w1", "w1*", `"w1 w2"*`, strings.Join(terms, " OR ")}
	for _, q := range qs {
		if res, err := s.Search(ctx, a, store.SearchQuery{Text: q}); err != nil || len(res.Hits) == 0 {
			b.Fatalf("%q: %v, %d hits", q, err, len(res.Hits))
		}
	}
	i := 0
	for b.Loop() {
		if _, err := s.Search(ctx, a, store.SearchQuery{Text: qs[i%len(qs)]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
