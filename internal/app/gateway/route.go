package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/upstream"
)

// route is where the requests for one model name a client sends go: its
// targets, tried in order. A model a provider lists in `models` is a route
// of one target (that provider, the same model name).
type route struct {
	name        string
	targets     []target
	maxAttempts int           // requests sent at most; default: one per target
	maxTime     time.Duration // until an attempt is answering; 0: no bound but the gateway's
	record      bool
}

// target is one provider and upstream model of a route.
type target struct {
	p        *Provider
	model    string   // the upstream's name of the model
	params   *params  // nil: the request as the client sent it
	upstream []string // the X-Ctxkit-Upstream value: provider/model
}

// Response headers that say which attempt served.
const (
	// UpstreamHeader names the provider and upstream model of the last
	// attempt made, "provider/model": the one that answered, or the one
	// whose failure the client got.
	UpstreamHeader = "X-Ctxkit-Upstream"
	// AttemptsHeader is how many requests went upstream for this one.
	AttemptsHeader = "X-Ctxkit-Attempts"
)

// maxTargets bounds a route's targets.
const maxTargets = 16

// attemptsValues are the values of AttemptsHeader, made once.
var attemptsValues = func() (v [maxTargets + 1][]string) {
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// params are the request parameters a target sets, whatever the client
// asked.
type params struct {
	maxTokens       int // 0: not set
	temperature     *float64
	topP            *float64
	stop            []string
	setStop         bool
	reasoningEffort string
}

// paramNames are the parameters a target may set, in the order errors
// list them.
var paramNames = []string{"max_tokens", "reasoning_effort", "stop", "temperature", "top_p"}

// maxStop bounds a target's stop sequences.
const maxStop = 16

// compileParams reads a target's params; at is the path of the params
// field for errors.
func compileParams(raw map[string]json.RawMessage, at string) (*params, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	ps := &params{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := bytes.TrimSpace(raw[k])
		where := at + "." + k
		switch k {
		case "max_tokens":
			var n int
			if err := json.Unmarshal(v, &n); err != nil || n <= 0 || n > 10_000_000 {
				return nil, fmt.Errorf("%s: a whole number of tokens between 1 and 10000000", where)
			}
			ps.maxTokens = n
		case "temperature", "top_p":
			var f float64
			hi := 2.0
			if k == "top_p" {
				hi = 1
			}
			if err := json.Unmarshal(v, &f); err != nil || f < 0 || f > hi {
				return nil, fmt.Errorf("%s: a number from 0 to %g", where, hi)
			}
			if k == "temperature" {
				ps.temperature = &f
			} else {
				ps.topP = &f
			}
		case "stop":
			var one string
			var many []string
			if err := json.Unmarshal(v, &one); err == nil {
				many = []string{one}
			} else if err := json.Unmarshal(v, &many); err != nil || many == nil {
				return nil, fmt.Errorf("%s: a string or a list of strings", where)
			}
			if len(many) > maxStop {
				return nil, fmt.Errorf("%s: at most %d stop sequences", where, maxStop)
			}
			for _, s := range many {
				if s == "" {
					return nil, fmt.Errorf("%s: an empty stop sequence", where)
				}
			}
			ps.stop, ps.setStop = many, true
		case "reasoning_effort":
			var s string
			if err := json.Unmarshal(v, &s); err != nil || !slices.Contains([]string{"minimal", "low", "medium", "high"}, s) {
				return nil, fmt.Errorf("%s: one of minimal, low, medium, high", where)
			}
			ps.reasoningEffort = s
		default:
			return nil, fmt.Errorf("%s: not a parameter a target sets (%s)", where, strings.Join(paramNames, ", "))
		}
	}
	return ps, nil
}

// apply sets ps in req. The request's slices are not changed in place:
// they are the client's, shared by every target.
func (ps *params) apply(req *chat.Request) {
	if ps == nil {
		return
	}
	if ps.maxTokens > 0 {
		req.MaxTokens = ps.maxTokens
	}
	if ps.temperature != nil {
		req.Temperature = ps.temperature
	}
	if ps.topP != nil {
		req.TopP = ps.topP
	}
	if ps.setStop {
		req.StopSequences = ps.stop
	}
	if ps.reasoningEffort != "" {
		req.ReasoningEffort = ps.reasoningEffort
	}
}

// keyID is what a key id may be: it is a metric label value and a log
// field. Compiled on first use: the {0,63} expands to some 900
// allocations that every ctxkit process would otherwise pay at start.
var keyID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

// compileRoutes checks c.Routes against the providers (byName) and the
// model names they list (models), and builds every route: the
// configured ones and one of one target for each provider model.
func compileRoutes(c *Config, byName map[string]*Provider, models map[string]string) (map[string]*route, error) {
	routes := make(map[string]*route, len(models)+len(c.Routes))
	for i := range c.Routes {
		rc := &c.Routes[i]
		at := fmt.Sprintf("routes[%d]", i)
		switch {
		case rc.Model == "":
			return nil, fmt.Errorf("%s.model: required (the model name clients send)", at)
		case models[rc.Model] != "":
			return nil, fmt.Errorf("%s.model: %q is also a model of provider %s: a name goes to one place", at, rc.Model, models[rc.Model])
		case routes[rc.Model] != nil:
			return nil, fmt.Errorf("%s.model: %q is routed twice", at, rc.Model)
		case len(rc.Targets) == 0:
			return nil, fmt.Errorf("%s.targets: at least one target", at)
		case len(rc.Targets) > maxTargets:
			return nil, fmt.Errorf("%s.targets: at most %d targets", at, maxTargets)
		case rc.MaxAttempts < 0 || rc.MaxAttempts > len(rc.Targets):
			return nil, fmt.Errorf("%s.max_attempts: from 1 to the number of targets (%d); each target is tried at most once, list one twice to try it again", at, len(rc.Targets))
		}
		rt := &route{name: rc.Model, maxAttempts: rc.MaxAttempts, maxTime: time.Duration(rc.MaxTime), record: rc.Record}
		if rt.maxAttempts == 0 {
			rt.maxAttempts = len(rc.Targets)
		}
		for j, tc := range rc.Targets {
			tat := fmt.Sprintf("%s.targets[%d]", at, j)
			p := byName[tc.Provider]
			if p == nil {
				return nil, fmt.Errorf("%s.provider: %q is not a configured provider", tat, tc.Provider)
			}
			if tc.Model == "" {
				return nil, fmt.Errorf("%s.model: required (the upstream's name of the model)", tat)
			}
			ps, err := compileParams(tc.Params, tat+".params")
			if err != nil {
				return nil, err
			}
			rt.targets = append(rt.targets, newTarget(p, tc.Model, ps))
		}
		routes[rc.Model] = rt
	}
	for i := range c.Providers {
		p := &c.Providers[i]
		for _, m := range p.Models {
			routes[m] = &route{name: m, targets: []target{newTarget(p, m, nil)}, maxAttempts: 1}
		}
	}
	return routes, nil
}

func newTarget(p *Provider, model string, ps *params) target {
	return target{p: p, model: model, params: ps, upstream: []string{p.Name + "/" + model}}
}

// Default timeouts of a provider (Provider.Timeouts).
const (
	defaultConnect   = 10 * time.Second
	defaultFirstByte = 60 * time.Second
)

// idle is how long p's stream may send nothing.
func (g *Gateway) idle(p *Provider) time.Duration {
	if p.Timeouts.Idle > 0 {
		return time.Duration(p.Timeouts.Idle)
	}
	return g.opts.IdleTimeout
}

// Outcomes of an attempt: the values of the attempts counter's outcome
// label and of Attempt.ErrorClass ("" for ok).
const (
	outcomeOK           = "ok"
	outcomeRateLimited  = "rate_limited"  // 429
	outcomeServerError  = "server_error"  // 5xx, 529
	outcomeTimeout      = "timeout"       // no first byte in time, the attempt's total passed
	outcomeConnectError = "connect_error" // no connection, or it failed before an answer
	outcomeClientError  = "client_error"  // another 4xx (or 3xx), a 403 about the request among them
	outcomeAuthError    = "auth_error"    // the key was refused: 401, or a 403 or 400 naming the credential (keyRefused)
	outcomeNoKey        = "no_key"        // every key of the provider rests or is out: not sent
	outcomeCanceled     = "canceled"      // the client went away
)

// errAttemptTooLong ends an attempt past its provider's total timeout.
var errAttemptTooLong = errors.New("the attempt lasted longer than its provider's total timeout")

// served is the attempt that answers: its target, its request as sent
// and the upstream's answer, whose first byte is in. Its ctx bounds the
// reading of the answer; end releases it once the answer is read.
type served struct {
	t    *target
	sent outbound
	resp *upstream.Response
	ctx  context.Context
	end  context.CancelFunc
}

func nothing() {}

// exchange starts the record of a request for rt.
func (g *Gateway) exchange(r *http.Request, d Dialect, rt *route, streaming bool) *Exchange {
	// With room for one attempt, the most requests make, in the same
	// allocation.
	xa := &struct {
		x   Exchange
		one [1]Attempt
	}{x: Exchange{Caller: callerOf(r.Context()), Dialect: d.row().Name, Route: rt.name, Stream: streaming, Started: g.opts.Now()}}
	xa.x.Attempts = xa.one[:0]
	return &xa.x
}

// endpoint is what one kind of request does at a target of its route,
// for the attempt loop (try): a chat request (chatCall), embeddings
// (embedding), a token count (tokenCount). The loop holds the rules every
// kind shares; an endpoint only readies and sends its request.
type endpoint[T any] interface {
	// serves reports whether t answers this kind of request at all: a
	// target that does not is passed over without a word, not counted.
	serves(t *target) bool
	// keyless reports whether t is answered without a call (a count
	// estimated offline): it needs no key, so a resting pool does not
	// stand in its way.
	keyless(t *target) bool
	// prepare readies the request for t, to go with key k (nil for a
	// keyless target). A failure is
	// a refusal: the request cannot go to t, and nothing was sent. local
	// says the endpoint answers for t itself, without a call (a count
	// estimated offline).
	prepare(t *target, k *poolKey) (local bool, err error)
	// send sends what prepare readied, within actx, its first byte due
	// within firstByte; more says whether another target may still be
	// tried after this one. It returns the answer and the upstream's
	// status, or the failure: an *upstream.Error or the context's, which
	// classify reads, or an *answerFailure the endpoint read from an
	// answer.
	send(actx context.Context, t *target, k *poolKey, firstByte time.Duration, more bool) (T, int, error)
	// none is the failure of a route none of whose targets serves.
	none(rt *route) error
}

// answerFailure is an attempt that the upstream answered with a failure
// the endpoint read from the answer itself (a stream that opens with an
// overload, an answer ctxkit cannot read): its outcome and status, and
// whether the next target may serve.
type answerFailure struct {
	outcome string
	status  int
	retry   bool
	err     error // the client's failure
}

func (e *answerFailure) Error() string { return e.err.Error() }
func (e *answerFailure) Unwrap() error { return e.err }

// tried is the attempt that answered: its target, the endpoint's answer
// and the attempt's context, which end releases once the answer is
// read.
type tried[T any] struct {
	t   *target
	v   T
	ctx context.Context
	end context.CancelFunc
}

// try sends a request to rt's targets that serve it (e), in turn, until
// one answers, within the route's max_attempts and max_time, while the
// client has got nothing: a target whose keys all rest is skipped; a
// target the request cannot go to (e.prepare refuses it) is passed over
// when an earlier target failed or was skipped, else its refusal is the
// client's answer; one that fails to connect, sends no first byte in time
// or answers 429, 500, 502, 503, 504 or 529 hands over to the next; any
// other failure is the client's at once. When no target answered, the
// client gets the last one's failure. Every attempt is counted, added to
// x, and named in X-Ctxkit-Upstream and X-Ctxkit-Attempts (the last one
// sent); the failure the client gets sets x's error class to that
// attempt's outcome.
func try[T any](g *Gateway, ctx context.Context, w http.ResponseWriter, r *http.Request, rt *route, x *Exchange, e endpoint[T]) (tried[T], error) {
	h := w.Header()
	warned, hadWarnings := h[WarningsHeader]
	var deadline time.Time
	if rt.maxTime > 0 {
		deadline = time.Now().Add(rt.maxTime)
	}
	var (
		last      error
		lastClass string
		soonest   time.Time // the first a key of a skipped target is free
	)
	sent, serving, prepared := 0, false, false
	for i := range rt.targets {
		t := &rt.targets[i]
		if !e.serves(t) {
			continue
		}
		serving = true
		if sent == rt.maxAttempts || ctx.Err() != nil {
			break
		}
		p := t.p
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			break
		}
		var k *poolKey
		free := time.Time{}
		if !e.keyless(t) {
			k, free = p.keys.pick(now)
		}
		if k == nil && !e.keyless(t) {
			g.tally(x, t, nil, outcomeNoKey, 0, 0)
			if !free.IsZero() && (soonest.IsZero() || free.Before(soonest)) {
				soonest = free
			}
			// With no other failure, the client may come back as soon as
			// any target has a key again.
			f := noKey(p, soonest, now)
			if !soonest.Equal(free) {
				// The time is another target's.
				f.Msg = fmt.Sprintf("route %s: no target has a key free; the first is free in %ss", rt.name, f.RetryAfter)
			}
			last, lastClass = f, outcomeNoKey
			continue
		}
		if prepared {
			// The warnings are the answering attempt's.
			if hadWarnings {
				h[WarningsHeader] = warned
			} else {
				delete(h, WarningsHeader)
			}
		}
		prepared = true
		local, err := e.prepare(t, k)
		switch {
		case err != nil && last != nil:
			// A target the request cannot go to is passed over when an
			// earlier one failed: the route's failure is that one's, not
			// a refusal of a request a target took.
			continue
		case err != nil:
			return tried[T]{}, err
		case local:
			return tried[T]{t: t, ctx: ctx, end: nothing}, nil
		}
		sent++
		actx, end := ctx, context.CancelFunc(nothing)
		if p.Timeouts.Total > 0 {
			actx, end = context.WithTimeoutCause(ctx, time.Duration(p.Timeouts.Total), errAttemptTooLong)
		}
		firstByte, cut := time.Duration(p.Timeouts.FirstByte), false
		if firstByte == 0 {
			firstByte = defaultFirstByte
		}
		if !deadline.IsZero() {
			if left := deadline.Sub(now); left < firstByte {
				firstByte, cut = left, true
			}
		}
		v, status, err := e.send(actx, t, k, firstByte, i+1 < len(rt.targets) && sent < rt.maxAttempts)
		h[UpstreamHeader] = t.upstream
		h[AttemptsHeader] = attemptsValues[sent]
		if err == nil {
			g.tally(x, t, k, outcomeOK, status, time.Since(now))
			return tried[T]{t: t, v: v, ctx: actx, end: end}, nil
		}
		end()
		var (
			o     string
			fail  error
			retry bool
			af    *answerFailure
		)
		if errors.As(err, &af) {
			o, status, fail, retry = af.outcome, af.status, af.err, af.retry
		} else {
			o, status = classify(r, p, err)
			fail, retry = g.attemptFailure(r, rt, p, o, err, actx, firstByte, cut), fallback(o, status) && !(cut && o == outcomeTimeout)
		}
		g.tally(x, t, k, o, status, time.Since(now))
		if o == outcomeCanceled {
			return tried[T]{}, errClientGone
		}
		g.restKey(p, k, o, err, now)
		if !retry {
			x.ErrorClass = o
			return tried[T]{}, fail
		}
		last, lastClass = fail, o
	}
	switch {
	case !serving:
		return tried[T]{}, e.none(rt)
	case last != nil:
		x.ErrorClass = lastClass
		return tried[T]{}, last
	case r.Context().Err() != nil:
		// The request's own time ran out between attempts.
		return tried[T]{}, errClientGone
	}
	x.ErrorClass = outcomeTimeout
	return tried[T]{}, &Error{Code: CodeAPI, Status: http.StatusGatewayTimeout, Msg: fmt.Sprintf("route %s: no target answered in time", rt.name)}
}

