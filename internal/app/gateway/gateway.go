// Package gateway lets a client speaking any client dialect of the
// dialect table (Anthropic Messages, OpenAI Chat Completions, OpenAI
// Responses, Gemini generateContent) use any configured upstream: the
// request is decoded by the dialect's row (wire.Dialect) to ctxkit's
// canonical conversation (chat), routed by model name to a provider,
// encoded by the provider's row (wire.Provider), and the provider's
// stream is decoded to chat chunks and written back in the client's
// dialect, streamed or as one response.
//
// Usage is translated into the client dialect's meaning: Anthropic's
// input_tokens exclude cache reads and writes (reported beside it),
// OpenAI's prompt_tokens include cached tokens
// (prompt_tokens_details.cached_tokens says how many). Nothing is retried
// behind the client's back unless a route says so (route.go: targets tried
// in turn while the client has got nothing); a client that goes away
// cancels the upstream request. The provider's API key is sent only to
// that provider, never the caller's ctxkit token. The Responses dialect's stored responses are
// kept by a Keeper (the server's: private breadcrumbs of the caller).
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/upstream"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// Dialect is a client's API shape: an index into the dialect table,
// whose rows the wire packages declare (wire.Dialect).
type Dialect int

// Dialects.
const (
	Anthropic Dialect = iota // Messages, POST /v1/messages
	OpenAI                   // Chat Completions, POST /v1/chat/completions
	Responses                // Responses, POST /v1/responses
	Gemini                   // generateContent, POST /v1beta/models/{model}:generateContent
)

// dialects is the dialect table: how each client dialect's requests are
// read and answered.
var dialects = [...]wire.Dialect{
	Anthropic: anthropic.Dialect(),
	OpenAI:    openai.Dialect(),
	Responses: responses.Dialect(),
	Gemini:    gemini.Dialect(),
}

// row is the dialect's row of the table.
func (d Dialect) row() *wire.Dialect { return &dialects[d] }

// Options tune a gateway.
type Options struct {
	// Client sends the upstream requests; default: one of
	// internal/upstream that follows no redirect, its connect, first-byte,
	// idle and total timeouts each provider's (Provider.Timeouts).
	Client       *http.Client
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
	keeper Keeper // of the Responses dialect's stored responses; nil: none
	// recorder keeps the exchanges of routes that record; nil: none.
	recorder Recorder
	metrics  *metrics
	routes   map[string]*route // by the model name clients send
	up       *upstream.Client
	mocks    map[*Provider]*upstream.Client // the clients of providers of type mock
	opts     Options
	models   []Model

	// ctxSource answers x-ctxkit-context; nil: the header is refused.
	ctxSource ContextSource

	mu       sync.Mutex
	inFlight int   // requests being served
	held     int64 // bytes of request body they hold

	// recording are the client model names whose exchanges are recorded.
	recording map[string]bool

	// noForward turns the forwarding of same-dialect streams off: every
	// event is decoded and encoded (the reference the forwarding is
	// tested against).
	noForward bool
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
	g := &Gateway{cfg: cfg, routes: cfg.routes, opts: opts, metrics: newMetrics(), recording: recordingRoutes(cfg)}
	// A redirect is answered as the upstream's error: following it
	// would send the provider's key (x-api-key, x-goog-api-key) to
	// another host, and turn the POST into a GET.
	g.up = upstream.New(upstream.Options{
		// The connect and first-byte timeouts are each request's
		// (its provider's), not the transport's.
		DialTimeout:         defaultConnect,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		MaxErrorBody:        opts.MaxErrorBody,
		IdleTimeout:         opts.IdleTimeout,
		HTTP:                opts.Client,
	})
	start := opts.Now().UTC()
	for i := range cfg.Providers {
		p := &cfg.Providers[i]
		if p.mock != nil {
			if g.mocks == nil {
				g.mocks = map[*Provider]*upstream.Client{}
			}
			g.mocks[p] = upstream.New(upstream.Options{MaxErrorBody: opts.MaxErrorBody, IdleTimeout: opts.IdleTimeout,
				HTTP: &http.Client{Transport: p.mock}})
		}
		keyless(p)
		for _, m := range p.Models {
			g.models = append(g.models, Model{ID: m, Object: "model", Type: "model", DisplayName: m, OwnedBy: p.Name,
				CreatedAt: start.Format(time.RFC3339), Created: start.Unix()})
		}
	}
	for _, rc := range cfg.Routes {
		g.models = append(g.models, Model{ID: rc.Model, Object: "model", Type: "model", DisplayName: rc.Model, OwnedBy: "ctxkit",
			CreatedAt: start.Format(time.RFC3339), Created: start.Unix()})
	}
	sort.Slice(g.models, func(i, j int) bool { return g.models[i].ID < g.models[j].ID })
	return g
}

