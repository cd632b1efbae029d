package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/upstream"
)

// keyPool is a provider's keys, handed out by smooth weighted round-robin:
// over any run of requests each usable key gets its share of the weight,
// spread out rather than in bursts, in an order that depends only on the
// weights. A pool made from `keys` is managed: a key that got 429 rests,
// one the upstream refused (keyRefused) is taken out for the life of the
// process. The
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
	out     bool      // refused (keyRefused): never used again
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

// Which refusals take a key out. A 401 says the upstream does not know
// the credential: the key is taken out. A 403 says the upstream knows
// who is calling and refuses what was asked, and most often that is
// about the request — a model the account may not use, a region, a
// content policy — and every key of the pool would get the same answer:
// taking keys out for it would empty a healthy pool one request at a
// time, and every other model with it. So a 403 takes the key out only
// when the upstream's error names the credential as the fault (an
// invalid, expired, leaked, suspended or restricted key, a bad
// signature: credentialFault); any other 403 goes to the client as the
// upstream's 403, and the key stays. A 400 that names the credential
// the same way (Gemini answers an unknown key with 400 and reason
// API_KEY_INVALID) takes the key out too: that request would fail with
// every model.

// credentialTypes are the error types and codes, lower case, that name
// the credential: Anthropic's and OpenAI's, Google's status, AWS's
// exception names.
var credentialTypes = map[string]bool{
	"authentication_error":                true,
	"invalid_api_key":                     true,
	"unauthenticated":                     true,
	"unrecognizedclientexception":         true,
	"invalidclienttokenid":                true,
	"invalidsignatureexception":           true,
	"signaturedoesnotmatch":               true,
	"incompletesignature":                 true,
	"incompletesignatureexception":        true,
	"missingauthenticationtoken":          true,
	"missingauthenticationtokenexception": true,
	"expiredtoken":                        true,
	"expiredtokenexception":               true,
	"optinrequired":                       true,
}

// requestTypes are the error types and codes, lower case, that name the
// request or the account, not the credential, as the fault of a 403: a
// key the upstream knows and that another request could use.
// Anthropic's permission_error ("does not have permission to use the
// specified resource"), OpenAI's region refusal, AWS's validation and
// model-access exceptions that are not AccessDeniedException. A 403 of
// one of these is never read for its phrases.
var requestTypes = map[string]bool{
	"permission_error":                     true,
	"unsupported_country_region_territory": true,
	"validationexception":                  true,
	"resourcenotfoundexception":            true,
	"modelnotreadyexception":               true,
	"servicequotaexceededexception":        true,
}

// credentialReasons are the reasons of Google's ErrorInfo details that
// name the credential, besides every reason that begins with API_KEY_
// (API_KEY_INVALID, API_KEY_SERVICE_BLOCKED, API_KEY_IP_ADDRESS_BLOCKED,
// ...).
var credentialReasons = map[string]bool{
	"CONSUMER_SUSPENDED":              true,
	"CONSUMER_INVALID":                true,
	"SERVICE_DISABLED":                true,
	"ACCESS_TOKEN_EXPIRED":            true,
	"ACCESS_TOKEN_SCOPE_INSUFFICIENT": true,
	"CREDENTIALS_MISSING":             true,
}

// credentialPhrases are what a 403's message says, lower case, when the
// key is at fault and its type does not say so (AWS's
// AccessDeniedException and Google's PERMISSION_DENIED cover the model
// not allowed as well as the key refused). A 403 about the key's
// permission for a resource ("Your API key does not have permission to
// use the specified resource") is about the request: it matches none.
var credentialPhrases = []string{
	"api key was reported as leaked",
	"api key not valid",
	"api key is not valid",
	"api key is invalid",
	"invalid api key",
	"incorrect api key",
	"api key expired",
	"api key has expired",
	"make sure your api key is valid",
	"authentication failed",
	"security token included in the request is invalid",
	"security token included in the request is expired",
	"signature we calculated does not match",
	"has been suspended",
	"project has been denied access",
	"missing scopes",
}

// maxFaultBody bounds what of an error body is read for its fault: the
// upstream client caps error bodies already (Options.MaxErrorBody); this
// keeps the cost of a misconfigured cap bounded too.
const maxFaultBody = 64 << 10