// attemptFailure is the failure for the client of an attempt at p that
// ended with outcome o (classify) and err: a timeout names the limit it
// passed — the route's max_time when that cut the attempt, the request's
// or the attempt's whole time when either ran out, else the first-byte
// time —, any other failure is the upstream's (upstreamFailure).
func (g *Gateway) attemptFailure(r *http.Request, rt *route, p *Provider, o string, err error, actx context.Context, firstByte time.Duration, cut bool) error {
	switch {
	case o == outcomeTimeout && cut:
		return &Error{Code: CodeAPI, Status: http.StatusGatewayTimeout, Err: err,
			Msg: fmt.Sprintf("route %s: no target answered within its max_time (%v)", rt.name, rt.maxTime)}
	case o == outcomeTimeout:
		msg := fmt.Sprintf("upstream %s sent no answer within %v", p.Name, attemptLimit(actx, firstByte, p))
		if tl := g.tooLong(actx, p); tl != nil {
			msg = tl.Error()
		}
		g.opts.Logger.Warn("gateway upstream", "provider", p.Name, "err", err.Error())
		return &Error{Code: CodeAPI, Status: http.StatusGatewayTimeout, Err: err, Msg: msg}
	}
	return g.upstreamFailure(r, p, err)
}

// chatCall is a chat request (any dialect) as an endpoint of the attempt
// loop: prepare readies and encodes it for a target, send calls the
// upstream and, while another target may serve, reads the opening of a
// stream for a failure.
type chatCall struct {
	g         *Gateway
	w         http.ResponseWriter
	r         *http.Request
	d         Dialect
	req       chat.Request
	streaming bool

	// The request prepared for the target last readied.
	out  outbound
	url  string
	data []byte
}