// client is the upstream client of p: the mock's own for a provider of
// type mock (no request of it reaches the network), else the gateway's.
func (g *Gateway) client(p *Provider) *upstream.Client {
	if c := g.mocks[p]; c != nil {
		return c
	}
	return g.up
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
func (g *Gateway) Messages(w http.ResponseWriter, r *http.Request) { g.answer(w, r, Anthropic) }

// Responses serves POST /v1/responses (the OpenAI Responses dialect).
func (g *Gateway) Responses(w http.ResponseWriter, r *http.Request) { g.answer(w, r, Responses) }

// GenerateContent serves POST /v1beta/models/{call}, where call is
// "{model}:generateContent" or "{model}:streamGenerateContent" (the
// Gemini dialect).
func (g *Gateway) GenerateContent(w http.ResponseWriter, r *http.Request) {
	call := r.PathValue("call")
	i := strings.LastIndexByte(call, ':')
	if i <= 0 || (call[i+1:] != "generateContent" && call[i+1:] != "streamGenerateContent") {
		g.fail(w, Gemini, &Error{Code: CodeNotFound, Status: http.StatusNotFound,
			Msg: fmt.Sprintf("%s: not a method ctxkit serves (generateContent, streamGenerateContent)", r.URL.Path)})
		return
	}
	g.answer(w, r, Gemini)
}

// ChatCompletions serves POST /v1/chat/completions (the OpenAI dialect).
func (g *Gateway) ChatCompletions(w http.ResponseWriter, r *http.Request) { g.answer(w, r, OpenAI) }

// answer serves one request in dialect d: the one place a failure
// becomes the dialect's error response.
func (g *Gateway) answer(w http.ResponseWriter, r *http.Request, d Dialect) {
	w, recorded := g.watch(w, r, d)
	defer recorded()
	g.fail(w, d, g.serve(w, r, d))
}

// fail writes err, unless it is nil or there is no one to write it to, as
// the dialect's error response.
func (g *Gateway) fail(w http.ResponseWriter, d Dialect, err error) {
	if err == nil || errors.Is(err, errClientGone) {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		g.opts.Logger.Error("gateway", "err", err.Error())
		e = &Error{Code: CodeAPI, Status: http.StatusInternalServerError, Msg: "the gateway failed to serve the request", Err: err}
	}
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	writeError(w, d, wire.ErrorReply{Status: e.Status, Type: string(e.Code), Code: e.Reason, Param: e.Path, Message: e.Msg})
}

// Code is the type of an error response, in the vocabulary both
// dialects share.
type Code string

// Codes of Error.
const (
	CodeInvalidRequest Code = "invalid_request_error"
	CodeNotFound       Code = "not_found_error"
	CodeTooLarge       Code = "request_too_large"
	CodeRateLimit      Code = "rate_limit_error"
	CodeOverloaded     Code = "overloaded_error"
	CodeAPI            Code = "api_error"
	CodeAuthentication Code = "authentication_error"
)

// Error is a failure a client gets as an error response: its type
// (Code), HTTP status and message.
type Error struct {
	Code Code
	Path string // where in the request the fault is ("messages[2].role"); "" = the whole request or none
	Msg  string
	Err  error

	Status     int
	RetryAfter string // the Retry-After header, "" for none
	// Reason is a finer code than Code ("unsupported_field") for the
	// dialects whose error shape has one; "" for none.
	Reason string
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// badRequest is err, a fault of the request, as an Error.
func badRequest(err error) *Error {
	e := &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Msg: err.Error(), Err: err}
	var ce *chat.Error
	if errors.As(err, &ce) {
		e.Path = ce.Path
	}
	return e
}

// errClientGone ends a request whose client went away (or whose response
// has begun): there is no one to write an error to.
var errClientGone = errors.New("the client went away")

// serve answers one request; what it returns is written by answer.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, d Dialect) error {
	body, done, err := g.readBody(w, r)
	defer done()
	if err != nil {
		return err
	}
	in := incoming(r)
	req, rt, err := g.route(body, d, in)
	if err != nil {
		return err
	}
	asked := req // as the client sent it, for the answer's encoder
	streaming := req.Stream || in.Stream
	x := g.exchange(r, d, rt, streaming)
	recordStart(w, rt, x, &req, body)
	keep := false
	if d == Responses {
		if keep, err = g.continuation(r.Context(), &req); err != nil {
			return err
		}
	}
	if err := g.addContext(w, r, &req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(r.Context(), g.opts.MaxDuration, errTooLong)
	defer cancel()
	// The route's targets are tried in turn until one answers; the client
	// has got nothing before.
	a, err := g.attempt(ctx, w, r, d, rt, req, streaming, x)
	if err != nil {
		return err
	}
	defer a.end()
	ctx, p, sent, resp := a.ctx, a.t.p, a.sent, a.resp
	upBody := &resp.Body
	defer upBody.Close()
	out := wire.Outgoing{Incoming: in, Request: &asked, Model: req.Model, ID: newID(d), Created: g.opts.Now().Unix()}
	var kept func(chat.Response, []byte) error
	if keep {
		kept = func(res chat.Response, body []byte) error {
			return g.keepResponse(r.Context(), &req, res, out.ID, body)
		}
	}
	if !sent.req.Stream && !streamed(resp.Header) {
		res, err := g.whole(ctx, r, p, sent, resp)
		if err != nil {
			return err
		}
		wire.SealResponse(&res, p.row.Name, d.row().Name)
		if res.Usage != (chat.Usage{}) {
			res.Usage = g.costed(p, sent.req.Model, res.Usage)
			g.account(r.Context(), p, sent.req.Model, res.Usage)
		}
		return g.respond(w, d, p, out, res, kept)
	}
	var src io.Reader = upBody
	if !streaming {
		src = &capped{r: upBody, left: g.opts.MaxResponseBytes}
	}
	decode := p.row.Upstream.Decode
	var fw wire.Forwarder
	if streaming {
		if fw = g.forwarder(w, d, p, &sent, out, kept != nil); fw != nil {
			decode = fw.Decode
		}
	}
	// The client's own tool-call ids come back first, then a format sent
	// as a forced tool becomes the text the client asked for.
	chunks := sent.ids.Chunks(decode(src))
	// A signature that crosses providers reaches the client sealed with
	// its provider's name, so that it goes back only there.
	chunks = wire.SealChunks(chunks, p.row.Name, d.row().Name)
	if sent.tool != "" {
		chunks = wire.ToolAsText(chunks, sent.tool)
	}
	chunks = g.clean(ctx, p, upBody, chunks)
	// Every usage gets its cost, and the last one is counted, before the
	// answer is put together or written.
	chunks = g.metered(r.Context(), p, sent.req.Model, chunks, nil)
	if !streaming {
		return g.collect(w, r, d, p, out, chunks, kept)
	}
	if kept != nil {
		chunks = tee(chunks, g.opts.MaxResponseBytes, func(res chat.Response) {
			body, err := d.row().Response(res, out)
			if err == nil {
				err = kept(res, body)
			}
			if err != nil && r.Context().Err() == nil {
				g.opts.Logger.Warn("gateway: the response was not kept", "id", out.ID, "err", err.Error())
			}
		})
	}
	g.stream(w, r, d, p, upBody, out, recordStream(w, out, chunks), fw)
	return nil
}

// incoming is what r says outside its body: the model and stream mode
// of a path that names them (Gemini's), and the query.
func incoming(r *http.Request) wire.Incoming {
	in := wire.Incoming{Query: r.URL.Query()}
	if call := r.PathValue("call"); call != "" {
		in.Model, in.Stream = geminiCall(call)
	}
	return in
}

// geminiCall splits the last segment of a Gemini path,
// "{model}:generateContent" or "{model}:streamGenerateContent".
func geminiCall(call string) (model string, stream bool) {
	i := strings.LastIndexByte(call, ':')
	if i < 0 {
		return call, false
	}
	return call[:i], call[i+1:] == "streamGenerateContent"
}

// route decodes a request of dialect d and finds the route of its model.
func (g *Gateway) route(body []byte, d Dialect, in wire.Incoming) (chat.Request, *route, error) {
	req, err := d.row().Decode(body, in)
	if err != nil {
		return req, nil, badRequest(err)
	}
	if req.Model == "" {
		return req, nil, &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: "model", Msg: "model: required"}
	}
	rt, ok := g.routes[req.Model]
	if !ok {
		return req, nil, &Error{Code: CodeNotFound, Status: http.StatusNotFound, Path: "model", Msg: fmt.Sprintf("model: %q is not configured on this gateway", req.Model)}
	}
	return req, rt, nil
}

