package gateway

import (
	"sync"

	// The package's name is this file's type's: metric reads as what it
	// makes.
	metric "github.com/ctxkit/ctxkit/internal/metrics"
)

// metrics are the gateway's Prometheus metrics. Every label takes its
// values from a bounded set: providers, models and key ids from the
// configuration, outcomes from a fixed list, owners and agents from
// bounded (the first few seen, then "other") — a label value is a series
// kept for the life of the process.
type metrics struct {
	// attempts counts upstream attempts by provider, model, outcome and
	// key id.
	attempts *metric.CounterVec
	// tokens sums tokens by owner, agent, provider, model and kind
	// (input, output, cache_read, cache_write, reasoning); cost the
	// dollars by owner, agent, provider and model.
	tokens *metric.CounterVec
	cost   *metric.CounterVec
	// unpriced counts the responses whose model has no price, by
	// provider and model.
	unpriced *metric.CounterVec
	// callers bounds the owner and agent label values.
	owners, agents *bounded
}

// maxCallerLabels is how many owners (and agents) get a label value of
// their own.
const maxCallerLabels = 200

func newMetrics() *metrics {
	return &metrics{
		attempts: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_gateway_attempts_total", Help: "Upstream attempts by provider, model, outcome and key id.",
		}, []string{"provider", "model", "outcome", "key"}),
		tokens: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_gateway_tokens_total", Help: "Tokens by owner, agent, provider, model and kind (input not cached, cache_read, cache_write, output not reasoning, reasoning: they add up to every token).",
		}, []string{"owner", "agent", "provider", "model", "kind"}),
		cost: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_gateway_cost_usd_total", Help: "Cost in US dollars by owner, agent, provider and model.",
		}, []string{"owner", "agent", "provider", "model"}),
		unpriced: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_gateway_unpriced_total", Help: "Responses whose model has no price, by provider and model.",
		}, []string{"provider", "model"}),
		owners: &bounded{max: maxCallerLabels, seen: map[string]bool{}},
		agents: &bounded{max: maxCallerLabels, seen: map[string]bool{}},
	}
}

// Collectors are the gateway's metrics, for the server's registry.
func (g *Gateway) Collectors() []metric.Collector {
	return []metric.Collector{g.metrics.attempts, g.metrics.tokens, g.metrics.cost, g.metrics.unpriced}
}

// bounded hands out label values: the first max distinct values as they
// are, every later one as "other".
type bounded struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

func (b *bounded) label(v string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen[v] {
		return v
	}
	if len(b.seen) >= b.max {
		return "other"
	}
	b.seen[v] = true
	return v
}