func (c *chatCall) serves(*target) bool { return true }

func (c *chatCall) none(*route) error { return nil }

func (c *chatCall) keyless(*target) bool { return false }

func (c *chatCall) prepare(t *target, k *poolKey) (bool, error) {
	p := t.p
	treq := c.req
	treq.Model = t.model
	t.params.apply(&treq)
	// A client that does not stream is answered from one whole upstream
	// response where the provider offers one: less work on both sides
	// than a stream collected.
	treq.Stream = c.streaming || p.row.Upstream.Unary == nil
	out, err := c.g.prepare(c.w, c.r, c.d, p, k, treq)
	if err != nil {
		return false, err
	}
	url, data, err := c.g.encode(c.w, p, &out)
	if err != nil {
		return false, err
	}
	c.out, c.url, c.data = out, url, data
	return false, nil
}

func (c *chatCall) send(actx context.Context, t *target, k *poolKey, firstByte time.Duration, more bool) (*upstream.Response, int, error) {
	p := t.p
	resp, err := c.g.call(actx, p, c.url, c.out.header, c.data, firstByte)
	if err != nil {
		return nil, 0, err
	}
	if more && (c.out.req.Stream || streamed(resp.Header)) {
		// A 200 whose stream opens with an overload or a rate limit has
		// failed as a 529 or 429 would, and the client has got nothing
		// yet: the next target may serve.
		if se := openingFailure(p, resp.Body.Head()); se != nil {
			resp.Body.Close()
			o, code, status := outcomeServerError, CodeOverloaded, http.StatusServiceUnavailable
			if p.row.Upstream.RateLimit(se.Type) {
				o, code, status = outcomeRateLimited, CodeRateLimit, http.StatusTooManyRequests
			}
			return nil, 0, &answerFailure{outcome: o, status: resp.StatusCode, retry: true, err: &Error{Code: code, Status: status, Err: se,
				Msg: fmt.Sprintf("upstream %s: %s: %s", p.Name, p.redact(se.Type), p.redact(se.Message))}}
		}
	}
	return resp, resp.StatusCode, nil
}