// outbound is a request as it goes upstream.
type outbound struct {
	req    chat.Request    // fields the upstream cannot take removed, tool-call ids it would refuse rewritten
	ids    *wire.ToolIDMap // restores the client's tool-call ids; nil: none rewritten
	tool   string          // the forced tool a structured-output format is sent as; "": none
	header http.Header     // of the upstream request: the key's, and the client's Anthropic headers for an Anthropic upstream
	warns  warnings        // what was not carried, for X-Ctxkit-Warnings
}

// maxWarnings bounds the warnings kept for one request: a request of n
// malformed fields costs a count past it, not n strings.
const maxWarnings = 256

// warnings are what was not carried of one request, maxWarnings at most
// and a count of the rest.
type warnings struct {
	list []string
	more int
}

func (ws *warnings) add(s string) {
	if len(ws.list) >= maxWarnings {
		ws.more++
		return
	}
	ws.list = append(ws.list, s)
}

// all is the list, with a last "… and N more" past maxWarnings.
func (ws *warnings) all() []string {
	if ws.more == 0 {
		return ws.list
	}
	return append(ws.list[:len(ws.list):len(ws.list)], fmt.Sprintf("… and %d more", ws.more))
}

// prepare makes req, of dialect d, ready for p: every field carried,
// mapped or refused (400 unsupported_field naming it) as the field policy
// says, advisory fields dropped and listed in X-Ctxkit-Warnings, tool-call
// ids the upstream would refuse rewritten; sent with key k.
func (g *Gateway) prepare(w http.ResponseWriter, r *http.Request, d Dialect, p *Provider, k *poolKey, req chat.Request) (outbound, error) {
	out := outbound{header: k.header}
	if !req.Stream {
		out.header = k.unary
	}
	warns, err := wire.CheckFields(d.row().Name, &req, p.row.Name)
	if err != nil {
		return out, unsupported(err)
	}
	for _, wn := range warns {
		out.warns.add(wn)
	}
	// Every reasoning signature is tagged with the provider that made it
	// (the client's dialect's, when it came unsealed), once, before any
	// encoder: it goes back only to that provider.
	for _, wn := range wire.ClaimSignatures(&req, d.row().Name, p.row.Name) {
		out.warns.add(wn.String())
	}
	set, betaWarns, err := wire.AnthropicBetaHeaders(r.Header, p.row.Name)
	if err != nil {
		return out, unsupported(err)
	}
	if set != nil {
		out.header = out.header.Clone()
		for k, v := range set {
			out.header[k] = v
		}
	}
	for _, wn := range betaWarns {
		out.warns.add(wn)
	}
	out.tool = wire.FormatTool(p.row.Name, req.Format)
	out.req, out.ids = wire.RewriteToolIDs(req, p.row.Upstream.ToolIDs)
	return out, nil
}

