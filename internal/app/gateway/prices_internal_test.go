package gateway

import (
	"math"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// TestPriceLookup: which row prices a model — the configuration's (by
// provider name) before the built-in table's (by provider type), the
// longest row, a dated snapshot of a row's model but never another model
// that merely begins like it.
func TestPriceLookup(t *testing.T) {
	g := &Gateway{cfg: &Config{prices: prices{
		"mine": {
			{Model: "gpt-4o", Input: 100, Output: 100},
			{Model: "local-*", Input: 0, Output: 0},
			{Model: "local-big*", Input: 9, Output: 9},
		},
	}}}
	mine := &Provider{Name: "mine", Type: TypeOpenAI}
	other := &Provider{Name: "other", Type: TypeOpenAI}
	claude := &Provider{Name: "claude", Type: TypeAnthropic}
	bedrock := &Provider{Name: "br", Type: TypeBedrock}
	for _, c := range []struct {
		p         *Provider
		model     string
		wantRow   string // "": no price
		wantInput float64
	}{
		{mine, "gpt-4o", "gpt-4o", 100},            // the configuration wins
		{mine, "gpt-4o-2024-08-06", "gpt-4o", 100}, // and prices its snapshots
		{mine, "gpt-4o-mini", "gpt-4o-mini", 0.15}, // a model it does not price is the table's
		{other, "gpt-4o", "gpt-4o", 2.5},           // rows are by provider name: another provider has the table's
		{other, "gpt-4o-mini-2024-07-18", "gpt-4o-mini", 0.15},
		{other, "gpt-4o-audio-preview", "", 0}, // not a snapshot of gpt-4o
		{other, "gpt-5", "gpt-5", 1.25},
		{other, "gpt-5-mini", "gpt-5-mini", 0.25}, // the longer row
		{other, "gpt-5-codex", "", 0},             // unknown variant: no price rather than gpt-5's
		{other, "o3-pro", "", 0},                  // o3-pro costs ten times o3
		{other, "gpt-4o@20240806", "gpt-4o", 2.5}, // Vertex-style snapshot
		{other, "gpt-4o-latest", "gpt-4o", 2.5},
		{other, "gpt-4o-12", "", 0},              // two digits are not a snapshot
		{mine, "local-llama", "local-*", 0},      // a prefix row
		{mine, "local-big-70b", "local-big*", 9}, // the longer prefix
		{claude, "claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 3},
		{claude, "claude-sonnet-4-20250514", "claude-sonnet-4", 3},
		{claude, "claude-opus-4-1-20250805", "claude-opus-4-1", 15},
		{claude, "claude-opus-4-7", "", 0}, // "7" is not a snapshot of claude-opus-4
		{claude, "claude-haiku-4-5", "claude-haiku-4-5", 1},
		{bedrock, "anthropic.claude-sonnet-4-5-20250929-v1:0", "", 0}, // no built-in prices for Bedrock
		{mine, "", "", 0},
	} {
		pr, ok := g.priceOf(c.p, c.model)
		if c.wantRow == "" {
			if ok {
				t.Errorf("%s %q: priced by %q, want no price", c.p.Name, c.model, pr.Model)
			}
			continue
		}
		if !ok || pr.Model != c.wantRow || pr.Input != c.wantInput {
			t.Errorf("%s %q: row %q (%v, %v), want %q at %v", c.p.Name, c.model, pr.Model, pr.Input, ok, c.wantRow, c.wantInput)
		}
	}
}

// TestBuiltinPrices: every built-in row prices its own model with itself
// and its snapshot, no model is listed twice for a type, and every price
// is a sane number of dollars per million tokens.
func TestBuiltinPrices(t *testing.T) {
	g := &Gateway{cfg: &Config{}}
	n := 0
	for typ, rows := range builtinPrices {
		seen := map[string]bool{}
		for _, r := range rows {
			n++
			if seen[r.Model] {
				t.Errorf("%s %s: listed twice", typ, r.Model)
			}
			seen[r.Model] = true
			if err := checkPriceModel(r.Model); err != nil || strings.HasSuffix(r.Model, "*") {
				t.Errorf("%s %q: not a model name (%v)", typ, r.Model, err)
			}
			all := []rates{r.rates()}
			if l := r.LongContext; l != nil {
				all = append(all, l.rates())
				if l.AboveTokens < 1000 || l.Input < r.Input || l.Output < r.Output {
					t.Errorf("%s %s: a long-context price %+v below the standard one", typ, r.Model, *l)
				}
			}
			for _, rt := range all {
				for _, v := range []float64{rt.input, rt.output, rt.cacheRead, rt.cacheWrite, rt.reasoning} {
					if v < 0 || v > 200 {
						t.Errorf("%s %s: price %v is not per million tokens", typ, r.Model, v)
					}
				}
			}
			if r.Input == 0 || r.Output == 0 {
				t.Errorf("%s %s: no input or output price", typ, r.Model)
			}
			p := &Provider{Name: "p", Type: typ}
			for _, m := range []string{r.Model, r.Model + "-20260101"} {
				if got, ok := g.priceOf(p, m); !ok || got.Model != r.Model {
					t.Errorf("%s %s: priced by %q", typ, m, got.Model)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("%d built-in prices, want a table of the common models", n)
	}
}

// TestCostArithmetic: input is what the caches did not serve, cache reads
// and writes have their own prices (the input price when they have none),
// reasoning is output unless it has a price of its own, and counts an
// upstream got wrong (negative, reasoning above output) are taken as what
// fits.
func TestCostArithmetic(t *testing.T) {
	anth := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	long := Price{Input: 1.25, Output: 10, CacheRead: 0.125,
		LongContext: &LongContext{AboveTokens: 200_000, Input: 2.5, Output: 15, CacheRead: 0.25}}
	for _, c := range []struct {
		name string
		pr   Price
		u    chat.Usage
		want float64
	}{
		{"plain", anth, chat.Usage{Input: 1000, Output: 100}, (1000*3 + 100*15) / 1e6},
		{"caches", anth, chat.Usage{Input: 1000, CacheRead: 600, CacheWrite: 300, Output: 100}, (100*3 + 600*0.3 + 300*3.75 + 100*15) / 1e6},
		{"reasoning is output", anth, chat.Usage{Input: 10, Output: 100, Reasoning: 60}, (10*3 + 100*15) / 1e6},
		{"reasoning priced", Price{Input: 1, Output: 2, Reasoning: 5}, chat.Usage{Output: 100, Reasoning: 60}, (40*2 + 60*5) / 1e6},
		{"cache at input price", Price{Input: 2, Output: 4}, chat.Usage{Input: 100, CacheRead: 50, CacheWrite: 10}, 100 * 2 / 1e6},
		{"cache larger than input", anth, chat.Usage{Input: 10, CacheRead: 50}, 50 * 0.3 / 1e6},
		{"negative counts", anth, chat.Usage{Input: -5, Output: -1, CacheRead: -3, Reasoning: -2}, 0},
		{"reasoning above output", Price{Output: 1, Reasoning: 10}, chat.Usage{Output: 5, Reasoning: 50}, 5 * 10 / 1e6},
		{"free", Price{}, chat.Usage{Input: 1e6, Output: 1e6}, 0},
		{"no float noise", Price{Input: 0.1, Output: 0.2}, chat.Usage{Input: 10000, Output: 10000}, 0.003},
		{"long context, at the bound", long, chat.Usage{Input: 200_000, Output: 10}, (200_000*1.25 + 10*10) / 1e6},
		{"long context, past it", long, chat.Usage{Input: 200_001, CacheRead: 1, Output: 10}, (200_000*2.5 + 1*0.25 + 10*15) / 1e6},
		{"long context without cache price", Price{Input: 1, LongContext: &LongContext{AboveTokens: 10, Input: 2}}, chat.Usage{Input: 11, CacheRead: 5}, 11 * 2 / 1e6},
	} {
		if got := c.pr.cost(c.u); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := formatCost(Price{Input: 0.1, Output: 0.2}.cost(chat.Usage{Input: 10000, Output: 10000})); got != "0.003" {
		t.Errorf("formatted %q, want 0.003", got)
	}
	if got := formatCost(Price{Input: 0.05}.cost(chat.Usage{Input: 1})); got != "0.00000005" {
		t.Errorf("formatted %q, want 0.00000005 (decimal, never 5e-08)", got)
	}
}

// TestMeteredKeepsReportedCost: a cost the provider reported (OpenRouter)
// is the one carried and counted, not the table's; the decoder's usage is
// not written to.
func TestMeteredKeepsReportedCost(t *testing.T) {
	g := &Gateway{cfg: &Config{}, metrics: newMetrics()}
	p := &Provider{Name: "p", Type: TypeOpenAI}
	reported := 0.5
	up := []chat.Chunk{
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 10}},
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 10, Output: 5, Cost: &reported}},
	}
	var got []*chat.Usage
	var final *chat.Usage
	for c, err := range g.metered(t.Context(), p, "gpt-4o", func(yield func(chat.Chunk, error) bool) {
		for _, c := range up {
			if !yield(c, nil) {
				return
			}
		}
	}, func(u chat.Usage) { final = &u }) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Usage)
	}
	if got[0].Cost == nil || *got[0].Cost != 10*2.5/1e6 {
		t.Errorf("first usage: cost %v, want the table's", got[0].Cost)
	}
	if up[0].Usage.Cost != nil {
		t.Error("the decoder's usage was written to")
	}
	if got[1].Cost == nil || *got[1].Cost != 0.5 {
		t.Errorf("reported cost replaced: %v", got[1].Cost)
	}
	if final == nil || final.Output != 5 || final.Cost == nil || *final.Cost != 0.5 {
		t.Errorf("done got %+v, want the last usage", final)
	}
}