// attempt sends req, a chat request of dialect d, to rt's targets by the
// rules of try.
func (g *Gateway) attempt(ctx context.Context, w http.ResponseWriter, r *http.Request, d Dialect, rt *route, req chat.Request, streaming bool, x *Exchange) (served, error) {
	c := &chatCall{g: g, w: w, r: r, d: d, req: req, streaming: streaming}
	a, err := try(g, ctx, w, r, rt, x, endpoint[*upstream.Response](c))
	if err != nil {
		return served{}, err
	}
	return served{t: a.t, sent: c.out, resp: a.v, ctx: a.ctx, end: a.end}, nil
}

// openingFailure is the failure a stream opens with, read from head (its
// first bytes): an error event that is worth another target (an overload,
// a server error, a rate limit) before any content, after nothing but
// usage; nil when head holds anything else, or too little to tell.
func openingFailure(p *Provider, head []byte) *chat.StreamError {
	// Every provider's stream names a failure an error or an exception
	// (Bedrock's): a stream that opens with anything else is not decoded
	// twice.
	if !bytes.Contains(head, []byte("rror")) && !bytes.Contains(head, []byte("xception")) {
		return nil
	}
	for c, err := range p.row.Upstream.Decode(bytes.NewReader(head)) {
		switch {
		case err != nil:
			return nil
		case c.Type == chat.ChunkUsage:
			continue
		case c.Type == chat.ChunkError && c.Error != nil && (c.Error.Retryable || p.row.Upstream.RateLimit(c.Error.Type)):
			return c.Error
		}
		return nil
	}
	return nil
}