// unsupported is err, a field the upstream cannot take, as the 400 the
// client gets: invalid_request_error, code unsupported_field, the field
// as its param.
func unsupported(err error) error {
	var we *wire.Error
	if !errors.As(err, &we) {
		return badRequest(err)
	}
	return &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: we.Path, Reason: string(we.Code), Msg: we.Error(), Err: err}
}

// encode makes the body and URL of the request for p. What was not
// carried (the field policy's drops, the encoder's warnings) is listed in
// X-Ctxkit-Warnings.
func (g *Gateway) encode(w http.ResponseWriter, p *Provider, out *outbound) (url string, data []byte, err error) {
	up, req := p.row.Upstream, out.req
	body, _, warns, err := p.row.Encode(req, nil, nil)
	if err != nil {
		return "", nil, badRequest(err)
	}
	// The rows' request bodies write their own JSON (valid, from valid
	// parts): json.Marshal would only check it and copy it once more.
	if m, ok := body.(json.Marshaler); ok {
		data, err = m.MarshalJSON()
	} else {
		data, err = json.Marshal(body)
	}
	if err != nil {
		return "", nil, badRequest(err)
	}
	for _, wn := range warns {
		out.warns.add(wn.String())
	}
	addWarnings(w.Header(), out.warns.all())
	url = p.BaseURL + up.Path(req.Model)
	if !req.Stream {
		url = p.BaseURL + up.Unary.Path(req.Model)
	}
	return url, data, nil
}

