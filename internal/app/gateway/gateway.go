// Package gateway lets a client speaking the Anthropic Messages dialect or
// the OpenAI Chat Completions dialect use any configured upstream: the
// request is decoded to ctxkit's canonical conversation (chat), routed by
// model name to a provider, encoded in the provider's format, and the
// provider's stream is decoded to chat chunks and written back in the
// client's dialect, streamed or as one response.
//
// The gateway always streams from the upstream; a non-streaming client gets
// the collected response. Usage is translated into the client dialect's
// meaning: Anthropic's input_tokens exclude cache reads and writes (reported
// beside it), OpenAI's prompt_tokens include cached tokens
// (prompt_tokens_details.cached_tokens says how many). Nothing is retried
// behind the client's back; a client that goes away cancels the upstream
// request. The provider's API key is sent only to that provider, never the
// caller's ctxkit token.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/bedrock"
	"github.com/ctxkit/ctxkit/wire/deepseek"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// Dialect is the client's API shape.
type Dialect int

// Dialects.
const (
	Anthropic Dialect = iota
	OpenAI
)

// Options tune a gateway.
type Options struct {
	Client       *http.Client // default: one with a 60 s response-header timeout and no overall timeout
	Logger       *slog.Logger
	MaxBodyBytes int64 // request body limit, default 32 MiB (images make requests large)
	MaxErrorBody int64 // how much of an upstream error body is read, default 64 KiB
	// MaxResponseBytes bounds an upstream stream collected for a
	// non-streaming client (default 64 MiB); streamed responses pass
	// through chunk by chunk and are bounded per event by the decoders.
	MaxResponseBytes int64
	// IdleTimeout ends an upstream stream that sends nothing for this
	// long (default 10 minutes: reasoning models can think for minutes
	// between events).
	IdleTimeout time.Duration
	// MaxDuration ends a request, its upstream stream included, that
	// lasts longer (default 1 hour).
	MaxDuration time.Duration
	// WriteTimeout bounds each write to the client (default 1 minute): a
	// client that stops reading ends its request, and the upstream
	// request with it.
	WriteTimeout time.Duration
	// MaxInFlight bounds the requests served at once (default 256), and
	// MaxInFlightBytes the request bodies they hold (default 512 MiB; a
	// body of unknown length counts as MaxBodyBytes until it is read).
	// A request past either is answered 503 overloaded_error at once.
	MaxInFlight      int
	MaxInFlightBytes int64
	Now              func() time.Time
}

// Gateway serves the gateway routes.
type Gateway struct {
	cfg    *Config
	route  map[string]*Provider
	opts   Options
	models []Model

	mu       sync.Mutex
	inFlight int   // requests being served
	held     int64 // bytes of request body they hold
}

// Model is one entry of GET /v1/models.
type Model struct {
	ID          string `json:"id"`
	Object      string `json:"object"`       // OpenAI: "model"
	Type        string `json:"type"`         // Anthropic: "model"
	DisplayName string `json:"display_name"` // Anthropic
	OwnedBy     string `json:"owned_by"`     // OpenAI: the provider's name
	CreatedAt   string `json:"created_at"`   // Anthropic, RFC 3339
	Created     int64  `json:"created"`      // OpenAI, unix seconds
}