// FuzzPriceMatch: a row matches only models that begin with its name
// (its prefix for a "*" row), always matches its own name, and an exact
// match outranks every other match of a row of the same length.
func FuzzPriceMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"gpt-4o", "gpt-4o-2024-08-06"}, {"gpt-4o", "gpt-4o-mini"}, {"claude-sonnet-4", "claude-sonnet-4-5"},
		{"local-*", "local-llama"}, {"*", ""}, {"a", "a@20250101"}, {"x", "x-latest"}, {"x", "x-2024-13-99"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, row, model string) {
		s := priceMatch(row, model)
		prefix := strings.TrimSuffix(row, "*")
		if s > 0 && !strings.HasPrefix(model, prefix) {
			t.Fatalf("%q matches %q", row, model)
		}
		if !strings.HasSuffix(row, "*") && priceMatch(row, row) == 0 {
			t.Fatalf("%q does not match itself", row)
		}
		if s > 0 && model != row && !strings.HasSuffix(row, "*") && s >= priceMatch(row, row) {
			t.Fatalf("%q matches %q as well as itself", row, model)
		}
	})
}

// FuzzCost: whatever counts an upstream reports, a cost is a finite
// number, never negative, and adding tokens never makes it cheaper.
func FuzzCost(f *testing.F) {
	f.Add(int64(100), int64(7), int64(80), int64(0), int64(0), 3.0, 15.0, 0.3, 3.75, 0.0, int64(0), 0.0)
	f.Add(int64(-1), int64(-1), int64(-1), int64(-1), int64(-1), 0.0, 0.0, 0.0, 0.0, 0.0, int64(-1), 0.0)
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(0), int64(math.MaxInt64), 1e5, 1e5, 1e5, 1e5, 1e5, int64(200_000), 1e5)
	f.Fuzz(func(t *testing.T, in, out, read, write, reasoning int64, pi, po, pr, pw, pz float64, above int64, pl float64) {
		for _, v := range []float64{pi, po, pr, pw, pz, pl} {
			if math.IsNaN(v) || v < 0 || v > maxPricePerMTok {
				return // refused by the configuration check
			}
		}
		price := Price{Input: pi, Output: po, CacheRead: pr, CacheWrite: pw, Reasoning: pz}
		if above > 0 {
			price.LongContext = &LongContext{AboveTokens: above, Input: pl, Output: pl}
		}
		u := chat.Usage{Input: in, Output: out, CacheRead: read, CacheWrite: write, Reasoning: reasoning}
		c := price.cost(u)
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			t.Fatalf("cost %v of %+v at %+v", c, u, price)
		}
		if out >= 0 && out < math.MaxInt64/2 {
			more := u
			more.Output = out + 1000
			if price.cost(more) < c {
				t.Fatalf("more output is cheaper: %+v at %+v", u, price)
			}
		}
	})
}

// BenchmarkMetered is what pricing and counting add to one streamed
// response of 50 text chunks and a usage: a priced model (the table's
// row found once, the usage priced and counted) beside an unpriced one.
func BenchmarkMetered(b *testing.B) {
	chunks := make([]chat.Chunk, 0, 51)
	for range 50 {
		chunks = append(chunks, chat.Chunk{Type: chat.ChunkText, Text: "word "})
	}
	chunks = append(chunks, chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 1200, CacheRead: 1000, Output: 50}})
	src := func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
	g := &Gateway{cfg: &Config{}, metrics: newMetrics()}
	p := &Provider{Name: "claude", Type: TypeAnthropic}
	ctx := WithCaller(b.Context(), Caller{Owner: "o", Agent: "a"})
	for _, model := range []string{"claude-sonnet-4-5-20250929", "claude-unpriced"} {
		b.Run(model, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, err := range g.metered(ctx, p, model, src, nil) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("unmetered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, err := range src {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