// tooLong is the failure of an answer cut by the request's MaxDuration or
// its provider's total timeout; nil when ctx ended for neither.
func (g *Gateway) tooLong(ctx context.Context, p *Provider) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTooLong):
		return fmt.Errorf("upstream %s: %w (%v)", p.Name, errTooLong, g.opts.MaxDuration)
	case errors.Is(cause, errAttemptTooLong):
		return fmt.Errorf("upstream %s: %w (%v)", p.Name, errAttemptTooLong, time.Duration(p.Timeouts.Total))
	}
	return nil
}

// attemptLimit is the limit an attempt that timed out passed: its
// provider's total when that ended its context, else its first-byte
// time.
func attemptLimit(actx context.Context, firstByte time.Duration, p *Provider) time.Duration {
	if errors.Is(context.Cause(actx), errAttemptTooLong) {
		return time.Duration(p.Timeouts.Total)
	}
	return firstByte
}

// fallback reports whether an attempt that ended with outcome o (and the
// upstream's status) hands over to the next target.
func fallback(o string, status int) bool {
	switch o {
	case outcomeConnectError, outcomeTimeout, outcomeRateLimited:
		return true
	case outcomeServerError:
		switch status {
		case 500, 502, 503, 504, 529:
			return true
		}
	}
	return false
}