// call sends a request to p: the upstream's answer once its first byte
// has come (within firstByte), or the *upstream.Error it failed with.
func (g *Gateway) call(ctx context.Context, p *Provider, url string, header http.Header, data []byte, firstByte time.Duration) (*upstream.Response, error) {
	return g.client(p).Do(ctx, upstream.Request{Method: http.MethodPost, URL: url, Header: header, Body: data, Redact: p.redact,
		ConnectTimeout: time.Duration(p.Timeouts.Connect), FirstByte: firstByte, Idle: time.Duration(p.Timeouts.Idle)})
}

// streamed reports whether an upstream answered with a stream (its
// Content-Type is not JSON): some compatible servers stream whatever they
// are asked, and such an answer is read as the stream it is.
func streamed(h http.Header) bool {
	ct := strings.ToLower(strings.TrimSpace(h.Get("Content-Type")))
	return ct != "" && !strings.HasPrefix(ct, "application/json")
}

// whole reads resp, the upstream's answer to a request that was not
// streamed, as one response (bounded by MaxResponseBytes), the client's
// tool-call ids restored, a format tool's call made text, the provider's
// key taken out of an error it holds.
func (g *Gateway) whole(ctx context.Context, r *http.Request, p *Provider, sent outbound, resp *upstream.Response) (chat.Response, error) {
	raw, err := io.ReadAll(&capped{r: &resp.Body, left: g.opts.MaxResponseBytes})
	if err != nil {
		var large errTooLarge
		switch {
		case r.Context().Err() != nil:
			return chat.Response{}, errClientGone
		case errors.As(err, &large):
		case resp.Body.Idled():
			err = fmt.Errorf("upstream %s sent nothing for %v", p.Name, g.idle(p))
		case g.tooLong(ctx, p) != nil:
			err = g.tooLong(ctx, p)
		default:
			g.opts.Logger.Warn("gateway upstream body", "provider", p.Name, "err", p.redact(err.Error()))
			err = fmt.Errorf("upstream %s: the response could not be read", p.Name)
		}
		return chat.Response{}, &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: err.Error(), Err: err}
	}
	res, err := p.row.Upstream.Unary.Decode(raw)
	if err != nil {
		g.opts.Logger.Warn("gateway upstream body", "provider", p.Name, "err", p.redact(err.Error()))
		return chat.Response{}, &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: fmt.Sprintf("upstream %s sent a response ctxkit could not read", p.Name), Err: err}
	}
	sent.ids.Response(&res)
	if sent.tool != "" {
		res = wire.ToolAsTextResponse(res, sent.tool)
	}
	if res.Error != nil {
		e := *res.Error
		e.Type, e.Message = p.redact(e.Type), p.redact(e.Message)
		res.Error = &e
	}
	return res, nil
}

// stream writes chunks to a streaming client in its dialect, each event
// as it is decoded; by fw, when not nil, whose Decode made chunks.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request, d Dialect, p *Provider, upBody *upstream.Body, out wire.Outgoing, chunks iter.Seq2[chat.Chunk, error], fw wire.Forwarder) {
	h := w.Header()
	ct := "text/event-stream"
	if t := d.row().StreamType; t != nil {
		ct = t(out.Incoming)
	}
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	cw := g.clientWriter(w)
	defer cw.done()
	w.WriteHeader(http.StatusOK)
	// What the encoder writes goes out whenever the gateway is about to
	// wait for the upstream: the events decoded from one upstream read
	// leave in one write, and none waits behind a slow upstream. A read
	// of the bytes that came with the first-byte check waits for nothing,
	// so the header leaves with the first events rather than alone (a
	// write the client wakes for, and the bare hop does not make): the
	// client still has it before the gateway first waits for the
	// upstream.
	upBody.BeforeRead(func() {
		if len(upBody.Head()) == 0 {
			cw.flush()
		}
	})
	var err error
	if fw != nil {
		err = fw.Stream(cw, chunks)
	} else {
		err = d.row().Stream(cw, out, chunks)
	}
	if err != nil && r.Context().Err() == nil {
		g.opts.Logger.Warn("gateway stream", "provider", p.Name, "err", p.redact(err.Error()))
	}
}

