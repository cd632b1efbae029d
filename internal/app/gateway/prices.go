package gateway

import (
	"context"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
)

// CostHeader carries, on every answer that is not streamed, what the
// response cost in US dollars, when its model has a price (or the provider
// reported a cost). A streamed answer carries its cost in its last usage.
const CostHeader = "X-Ctxkit-Cost-Usd"

// Bounds on the price table of a configuration.
const (
	maxPrices       = 10000
	maxPriceModel   = 256
	maxPricePerMTok = 100000 // US dollars per million tokens: more is a typo
)

// builtinPrices are the prices ctxkit knows without configuration, by
// provider type, in US dollars per million tokens, as the providers'
// public pricing pages listed them on 2026-11-27 (standard tier, not
// batch; Anthropic's 5-minute cache writes; the long-context price above
// 200k prompt tokens where the page lists one). They are a default, not a
// bill: a configuration's prices rows replace them.
//
// A row's model matches the model of the request sent upstream when it is
// the same name or the name of a dated snapshot of it (see priceMatch), so
// claude-sonnet-4-5 prices claude-sonnet-4-5-20250929 but gpt-4o does not
// price gpt-4o-mini: a model ctxkit has no row for gets no cost rather
// than another model's.
//
// Omitted cache prices are the input price: OpenAI, Google and DeepSeek
// write to their caches at no extra charge. No provider here bills
// reasoning apart from output, so no row has a reasoning price.
//
// Bedrock and providers of other types have no built-in prices. Bedrock's
// on-demand prices are AWS's own, by region (a cross-region profile such
// as "us." is billed at the price of the region the request was made in)
// and, for Claude from Sonnet 4.5 on, by endpoint type ("global." or
// regional profiles); on 2026-11-27 the figures could not be read from
// AWS's pricing page itself, and a row copied from another provider's
// table or a reseller's would bill wrong without a word. Price Bedrock
// models in the configuration, one row per model id or a prefix row per
// profile:
//
//	{"provider": "bedrock-up", "model": "global.anthropic.claude-sonnet-4-5*", "input": ..., "output": ...}
//
// Checked on 2026-11-27 against the providers' own pages: every Anthropic
// row (and its cache prices) against platform.claude.com's pricing page,
// gpt-5-nano against its page at developers.openai.com; the other rows
// stand as they were listed, unconfirmed at that date.
var builtinPrices = map[string][]Price{
	TypeAnthropic: {
		{Model: "claude-opus-4-6", Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
		{Model: "claude-opus-4-5", Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
		{Model: "claude-opus-4-1", Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
		{Model: "claude-opus-4", Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
		{Model: "claude-sonnet-4-6", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
		{Model: "claude-sonnet-4-5", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, LongContext: sonnetLong},
		{Model: "claude-sonnet-4", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, LongContext: sonnetLong},
		{Model: "claude-haiku-4-5", Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
		{Model: "claude-3-5-haiku", Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	},
	TypeOpenAI: {
		{Model: "gpt-5.1", Input: 1.25, Output: 10, CacheRead: 0.125},
		{Model: "gpt-5", Input: 1.25, Output: 10, CacheRead: 0.125},
		{Model: "gpt-5-mini", Input: 0.25, Output: 2, CacheRead: 0.025},
		{Model: "gpt-5-nano", Input: 0.05, Output: 0.4, CacheRead: 0.005},
		{Model: "gpt-4.1", Input: 2, Output: 8, CacheRead: 0.5},
		{Model: "gpt-4.1-mini", Input: 0.4, Output: 1.6, CacheRead: 0.1},
		{Model: "gpt-4.1-nano", Input: 0.1, Output: 0.4, CacheRead: 0.025},
		{Model: "gpt-4o", Input: 2.5, Output: 10, CacheRead: 1.25},
		{Model: "gpt-4o-mini", Input: 0.15, Output: 0.6, CacheRead: 0.075},
		{Model: "o3", Input: 2, Output: 8, CacheRead: 0.5},
		{Model: "o4-mini", Input: 1.1, Output: 4.4, CacheRead: 0.275},
	},
	TypeGemini: {
		{Model: "gemini-3-pro-preview", Input: 2, Output: 12, CacheRead: 0.2,
			LongContext: &LongContext{AboveTokens: 200_000, Input: 4, Output: 18, CacheRead: 0.4}},
		{Model: "gemini-2.5-pro", Input: 1.25, Output: 10, CacheRead: 0.125,
			LongContext: &LongContext{AboveTokens: 200_000, Input: 2.5, Output: 15, CacheRead: 0.25}},
		{Model: "gemini-2.5-flash", Input: 0.3, Output: 2.5, CacheRead: 0.03},
		{Model: "gemini-2.5-flash-lite", Input: 0.1, Output: 0.4, CacheRead: 0.01},
	},
	TypeMistral: {
		{Model: "mistral-large-2512", Input: 0.5, Output: 1.5},
		{Model: "mistral-small", Input: 0.1, Output: 0.3},
		{Model: "magistral-medium", Input: 2, Output: 5},
		{Model: "magistral-small", Input: 0.5, Output: 1.5},
		{Model: "codestral", Input: 0.3, Output: 0.9},
	},
	TypeDeepSeek: {
		{Model: "deepseek-chat", Input: 0.28, Output: 0.42, CacheRead: 0.028},
		{Model: "deepseek-reasoner", Input: 0.28, Output: 0.42, CacheRead: 0.028},
	},
}

// sonnetLong is the price of Claude Sonnet 4 and 4.5 for prompts past
// 200k tokens (the 1M-token context window).
var sonnetLong = &LongContext{AboveTokens: 200_000, Input: 6, Output: 22.5, CacheRead: 0.6, CacheWrite: 7.5}

// prices are a configuration's price rows by provider name.
type prices map[string][]Price

// checkPrices checks c.Prices against the providers c names (names) and
// keeps them, by provider name, for the gateway.
func (c *Config) checkPrices(names map[string]bool) error {
	if len(c.Prices) > maxPrices {
		return fmt.Errorf("prices: %d rows, at most %d", len(c.Prices), maxPrices)
	}
	book := prices{}
	seen := map[[2]string]int{}
	for i, p := range c.Prices {
		at := fmt.Sprintf("prices[%d]", i)
		if p.Provider == "" {
			return fmt.Errorf("%s.provider: required (the name of a configured provider)", at)
		}
		if !names[p.Provider] {
			return fmt.Errorf("%s.provider: %q is not the name of a configured provider", at, p.Provider)
		}
		if err := checkPriceModel(p.Model); err != nil {
			return fmt.Errorf("%s.model: %w", at, err)
		}
		if j, ok := seen[[2]string{p.Provider, p.Model}]; ok {
			return fmt.Errorf("%s.model: %q of provider %q is already priced by prices[%d]", at, p.Model, p.Provider, j)
		}
		seen[[2]string{p.Provider, p.Model}] = i
		if err := checkRates(at, p.rates()); err != nil {
			return err
		}
		if l := p.LongContext; l != nil {
			if l.AboveTokens <= 0 {
				return fmt.Errorf("%s.long_context.above_tokens: required, a number of prompt tokens above 0", at)
			}
			if err := checkRates(at+".long_context", l.rates()); err != nil {
				return err
			}
		}
		book[p.Provider] = append(book[p.Provider], p)
	}
	c.prices = book
	return nil
}

// rates are the prices of each kind of token, in US dollars per million.
type rates struct{ input, output, cacheRead, cacheWrite, reasoning float64 }

func (p *Price) rates() rates {
	return rates{p.Input, p.Output, p.CacheRead, p.CacheWrite, p.Reasoning}
}

func (l *LongContext) rates() rates {
	return rates{l.Input, l.Output, l.CacheRead, l.CacheWrite, l.Reasoning}
}

// checkRates checks the prices of a row at path at.
func checkRates(at string, r rates) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"input", r.input}, {"output", r.output}, {"cache_read", r.cacheRead}, {"cache_write", r.cacheWrite}, {"reasoning", r.reasoning}} {
		switch {
		case math.IsNaN(f.v) || f.v < 0:
			return fmt.Errorf("%s.%s: %v is negative (US dollars per million tokens)", at, f.name, f.v)
		case f.v > maxPricePerMTok:
			return fmt.Errorf("%s.%s: %v is more than %d US dollars per million tokens (prices are per million tokens)", at, f.name, f.v, maxPricePerMTok)
		}
	}
	return nil
}

// checkPriceModel checks the model of a price row: a model name, or a
// prefix ending in "*" that prices every model it begins.
func checkPriceModel(m string) error {
	switch {
	case m == "":
		return fmt.Errorf("required (a model name, or a prefix ending in \"*\")")
	case len(m) > maxPriceModel:
		return fmt.Errorf("longer than %d bytes", maxPriceModel)
	case strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("%q holds a space or a control character", m)
	case strings.Contains(strings.TrimSuffix(m, "*"), "*"):
		return fmt.Errorf("%q: \"*\" may only end the name", m)
	}
	return nil
}

// priceMatch reports how well row, a price row's model, matches model,
// the model a request was sent upstream for: 0 for not at all, else more
// for a longer row, and for the same length more for an exact name than
// for a snapshot and for a snapshot than for a prefix. A row "p*" matches
// every model that begins with p; any other row matches the model of its
// own name and its dated snapshots: the row's name followed by "-" or "@"
// and "latest", a date (20250929, 2024-08-06) or a version number of 3 or
// 4 digits (001, 2411).
func priceMatch(row, model string) int {
	if prefix, ok := strings.CutSuffix(row, "*"); ok {
		if strings.HasPrefix(model, prefix) {
			return 4*len(prefix) + 1
		}
		return 0
	}
	if model == row {
		return 4*len(row) + 3
	}
	rest, ok := strings.CutPrefix(model, row)
	if !ok || len(rest) < 2 || (rest[0] != '-' && rest[0] != '@') || !snapshot(rest[1:]) {
		return 0
	}
	return 4*len(row) + 2
}

// snapshot reports whether s names a dated snapshot or a version of a
// model: "latest", 3, 4, 6 or 8 digits, or a date YYYY-MM-DD.
func snapshot(s string) bool {
	if s == "latest" {
		return true
	}
	digits := func(s string) bool {
		return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	}
	switch len(s) {
	case 3, 4, 6, 8:
		return digits(s)
	case 10:
		return digits(s[:4]) && s[4] == '-' && digits(s[5:7]) && s[7] == '-' && digits(s[8:])
	}
	return false
}

// bestPrice is the row of rows that matches model best.
func bestPrice(rows []Price, model string) (Price, bool) {
	best, score := Price{}, 0
	for _, r := range rows {
		if s := priceMatch(r.Model, model); s > score {
			best, score = r, s
		}
	}
	return best, score > 0
}

// priceOf is what p charges for model: the configuration's row for p's
// name that matches it best, else the built-in row for p's type.
func (g *Gateway) priceOf(p *Provider, model string) (Price, bool) {
	if pr, ok := bestPrice(g.cfg.prices[p.Name], model); ok {
		return pr, true
	}
	return bestPrice(builtinPrices[p.Type], model)
}

// price is what u cost at p's price for model, in US dollars, and false
// when the model has no price.
func (g *Gateway) price(p *Provider, model string, u chat.Usage) (float64, bool) {
	pr, ok := g.priceOf(p, model)
	if !ok {
		return 0, false
	}
	return pr.cost(u), true
}

// tokens splits u into kinds that do not overlap, so that they add up to
// every token of the response: input not read from or written to a cache,
// cache reads, cache writes, output that is not reasoning, reasoning. A
// count an upstream sent negative, or larger than the count it is part
// of, is taken as what fits.
func tokens(u chat.Usage) (input, cacheRead, cacheWrite, output, reasoning int64) {
	cacheRead, cacheWrite = max(u.CacheRead, 0), max(u.CacheWrite, 0)
	input = max(u.Input-cacheRead-cacheWrite, 0)
	reasoning = min(max(u.Reasoning, 0), max(u.Output, 0))
	output = max(u.Output, 0) - reasoning
	return
}

// cost is what u costs at pr, in US dollars: at pr's long-context price
// when the prompt (Input, cached tokens included) is longer than it
// allows, every token of it. Cache reads and writes without a price of
// their own cost the input price; reasoning without a price of its own is
// output (the providers bill it so: it is counted in Output, and is never
// added again).
func (pr Price) cost(u chat.Usage) float64 {
	r := pr.rates()
	if l := pr.LongContext; l != nil && u.Input > l.AboveTokens {
		r = l.rates()
	}
	in, read, write, out, reasoning := tokens(u)
	if r.cacheRead == 0 {
		r.cacheRead = r.input
	}
	if r.cacheWrite == 0 {
		r.cacheWrite = r.input
	}
	if r.reasoning == 0 {
		r.reasoning = r.output
	}
	c := float64(in)*r.input + float64(read)*r.cacheRead + float64(write)*r.cacheWrite +
		float64(out)*r.output + float64(reasoning)*r.reasoning
	return roundCost(c / 1e6)
}

// roundCost rounds c to 12 significant digits: prices have a few digits
// and token counts at most ten, so this keeps every digit the bill has
// and drops the binary fraction's noise (0.0030000000000000005).
func roundCost(c float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(c, 'g', 12, 64), 64)
	if err != nil {
		return c
	}
	return r
}

// costed is u with its cost set: the provider's own report when it made
// one, else u's price at p's price for model; unchanged when the model
// has no price.
func (g *Gateway) costed(p *Provider, model string, u chat.Usage) chat.Usage {
	if u.Cost != nil {
		return u
	}
	if c, ok := g.price(p, model, u); ok {
		u.Cost = &c
	}
	return u
}

// metered passes chunks on with the cost of every usage set (usage is a
// running total, and so is its cost), and counts the last usage in the
// metrics when the stream ends, however it ends; done, when not nil, is
// then given that usage too (not called when the stream had none).
func (g *Gateway) metered(ctx context.Context, p *Provider, model string, chunks iter.Seq2[chat.Chunk, error], done func(chat.Usage)) iter.Seq2[chat.Chunk, error] {
	pr, priced := g.priceOf(p, model)
	return func(yield func(chat.Chunk, error) bool) {
		var last *chat.Usage
		defer func() {
			if last != nil {
				g.account(ctx, p, model, *last)
				if done != nil {
					done(*last)
				}
			}
		}()
		for c, err := range chunks {
			if err == nil && c.Type == chat.ChunkUsage && c.Usage != nil {
				// A copy: the decoder's usage is its own.
				u := *c.Usage
				if u.Cost == nil && priced {
					cost := pr.cost(u)
					u.Cost = &cost
				}
				c.Usage, last = &u, &u
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// account counts u, the usage of one response of p's model, in the
// metrics of the request's caller: its tokens by kind, and its cost, or
// the response as unpriced.
func (g *Gateway) account(ctx context.Context, p *Provider, model string, u chat.Usage) {
	m := g.metrics
	caller := callerOf(ctx)
	owner, agent := m.owners.label(caller.Owner), m.agents.label(caller.Agent)
	in, read, write, out, reasoning := tokens(u)
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", in}, {"cache_read", read}, {"cache_write", write}, {"output", out}, {"reasoning", reasoning}} {
		if k.n > 0 {
			m.tokens.WithLabelValues(owner, agent, p.Name, model, k.kind).Add(float64(k.n))
		}
	}
	switch {
	case u.Cost == nil:
		m.unpriced.WithLabelValues(p.Name, model).Inc()
	case *u.Cost > 0 && !math.IsInf(*u.Cost, 0):
		m.cost.WithLabelValues(owner, agent, p.Name, model).Add(*u.Cost)
	}
}

// formatCost writes a cost as the header and the wire fields carry it: in
// decimal, with every digit it has.
func formatCost(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) }