// classify is the outcome of an attempt of p that failed with err, and
// the upstream's status when it answered.
func classify(r *http.Request, p *Provider, err error) (string, int) {
	var ue *upstream.Error
	switch {
	case r.Context().Err() != nil:
		return outcomeCanceled, 0
	case !errors.As(err, &ue):
		return outcomeConnectError, 0
	case ue.Code == upstream.CodeStatus:
		return statusOutcome(ue.StatusCode, keyRefused(p, ue)), ue.StatusCode
	}
	var op *net.OpError
	if errors.As(ue.Err, &op) && op.Op == "dial" {
		return outcomeConnectError, 0
	}
	var ne net.Error
	if errors.Is(ue.Err, upstream.ErrFirstByte) || errors.Is(ue.Err, context.DeadlineExceeded) ||
		errors.Is(ue.Err, errAttemptTooLong) || errors.Is(ue.Err, errTooLong) || errors.As(ue.Err, &ne) && ne.Timeout() {
		return outcomeTimeout, 0
	}
	return outcomeConnectError, 0
}

// statusOutcome is the outcome of a failure status: the one rule for the
// attempts (classify), their counter's outcome label and the error class
// of an exchange (statusClass). refused says the upstream refused the
// key (keyRefused): a 401, or a 403 or 400 naming the credential; any
// other 403 is about the request, a client_error like any other 4xx.
func statusOutcome(status int, refused bool) string {
	switch {
	case status == http.StatusTooManyRequests:
		return outcomeRateLimited
	case refused:
		return outcomeAuthError
	case status >= 500:
		return outcomeServerError
	case status >= 400:
		return outcomeClientError
	}
	return ""
}