// collect writes chunks to a non-streaming client as one response in its
// dialect, or returns the failure.
// kept, when not nil, keeps the response before it is written.
func (g *Gateway) collect(w http.ResponseWriter, r *http.Request, d Dialect, p *Provider, out wire.Outgoing, chunks iter.Seq2[chat.Chunk, error], kept func(chat.Response, []byte) error) error {
	res, err := chat.Collect(chunks)
	if err != nil {
		if r.Context().Err() != nil {
			return errClientGone
		}
		// clean has made err a message of the gateway's own.
		return &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: err.Error(), Err: err}
	}
	return g.respond(w, d, p, out, res, kept)
}

// respond writes res, a whole response, to a non-streaming client in its
// dialect, or returns the failure it holds.
func (g *Gateway) respond(w http.ResponseWriter, d Dialect, p *Provider, out wire.Outgoing, res chat.Response, kept func(chat.Response, []byte) error) error {
	if res.Error != nil {
		// The upstream failed: the client gets the failure (whatever
		// came before it is incomplete), with a status it can act on.
		e := &Error{Code: CodeAPI, Status: http.StatusBadGateway, Err: res.Error,
			// clean took the key out of the error.
			Msg: fmt.Sprintf("upstream %s: %s: %s", p.Name, res.Error.Type, res.Error.Message)}
		switch {
		case p.row.Upstream.RateLimit(res.Error.Type):
			e.Code, e.Status = CodeRateLimit, http.StatusTooManyRequests
		case res.Error.Retryable:
			e.Code, e.Status = CodeOverloaded, http.StatusServiceUnavailable
		}
		return e
	}
	recorded(w, &res)
	body, err := d.row().Response(res, out)
	if err != nil {
		return &Error{Code: CodeAPI, Status: http.StatusInternalServerError, Msg: "encoding the response: " + err.Error(), Err: err}
	}
	if kept != nil {
		if err := kept(res, body); err != nil {
			// The answer is delivered all the same (the upstream has
			// done the work); the client learns it cannot continue from
			// it.
			g.opts.Logger.Warn("gateway: the response was not kept", "id", out.ID, "err", err.Error())
			// In the one value the request's other warnings are in: a
			// client reads one.
			const notKept = "store: the response was not kept"
			if v := w.Header().Get(WarningsHeader); v != "" {
				w.Header().Set(WarningsHeader, v+"; "+notKept)
			} else {
				w.Header().Set(WarningsHeader, notKept)
			}
		}
	}
	if c := res.Usage.Cost; c != nil {
		w.Header().Set(CostHeader, formatCost(*c))
	}
	w.Header().Set("Content-Type", "application/json")
	cw := g.clientWriter(w)
	defer cw.done()
	w.WriteHeader(http.StatusOK)
	// In pieces, each with its own deadline: a response of megabytes
	// needs only a client that keeps reading.
	for len(body) > 0 {
		n := min(len(body), 1<<20)
		if _, err := cw.Write(body[:n]); err != nil {
			return nil
		}
		body = body[n:]
	}
	return nil
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

// clientWriter writes to the client with a deadline (WriteTimeout) on
// each write and flush. One deadline serves a burst of writes and the
// flush that ends it: setting one changes a timer of the connection, too
// dear to do for every event. A burst's first write sets it (never the
// flush before a wait for the upstream: the writes after the wait must
// not inherit a deadline that has run while waiting), as does a write
// after armBytes more of them, so that no write gets less than
// WriteTimeout for armBytes.
type clientWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// armed: a deadline was set since the last flush; since: the bytes
	// written since it was set; dirty: something (the header, at first)
	// waits for a flush.
	armed, dirty bool
	since        int
}

// armBytes is how much may be written under one deadline.
const armBytes = 64 << 10

func (g *Gateway) clientWriter(w http.ResponseWriter) *clientWriter {
	return &clientWriter{w: w, rc: http.NewResponseController(w), timeout: g.opts.WriteTimeout, dirty: true}
}

// arm sets the deadline unless one set in this burst still covers n more
// bytes.
func (c *clientWriter) arm(n int) {
	if c.armed && c.since+n <= armBytes {
		c.since += n
		return
	}
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout)) // not every writer supports deadlines
	c.armed, c.since = true, n
}

