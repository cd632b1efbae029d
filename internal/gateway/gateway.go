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
	Now         func() time.Time
}

// Gateway serves the gateway routes.
type Gateway struct {
	cfg    *Config
	route  map[string]*Provider
	opts   Options
	models []Model
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
				Proxy:                 http.ProxyFromEnvironment,
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
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

	up, warns, err := g.upstreamRequest(r.Context(), p, req)
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
		g.opts.Logger.Warn("gateway upstream", "provider", p.Name, "err", err)
		WriteError(w, d, http.StatusBadGateway, "api_error", fmt.Sprintf("upstream %s unreachable", p.Name))
		return
	}
	upBody := &drainCloser{rc: resp.Body, idle: g.opts.IdleTimeout}
	upBody.timer = time.AfterFunc(g.opts.IdleTimeout, func() { resp.Body.Close() })
	defer upBody.Close()
	if resp.StatusCode/100 != 2 {
		g.upstreamError(w, d, p, resp)
		return
	}
	var src io.Reader = upBody
	if !streaming {
		src = &capped{r: upBody, left: g.opts.MaxResponseBytes}
	}
	chunks := untilStop(decoder(p.Type)(src), p.Name)
	id, created := newID(d), g.opts.Now().Unix()
	if streaming {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		flush := func() {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		flush() // the client learns at once that the stream has begun
		// What the encoder writes goes out whenever the gateway is about to
		// wait for the upstream: the events decoded from one upstream read
		// leave in one write, and none waits behind a slow upstream.
		upBody.beforeRead = flush
		noFlush := func() {}
		if d == OpenAI {
			err = openai.EncodeStream(w, noFlush, req.Model, id, created, chunks)
		} else {
			err = anthropic.EncodeStream(w, noFlush, req.Model, id, chunks)
		}
		if err != nil && r.Context().Err() == nil {
			g.opts.Logger.Warn("gateway stream", "provider", p.Name, "err", err)
		}
		return
	}
	res, err := chat.Collect(chunks)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		var cut errCut
		if errors.As(err, &cut) {
			WriteError(w, d, http.StatusBadGateway, "api_error", err.Error())
			return
		}
		WriteError(w, d, http.StatusBadGateway, "api_error", fmt.Sprintf("upstream %s sent a stream ctxkit could not read: %v", p.Name, err))
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
	w.WriteHeader(http.StatusOK)
	w.Write(out)
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
	msg := upstreamMessage(data)
	if msg == "" {
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
		s := strings.TrimSpace(string(data))
		if len(s) > 200 {
			s = s[:200]
		}
		return s
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

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the upstream response is larger than the gateway collects for a non-streaming client")
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