// tally counts an attempt of t with key k (nil: none) in the attempts
// counter and adds it to x.
func (g *Gateway) tally(x *Exchange, t *target, k *poolKey, o string, status int, latency time.Duration) {
	id := ""
	if k != nil {
		id = k.id
	}
	g.metrics.attempts.WithLabelValues(t.p.Name, t.model, o, id).Inc()
	class := o
	if o == outcomeOK {
		class = ""
	}
	x.Attempts = append(x.Attempts, Attempt{Provider: t.p.Name, Model: t.model, KeyID: id, Status: status, Latency: latency, ErrorClass: class})
}

// restKey rests a key whose attempt was rate limited (for the answer's
// Retry-After, else the pool's cooldown) and takes out one that was
// refused (outcome auth_error, see keyRefused), logging it by id; any
// other outcome leaves the key as it is.
func (g *Gateway) restKey(p *Provider, k *poolKey, o string, err error, now time.Time) {
	switch o {
	case outcomeRateLimited:
		var ue *upstream.Error
		d := p.keys.cooldown
		if errors.As(err, &ue) {
			if ra, ok := retryAfter(ue.Header, now); ok {
				d = ra
			}
		}
		p.keys.rest(k, d, now)
	case outcomeAuthError:
		if p.keys.remove(k) {
			status := 0
			var ue *upstream.Error
			if errors.As(err, &ue) {
				status = ue.StatusCode
			}
			g.opts.Logger.Error("gateway: a key was refused and is out of use until restart", "provider", p.Name, "key", k.id, "status", status)
		}
	}
}

// noKey is the failure of a target none of whose keys may be used: 429
// with a Retry-After when some key rests until free, else 502 (every key
// was refused).
func noKey(p *Provider, free, now time.Time) *Error {
	if free.IsZero() {
		return &Error{Code: CodeAPI, Status: http.StatusBadGateway,
			Msg: fmt.Sprintf("upstream %s refused every key of the gateway's", p.Name)}
	}
	secs := int64(math.Ceil(free.Sub(now).Seconds()))
	return &Error{Code: CodeRateLimit, Status: http.StatusTooManyRequests, RetryAfter: strconv.FormatInt(max(secs, 1), 10),
		Msg: fmt.Sprintf("upstream %s: every key of the gateway's is resting after a rate limit", p.Name)}
}
