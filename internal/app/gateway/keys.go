package gateway

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// keyPool is a provider's keys, handed out by smooth weighted round-robin:
// over any run of requests each usable key gets its share of the weight,
// spread out rather than in bursts, in an order that depends only on the
// weights. A pool made from `keys` is managed: a key that got 429 rests,
// one that got 401 or 403 is taken out for the life of the process. The
// one key of api_key_env is never rested or taken out (nothing happens
// that the configuration did not ask for).
type keyPool struct {
	managed  bool
	cooldown time.Duration // a 429 without a Retry-After rests the key this long

	mu   sync.Mutex
	keys []*poolKey
}

// poolKey is one key of a pool, with the request headers it goes in.
type poolKey struct {
	id     string
	weight int
	header http.Header // of every streamed request: the key's, Accept, Content-Type
	unary  http.Header // of every request not streamed; nil when the provider has no unary call

	// Under the pool's mu:
	current int       // the smooth round-robin's running score
	until   time.Time // resting until then
	out     bool      // refused (401/403): never used again
}

// defaultKeyCooldown rests a key that got 429 without a Retry-After.
const defaultKeyCooldown = 60 * time.Second

// maxKeyCooldown caps the rest a Retry-After may ask for: a provider's
// (or a proxy's) "come back tomorrow" must not silence a key for good.
const maxKeyCooldown = time.Hour

// pick is the next usable key, or nil and the time the first resting key
// is usable again (zero when every key is out).
func (k *keyPool) pick(now time.Time) (*poolKey, time.Time) {
	if !k.managed {
		return k.keys[0], time.Time{}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var (
		best  *poolKey
		total int
		free  time.Time
	)
	for _, key := range k.keys {
		if key.out {
			continue
		}
		if now.Before(key.until) {
			if free.IsZero() || key.until.Before(free) {
				free = key.until
			}
			continue
		}
		key.current += key.weight
		total += key.weight
		if best == nil || key.current > best.current {
			best = key
		}
	}
	if best == nil {
		return nil, free
	}
	best.current -= total
	return best, time.Time{}
}

// rest keeps key out of turn for d (at most maxKeyCooldown).
func (k *keyPool) rest(key *poolKey, d time.Duration, now time.Time) {
	if !k.managed {
		return
	}
	d = min(d, maxKeyCooldown)
	k.mu.Lock()
	defer k.mu.Unlock()
	if until := now.Add(d); until.After(key.until) {
		key.until = until
	}
}

// remove takes key out for good; it reports whether the key was still in
// (so that its removal is logged once).
func (k *keyPool) remove(key *poolKey) bool {
	if !k.managed {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if key.out {
		return false
	}
	key.out = true
	return true
}

// maxRetryAfter bounds the Retry-After values read: longer is not a
// number of seconds or a date.
const maxRetryAfter = 64

// retryAfter is how long a 429's headers ask to wait: retry-after-ms
// (OpenAI's, in milliseconds) or Retry-After, in seconds or as an HTTP
// date; false when neither says. Never negative, at most
// maxKeyCooldown.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, ok := number(v); ok {
			return seconds(ms / 1000), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" || len(v) > maxRetryAfter {
		return 0, false
	}
	if s, ok := number(v); ok {
		return seconds(s), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxKeyCooldown), true
}

// number reads a non-negative decimal number of at most maxRetryAfter
// characters.
func number(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > maxRetryAfter || strings.ContainsFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }) {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// seconds is s seconds, at most maxKeyCooldown.
func seconds(s float64) time.Duration {
	if s >= maxKeyCooldown.Seconds() {
		return maxKeyCooldown
	}
	return time.Duration(s * float64(time.Second))
}

// keyless gives a provider that was configured without a key (one
// answered in process) a pool of one key that adds no credentials, so
// that every provider is called the same way.
func keyless(p *Provider) {
	if p.redact == nil {
		p.redact = func(s string) string { return s }
	}
	if p.keys != nil {
		return
	}
	k := &poolKey{id: "none", weight: 1, header: http.Header{"Content-Type": {"application/json"}}}
	if p.row.Upstream != nil && p.row.Upstream.Unary != nil {
		k.unary = http.Header{"Content-Type": {"application/json"}}
	}
	p.keys = &keyPool{keys: []*poolKey{k}, cooldown: defaultKeyCooldown}
}