// keyRefused reports whether ue, a status answer of p's upstream, takes
// the key it was sent with out: every 401, and a 403 or a 400 whose
// error names the credential (credentialFault).
func keyRefused(p *Provider, ue *upstream.Error) bool {
	switch ue.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden, http.StatusBadRequest:
		return credentialFault(p, ue.StatusCode, ue.Header, ue.Body)
	}
	return false
}

// credentialFault reports whether an error answer of p's upstream names
// the credential as its fault. The providers' structured errors decide
// first: a type or code (as p's row reads it, or any type, code, status
// or AWS __type in the common error shapes) in credentialTypes, or a
// Google ErrorInfo reason in credentialReasons or beginning API_KEY_, is
// the key's fault; one in requestTypes is not. Only a 403 whose
// structure says neither — AWS's AccessDeniedException and Google's
// PERMISSION_DENIED cover a refused key and a model not allowed alike,
// some answers have no type at all — is read for its message, the last
// resort (credentialPhrases). A 400's message is never read: it may
// quote the request.
func credentialFault(p *Provider, status int, h http.Header, body []byte) bool {
	body = body[:min(len(body), maxFaultBody)]
	e := p.row.Upstream.ParseError(status, h, body)
	codes, reasons := errorCodes(body)
	request := false
	for _, c := range append(codes, e.Type) {
		c = strings.ToLower(c)
		if credentialTypes[c] {
			return true
		}
		request = request || requestTypes[c]
	}
	for _, r := range reasons {
		if strings.HasPrefix(r, "API_KEY_") || credentialReasons[r] {
			return true
		}
	}
	if status != http.StatusForbidden || request {
		return false
	}
	msg := strings.ToLower(e.Message)
	for _, phrase := range credentialPhrases {
		if strings.Contains(msg, phrase) {
			return true
		}
	}
	return false
}

// maxFaultDetails bounds the details of an error read for their reasons.
const maxFaultDetails = 16

// errorCodes reads the types and codes of an error body in the common
// shapes — {"error":{"type","code","status","details":[{"reason"}]}},
// the same at the top level, or first in an array — and the reasons of
// its details; nothing when the body is none of them.
func errorCodes(body []byte) (codes, reasons []string) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return nil, nil
		}
		body = arr[0]
	}
	type shape struct {
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Status  json.RawMessage `json:"status"`
		AWSType json.RawMessage `json:"__type"`
		Details []struct {
			Reason json.RawMessage `json:"reason"`
		} `json:"details"`
	}
	var v struct {
		shape
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil, nil
	}
	shapes := []shape{v.shape}
	var inner shape
	if len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil {
		shapes = append(shapes, inner)
	}
	for _, s := range shapes {
		for _, raw := range []json.RawMessage{s.Type, s.Code, s.Status, s.AWSType} {
			if c := jsonString(raw); c != "" {
				codes = append(codes, c)
			}
		}
		for _, d := range s.Details[:min(len(s.Details), maxFaultDetails)] {
			if r := jsonString(d.Reason); r != "" {
				reasons = append(reasons, r)
			}
		}
	}
	return codes, reasons
}

// jsonString is raw as a string when it is one, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// CodePermission is the type of a 403 the upstream gave for the request
// (not for the gateway's key): in the vocabulary the dialects share,
// Anthropic's permission_error.
const CodePermission Code = "permission_error"

// statusFailure is the failure for the client of p's status answer ue.
// A key the upstream refused is the gateway's fault, not the client's: a
// 502 that says so. A 403 about the request is the upstream's 403, with
// its message, so that the client learns what it may not do.
func (g *Gateway) statusFailure(p *Provider, ue *upstream.Error) *Error {
	out := g.upstreamError(p, ue)
	switch refused := keyRefused(p, ue); {
	case refused && ue.StatusCode != http.StatusUnauthorized && ue.StatusCode != http.StatusForbidden:
		out.Code, out.Status = CodeAPI, http.StatusBadGateway
		out.Msg = fmt.Sprintf("upstream %s refused the gateway's credentials", p.Name)
	case !refused && ue.StatusCode == http.StatusForbidden:
		msg := p.redact(p.row.Upstream.ParseError(ue.StatusCode, ue.Header, ue.Body).Message)
		if msg == "" {
			msg = http.StatusText(ue.StatusCode)
		}
		out.Code, out.Status = CodePermission, http.StatusForbidden
		out.Msg = fmt.Sprintf("upstream %s: %s", p.Name, msg)
	}
	return out
}