func (c *clientWriter) Write(p []byte) (int, error) {
	c.arm(len(p))
	c.dirty = true
	return c.w.Write(p)
}

// flush sends what was written, under the burst's deadline, and ends the
// burst. With nothing written since the last flush there is nothing to
// send, and no deadline to set: the gateway flushes before every read of
// the upstream, written or not.
func (c *clientWriter) flush() {
	if !c.dirty {
		return
	}
	c.arm(0)
	_ = c.rc.Flush()
	c.armed, c.dirty = false, false
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
// It also passes chunks on only up to the first error chunk and, when the
// stream ends without a stop or an error chunk (a cut connection, a proxy
// timeout), ends it with an error: a client must never take a cut
// response for a complete one. (One loop does both: each layer of
// iterators costs every chunk a call and the stream a closure or two.)
func (g *Gateway) clean(ctx context.Context, p *Provider, body *upstream.Body, chunks iter.Seq2[chat.Chunk, error]) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		ended := false
		for c, err := range chunks {
			if err != nil {
				var cut errCut
				var large errTooLarge
				switch {
				case errors.As(err, &cut), errors.As(err, &large):
				case body.Idled():
					err = fmt.Errorf("upstream %s sent nothing for %v", p.Name, g.idle(p))
				case g.tooLong(ctx, p) != nil:
					err = g.tooLong(ctx, p)
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
			yield(chat.Chunk{}, errCut{p.Name})
		}
	}
}

// upstreamError is the failure for the client of an upstream's error
// response: read by the provider's parser, its status mapped for the
// client, its message kept when it has one.
func (g *Gateway) upstreamError(p *Provider, ue *upstream.Error) *Error {
	e := p.row.Upstream.ParseError(ue.StatusCode, ue.Header, ue.Body)
	msg := p.redact(e.Message)
	if msg == "" {
		// Not a provider's JSON error (a proxy's page, say): the client
		// gets the status, the log the start of the body.
		g.opts.Logger.Warn("gateway upstream error", "provider", p.Name, "status", ue.StatusCode, "body", p.redact(string(ue.Body[:min(len(ue.Body), 200)])))
		msg = http.StatusText(ue.StatusCode)
	}
	msg = fmt.Sprintf("upstream %s: %s", p.Name, msg)
	g.opts.Logger.Warn("gateway upstream error", "provider", p.Name, "status", ue.StatusCode, "message", msg)
	out := &Error{Code: CodeAPI, Status: ue.StatusCode, Msg: msg, Err: ue}
	switch ue.StatusCode {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		out.Code, out.Status = CodeInvalidRequest, http.StatusBadRequest
	case http.StatusNotFound:
		out.Code = CodeNotFound
	case http.StatusRequestEntityTooLarge:
		out.Code = CodeTooLarge
	case http.StatusTooManyRequests:
		out.Code, out.RetryAfter = CodeRateLimit, e.RetryAfter
	case http.StatusUnauthorized, http.StatusForbidden:
		// The gateway's key for the upstream was refused: not the client's
		// credentials, so not a 401 to the client.
		out.Status = http.StatusBadGateway
		out.Msg = fmt.Sprintf("upstream %s refused the gateway's credentials", p.Name)
	case 529, http.StatusServiceUnavailable:
		out.Code, out.Status = CodeOverloaded, http.StatusServiceUnavailable
	default:
		out.Status = http.StatusBadGateway
	}
	return out
}

// WriteError writes an error in the dialect's shape: Anthropic
// {"type":"error","error":{"type","message"}}, OpenAI
// {"error":{"message","type","param","code"}}.
func WriteError(w http.ResponseWriter, d Dialect, status int, typ, msg string) {
	writeError(w, d, wire.ErrorReply{Status: status, Type: typ, Message: msg})
}

func writeError(w http.ResponseWriter, d Dialect, e wire.ErrorReply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(d.row().Error(e))
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

// errCut is what a client learns of an upstream stream that ended with
// neither a stop nor an error.
type errCut struct{ provider string }

func (e errCut) Error() string {
	return "upstream " + e.provider + " ended its stream before the response was complete"
}

func newID(d Dialect) string {
	var b [12]byte
	rand.Read(b[:])
	return d.row().IDPrefix + hex.EncodeToString(b[:])
}