// New returns a gateway for cfg (checked by LoadConfig).
func New(cfg *Config, opts Options) *Gateway {
	if opts.Client == nil {
		opts.Client = &http.Client{
			Transport: &http.Transport{
				Proxy:                 httpsProxy,
				DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				TLSHandshakeTimeout:   10 * time.Second,
				ResponseHeaderTimeout: 60 * time.Second,
				MaxIdleConnsPerHost:   64,
				IdleConnTimeout:       90 * time.Second,
			},
			// A redirect is answered as the upstream's error: following it
			// would send the provider's key (x-api-key, x-goog-api-key) to
			// another host, and turn the POST into a GET.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	if opts.MaxErrorBody <= 0 {
		opts.MaxErrorBody = 64 << 10
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = 64 << 20
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 10 * time.Minute
	}
	if opts.MaxDuration <= 0 {
		opts.MaxDuration = time.Hour
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = time.Minute
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 256
	}
	if opts.MaxInFlightBytes <= 0 {
		opts.MaxInFlightBytes = 512 << 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	g := &Gateway{cfg: cfg, route: map[string]*Provider{}, opts: opts}
	start := opts.Now().UTC()
	for i := range cfg.Providers {
		p := &cfg.Providers[i]
		for _, m := range p.Models {
			g.route[m] = p
			g.models = append(g.models, Model{ID: m, Object: "model", Type: "model", DisplayName: m, OwnedBy: p.Name,
				CreatedAt: start.Format(time.RFC3339), Created: start.Unix()})
		}
	}
	sort.Slice(g.models, func(i, j int) bool { return g.models[i].ID < g.models[j].ID })
	return g
}

// Models serves GET /v1/models: one list both dialects read (OpenAI's
// object/data, Anthropic's data/has_more/first_id/last_id).
func (g *Gateway) Models(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"object": "list", "data": g.models, "has_more": false}
	if len(g.models) > 0 {
		out["first_id"], out["last_id"] = g.models[0].ID, g.models[len(g.models)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

// Messages serves POST /v1/messages (the Anthropic dialect).
func (g *Gateway) Messages(w http.ResponseWriter, r *http.Request) { g.serve(w, r, Anthropic) }

// ChatCompletions serves POST /v1/chat/completions (the OpenAI dialect).
func (g *Gateway) ChatCompletions(w http.ResponseWriter, r *http.Request) { g.serve(w, r, OpenAI) }

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, d Dialect) {
	weight := g.opts.MaxBodyBytes
	if r.ContentLength >= 0 && r.ContentLength < weight {
		weight = r.ContentLength
	}
	if !g.admit(weight) {
		w.Header().Set("Retry-After", "1")
		WriteError(w, d, http.StatusServiceUnavailable, "overloaded_error", "the gateway is serving as many requests as it may: retry shortly")
		return
	}
	defer func() { g.leave(weight) }()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
	if n := int64(len(body)); n < weight {
		g.release(weight - n)
		weight = n
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			WriteError(w, d, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
			return
		}
		WriteError(w, d, http.StatusBadRequest, "invalid_request_error", "reading the request: "+err.Error())
		return
	}
	var req chat.Request
	if d == OpenAI {
		req, err = openai.DecodeRequest(body)
	} else {
		req, err = chat.DecodeRequest(body)
	}
	if err != nil {
		WriteError(w, d, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if req.Model == "" {
		WriteError(w, d, http.StatusBadRequest, "invalid_request_error", "model: required")
		return
	}
	p, ok := g.route[req.Model]
	if !ok {
		WriteError(w, d, http.StatusNotFound, "not_found_error", fmt.Sprintf("model: %q is not configured on this gateway", req.Model))
		return
	}
	streaming := req.Stream
	req.Stream = true
	if d == OpenAI && len(req.Extra) > 0 {
		// OpenAI-only fields (seed, user, response_format, ...) have no
		// canonical meaning: they are not forwarded to any upstream.
		g.opts.Logger.Debug("gateway: OpenAI fields not forwarded", "fields", len(req.Extra))
		req.Extra = nil
	}

	ctx, cancel := context.WithTimeoutCause(r.Context(), g.opts.MaxDuration, errTooLong)
	defer cancel()
	up, warns, err := g.upstreamRequest(ctx, p, req)
	if err != nil {
		WriteError(w, d, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	for _, wn := range warns {
		g.opts.Logger.Debug("gateway conversion", "provider", p.Name, "warning", wn.String())
	}
	if len(warns) > 0 {
		w.Header().Set("X-Ctxkit-Warnings", fmt.Sprint(len(warns)))
	}
	resp, err := g.opts.Client.Do(up)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away; the upstream request is cancelled with it
		}
		g.opts.Logger.Warn("gateway upstream", "provider", p.Name, "err", p.redact(err.Error()))
		WriteError(w, d, http.StatusBadGateway, "api_error", fmt.Sprintf("upstream %s unreachable", p.Name))
		return
	}
	upBody := &drainCloser{rc: resp.Body, idle: g.opts.IdleTimeout}
	upBody.timer = time.AfterFunc(g.opts.IdleTimeout, func() {
		upBody.idled.Store(true)
		resp.Body.Close()
	})
	defer upBody.Close()
	if resp.StatusCode/100 != 2 {
		g.upstreamError(w, d, p, resp)
		return
	}
	var src io.Reader = upBody
	if !streaming {
		src = &capped{r: upBody, left: g.opts.MaxResponseBytes}
	}
	chunks := g.clean(ctx, p, upBody, untilStop(decoder(p.Type)(src), p.Name))
	id, created := newID(d), g.opts.Now().Unix()
	if streaming {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		cw := g.clientWriter(w)
		defer cw.done()
		w.WriteHeader(http.StatusOK)
		flush := cw.flush
		flush() // the client learns at once that the stream has begun
		// What the encoder writes goes out whenever the gateway is about to
		// wait for the upstream: the events decoded from one upstream read
		// leave in one write, and none waits behind a slow upstream.
		upBody.beforeRead = flush
		noFlush := func() {}
		if d == OpenAI {
			err = openai.EncodeStream(cw, noFlush, req.Model, id, created, chunks)
		} else {
			err = anthropic.EncodeStream(cw, noFlush, req.Model, id, chunks)
		}
		if err != nil && r.Context().Err() == nil {
			g.opts.Logger.Warn("gateway stream", "provider", p.Name, "err", p.redact(err.Error()))
		}
		return
	}
	res, err := chat.Collect(chunks)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		// clean has made err a message of the gateway's own.
		WriteError(w, d, http.StatusBadGateway, "api_error", err.Error())
		return
	}
	if res.Error != nil {
		// The upstream failed: the client gets the failure (whatever
		// came before it is incomplete), with a status it can act on.
		status, typ := http.StatusBadGateway, "api_error"
		switch {
		case strings.Contains(strings.ToLower(res.Error.Type), "rate") || strings.Contains(strings.ToLower(res.Error.Type), "throttl") || res.Error.Type == "RESOURCE_EXHAUSTED":
			status, typ = http.StatusTooManyRequests, "rate_limit_error"
		case res.Error.Retryable:
			status, typ = http.StatusServiceUnavailable, "overloaded_error"
		}
		// clean took the key out of the error.
		WriteError(w, d, status, typ, fmt.Sprintf("upstream %s: %s: %s", p.Name, res.Error.Type, res.Error.Message))
		return
	}
	var out []byte
	if d == OpenAI {
		out, err = openai.EncodeResponse(res, req.Model, id, created)
	} else {
		out, err = anthropic.EncodeResponse(res, req.Model, id)
	}
	if err != nil {
		WriteError(w, d, http.StatusInternalServerError, "api_error", "encoding the response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	cw := g.clientWriter(w)
	defer cw.done()
	w.WriteHeader(http.StatusOK)
	// In pieces, each with its own deadline: a response of megabytes
	// needs only a client that keeps reading.
	for len(out) > 0 {
		n := min(len(out), 1<<20)
		if _, err := cw.Write(out[:n]); err != nil {
			return
		}
		out = out[n:]
	}
}

// admit counts a request of weight body bytes in, unless that would pass
// MaxInFlight or MaxInFlightBytes.
func (g *Gateway) admit(weight int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight >= g.opts.MaxInFlight || g.held+weight > g.opts.MaxInFlightBytes {
		return false
	}
	g.inFlight++
	g.held += weight
	return true
}

// release gives back weight bytes of a request's body.
func (g *Gateway) release(weight int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held -= weight
}

// leave counts a request holding weight bytes out.
func (g *Gateway) leave(weight int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	g.held -= weight
}

// clientWriter writes to the client with a deadline on each write and
// flush (WriteTimeout).
type clientWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (g *Gateway) clientWriter(w http.ResponseWriter) *clientWriter {
	return &clientWriter{w: w, rc: http.NewResponseController(w), timeout: g.opts.WriteTimeout}
}

func (c *clientWriter) Write(p []byte) (int, error) {
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout)) // not every writer supports deadlines
	return c.w.Write(p)
}

func (c *clientWriter) flush() {
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout))
	_ = c.rc.Flush()
}

// done clears the deadline, so that it does not outlive the request on a
// kept-alive connection.
func (c *clientWriter) done() { _ = c.rc.SetWriteDeadline(time.Time{}) }

// errTooLong ends a request past MaxDuration.
var errTooLong = errors.New("the request lasted longer than the gateway allows")

// clean passes chunks on with the provider's key taken out of every
// error the upstream put in the stream, and replaces a decode error by a
// message of the gateway's own (logged in full): an error of the
// transport or the decoder may quote the upstream's address or output.
func (g *Gateway) clean(ctx context.Context, p *Provider, body *drainCloser, chunks iter.Seq2[chat.Chunk, error]) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for c, err := range chunks {
			if err != nil {
				var cut errCut
				var large errTooLarge
				switch {
				case errors.As(err, &cut), errors.As(err, &large):
				case body.idled.Load():
					err = fmt.Errorf("upstream %s sent nothing for %v", p.Name, g.opts.IdleTimeout)
				case errors.Is(context.Cause(ctx), errTooLong):
					err = fmt.Errorf("upstream %s: %w (%v)", p.Name, errTooLong, g.opts.MaxDuration)
				default:
					g.opts.Logger.Warn("gateway upstream stream", "provider", p.Name, "err", p.redact(err.Error()))
					err = fmt.Errorf("upstream %s sent a stream ctxkit could not read", p.Name)
				}
				yield(c, err)
				return
			}
			if c.Error != nil {
				e := *c.Error
				e.Type, e.Message = p.redact(e.Type), p.redact(e.Message)
				c.Error = &e
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// httpsProxy is the proxy from the environment for an https upstream, and
// none for a plain http one: the provider's key would travel to the proxy
// in clear text.
func httpsProxy(r *http.Request) (*url.URL, error) {
	if r.URL.Scheme != "https" {
		return nil, nil
	}
	return http.ProxyFromEnvironment(r)
}

// upstreamRequest encodes req for p and builds the HTTP request.
func (g *Gateway) upstreamRequest(ctx context.Context, p *Provider, req chat.Request) (*http.Request, []chat.Warning, error) {
	var (
		body  any
		warns []chat.Warning
		err   error
		path  string
	)
	switch p.Type {
	case TypeOpenAI:
		body, warns, err = openai.EncodeRequest(req, openai.Options{})
		path = "/chat/completions"
	case TypeDeepSeek:
		body, warns, err = deepseek.EncodeRequest(req, deepseek.Options{})
		path = "/chat/completions"
	case TypeMistral:
		body, warns, err = mistral.EncodeRequest(req, mistral.Options{})
		path = "/chat/completions"
	case TypeAnthropic:
		body, warns, err = anthropic.EncodeRequest(req, anthropic.Options{})
		path = "/v1/messages"
	case TypeGemini:
		body, warns, err = gemini.EncodeRequest(req, gemini.Options{})
		path = "/v1beta/models/" + url.PathEscape(req.Model) + ":streamGenerateContent?alt=sse"
	case TypeBedrock:
		body, warns, err = bedrock.EncodeRequest(req, bedrock.Options{})
		path = "/model/" + url.PathEscape(req.Model) + "/converse-stream"
	}
	if err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL+path, bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	up.Header.Set("Content-Type", "application/json")
	switch p.Type {
	case TypeAnthropic:
		up.Header.Set("x-api-key", p.key)
		up.Header.Set("anthropic-version", "2023-06-01")
		up.Header.Set("Accept", "text/event-stream")
	case TypeGemini:
		up.Header.Set("x-goog-api-key", p.key)
		up.Header.Set("Accept", "text/event-stream")
	case TypeBedrock:
		up.Header.Set("Authorization", "Bearer "+p.key)
		up.Header.Set("Accept", "application/vnd.amazon.eventstream")
	default:
		up.Header.Set("Authorization", "Bearer "+p.key)
		up.Header.Set("Accept", "text/event-stream")
	}
	return up, warns, nil
}

func decoder(typ string) func(io.Reader) iter.Seq2[chat.Chunk, error] {
	switch typ {
	case TypeAnthropic:
		return anthropic.DecodeStream
	case TypeGemini:
		return gemini.DecodeStream
	case TypeBedrock:
		return bedrock.DecodeStream
	case TypeMistral:
		return mistral.DecodeStream
	default:
		return openai.DecodeStream
	}
}

// upstreamError answers for an upstream's error response: its status
// mapped for the client, its message kept when it has one.
func (g *Gateway) upstreamError(w http.ResponseWriter, d Dialect, p *Provider, resp *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, g.opts.MaxErrorBody))
	msg := p.redact(upstreamMessage(data))
	if msg == "" {
		// Not a provider's JSON error (a proxy's page, say): the client
		// gets the status, the log the start of the body.
		g.opts.Logger.Warn("gateway upstream error", "provider", p.Name, "status", resp.StatusCode, "body", p.redact(string(data[:min(len(data), 200)])))
		msg = http.StatusText(resp.StatusCode)
	}
	msg = fmt.Sprintf("upstream %s: %s", p.Name, msg)
	g.opts.Logger.Warn("gateway upstream error", "provider", p.Name, "status", resp.StatusCode, "message", msg)
	status, typ := resp.StatusCode, "api_error"
	switch {
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity:
		status, typ = http.StatusBadRequest, "invalid_request_error"
	case resp.StatusCode == http.StatusNotFound:
		status, typ = http.StatusNotFound, "not_found_error"
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case resp.StatusCode == http.StatusTooManyRequests:
		typ = "rate_limit_error"
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		// The gateway's key for the upstream was refused: not the client's
		// credentials, so not a 401 to the client.
		status, typ = http.StatusBadGateway, "api_error"
		msg = fmt.Sprintf("upstream %s refused the gateway's credentials", p.Name)
	case resp.StatusCode == 529 || resp.StatusCode == http.StatusServiceUnavailable:
		status, typ = http.StatusServiceUnavailable, "overloaded_error"
	default:
		status = http.StatusBadGateway
	}
	WriteError(w, d, status, typ, msg)
}

// upstreamMessage finds the message in a provider's error body: Anthropic
// {"error":{"message"}}, OpenAI {"error":{"message"}}, Gemini
// {"error":{"message"}} (or an array of them), Bedrock {"message"}.
func upstreamMessage(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(data, &arr) == nil && len(arr) > 0 {
			data = arr[0]
		}
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	if v.Message != "" {
		return v.Message
	}
	var inner struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
		return inner.Message
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil {
		return s
	}
	return ""
}

// WriteError writes an error in the dialect's shape: Anthropic
// {"type":"error","error":{"type","message"}}, OpenAI
// {"error":{"message","type","code"}}.
func WriteError(w http.ResponseWriter, d Dialect, status int, typ, msg string) {
	var body any
	if d == OpenAI {
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// capped ends a read with an error once more than left bytes have come.
type capped struct {
	r    io.Reader
	left int64
}

// errTooLarge is what a non-streaming client learns of an upstream
// response past MaxResponseBytes.
type errTooLarge struct{}

func (errTooLarge) Error() string {
	return "the upstream response is larger than the gateway collects for a non-streaming client"
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLarge{}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// drainCloser reads what is left of an upstream body (up to a bound)
// before closing it, so the connection goes back to the pool instead of
// being torn down; decoders stop at the stream's end marker, before EOF.
//
// It also ends a stream that goes quiet for longer than idle: its timer
// closes the body, which fails the read the decoder is blocked in.
type drainCloser struct {
	rc     io.ReadCloser
	idled  atomic.Bool // the idle timer closed the body
	closed bool
	eof    bool // the body was read to its end: nothing to drain
	idle   time.Duration
	timer  *time.Timer
	// beforeRead, when set, runs before every read of the body (a read may
	// wait for the upstream).
	beforeRead func()
}

func (d *drainCloser) Read(p []byte) (int, error) {
	if d.beforeRead != nil {
		d.beforeRead()
	}
	n, err := d.rc.Read(p)
	if n > 0 && d.timer != nil {
		d.timer.Reset(d.idle)
	}
	if err == io.EOF {
		d.eof = true
	}
	return n, err
}

func (d *drainCloser) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
	}
	// An upstream that keeps the connection open after the stream's end
	// (or after an error) must not hold the request: the drain gets a
	// moment, then the body is closed (and the connection dropped).
	if !d.eof {
		stop := time.AfterFunc(50*time.Millisecond, func() { d.rc.Close() }) // unblocks the read
		io.CopyN(io.Discard, d.rc, 64<<10)
		stop.Stop()
	}
	return d.rc.Close()
}

// errCut is what a client learns of an upstream stream that ended with
// neither a stop nor an error.
type errCut struct{ provider string }

func (e errCut) Error() string {
	return "upstream " + e.provider + " ended its stream before the response was complete"
}

// untilStop passes chunks on up to the first error chunk and, when the
// stream ends without a stop or an error chunk (a cut connection, a proxy
// timeout), ends it with an error: a client must never take a cut response
// for a complete one.
func untilStop(chunks iter.Seq2[chat.Chunk, error], provider string) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		ended := false
		for c, err := range chunks {
			if err != nil {
				yield(c, err)
				return
			}
			if c.Type == chat.ChunkStop || c.Type == chat.ChunkError {
				ended = true
			}
			if !yield(c, nil) || c.Type == chat.ChunkError {
				// An error ends the response: what an upstream sends after
				// one (if it ever ends its stream) changes nothing.
				return
			}
		}
		if !ended {
			yield(chat.Chunk{}, errCut{provider})
		}
	}
}

func newID(d Dialect) string {
	var b [12]byte
	rand.Read(b[:])
	if d == OpenAI {
		return "chatcmpl-" + hex.EncodeToString(b[:])
	}
	return "msg_" + hex.EncodeToString(b[:])
}
