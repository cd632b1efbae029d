package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image sizes for token estimates
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/ctxkit/ctxkit/internal/upstream"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// TokenCountHeader says how the token count of a response was made:
// "exact" (the upstream's own count) or "estimate" (ctxkit's offline
// tokenizer, where the upstream has no count or reported none). POST
// /v1/messages/count_tokens always sets it; POST /v1/embeddings sets it to
// "estimate" when its usage is estimated.
const TokenCountHeader = "X-Ctxkit-Token-Count"

// WarningsHeader lists, separated by "; ", what the gateway did not carry
// to the upstream: advisory fields (user), fields without meaning there
// (temperature in a token count), what a conversion dropped.
const WarningsHeader = "X-Ctxkit-Warnings"

// DialectOf is the dialect a request is taken to speak where a path does
// not say it: the shape of GET /v1/models/{model} and of the errors of
// paths the gateway does not serve. Gemini's under /v1beta/ or with an
// x-goog-api-key header; Anthropic's under /v1/messages or with an
// anthropic-version or x-api-key header (the Anthropic SDKs send both);
// OpenAI's otherwise.
func DialectOf(r *http.Request) Dialect {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/v1beta/") || r.Header.Get("x-goog-api-key") != "":
		return Gemini
	case p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") ||
		r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "":
		return Anthropic
	}
	return OpenAI
}

// readBody reads a request's body within MaxBodyBytes, counted against
// MaxInFlight and MaxInFlightBytes until done is called (also after an
// error).
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) (body []byte, done func(), err error) {
	weight := g.opts.MaxBodyBytes
	if r.ContentLength >= 0 && r.ContentLength < weight {
		weight = r.ContentLength
	}
	if !g.admit(weight) {
		return nil, func() {}, &Error{Code: CodeOverloaded, Status: http.StatusServiceUnavailable, RetryAfter: "1",
			Msg: "the gateway is serving as many requests as it may: retry shortly"}
	}
	body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
	if n := int64(len(body)); n < weight {
		g.release(weight - n)
		weight = n
	}
	done = func() { g.leave(weight) }
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, done, &Error{Code: CodeTooLarge, Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("request body larger than %d bytes", mbe.Limit), Err: err}
		}
		return nil, done, badRequest(fmt.Errorf("reading the request: %w", err))
	}
	return body, done, nil
}

// upstreamFailure is the failure for the client of a call to p that
// failed with err.
func (g *Gateway) upstreamFailure(r *http.Request, p *Provider, err error) error {
	var ue *upstream.Error
	switch {
	case !errors.As(err, &ue):
		return badRequest(err)
	case ue.Code == upstream.CodeStatus:
		return g.statusFailure(p, ue)
	case r.Context().Err() != nil:
		return errClientGone
	}
	g.opts.Logger.Warn("gateway upstream", "provider", p.Name, "err", ue.Error())
	return &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: fmt.Sprintf("upstream %s unreachable", p.Name), Err: err}
}

// jsonHeader is key k's header for a call answered with one JSON body
// (the streaming calls' Accept asks for a stream).
func jsonHeader(k *poolKey) http.Header {
	h := k.header.Clone()
	h.Set("Accept", "application/json")
	return h
}

// readAnswer reads a 2xx answer's body, at most max bytes.
func readAnswer(resp *upstream.Response, max int64, p *Provider) ([]byte, error) {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(&resp.Body, max+1))
	if err != nil {
		return nil, &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: fmt.Sprintf("upstream %s: the answer was cut off", p.Name), Err: err}
	}
	if int64(len(data)) > max {
		return nil, &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: fmt.Sprintf("upstream %s: the answer is larger than %d bytes", p.Name, max)}
	}
	return data, nil
}

// warningsHeader adds the paths of warns to X-Ctxkit-Warnings, after
// what it says already (the context's notes).
func warningsHeader(w http.ResponseWriter, warns []chat.Warning) {
	if len(warns) == 0 {
		return
	}
	paths := make([]string, len(warns))
	for i, wn := range warns {
		paths[i] = wn.Path
	}
	addWarnings(w.Header(), paths)
}

// maxCountAnswer bounds a count_tokens answer ({"input_tokens":N}).
const maxCountAnswer = 64 << 10

// CountTokens serves POST /v1/messages/count_tokens (the Anthropic
// dialect): the request in the Messages shape (max_tokens not needed)
// answered {"input_tokens":N}. With x-ctxkit-context the count includes
// the context block POST /v1/messages would add to the same request, and
// X-Ctxkit-Context-Ids names the breadcrumbs counted. For a model routed to an upstream with a
// count of its own (Anthropic's), the upstream's count, the request
// carried as its row encodes it (with the client's anthropic-beta
// header), less the fields that only steer generation (named in
// X-Ctxkit-Warnings when the client gave them); otherwise ctxkit's
// offline estimate of what the upstream would be sent (see
// EstimateTokens). X-Ctxkit-Token-Count says which. The route's targets
// are tried as for POST /v1/messages (see try): fallbacks, key pools,
// max_attempts and max_time, each call counted in the attempts metric
// and named in X-Ctxkit-Upstream and X-Ctxkit-Attempts; a target whose
// upstream counts nothing is estimated for its model, nothing sent.
// Errors are Anthropic's.
func (g *Gateway) CountTokens(w http.ResponseWriter, r *http.Request) {
	if err := g.countTokens(w, r); err != nil {
		g.fail(w, Anthropic, err)
	}
}

func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request) error {
	body, done, err := g.readBody(w, r)
	defer done()
	if err != nil {
		return err
	}
	req, rt, err := g.route(body, Anthropic, wire.Incoming{})
	if err != nil {
		return err
	}
	// The count is of the request as the gateway would send it: with the
	// context x-ctxkit-context asks for (the same selector, budget and
	// caller), its ids in X-Ctxkit-Context-Ids.
	if err := g.addContext(w, r, &req); err != nil {
		return err
	}
	// A count goes where the request would: the route's targets by the
	// rules of try. A target whose upstream counts nothing is estimated
	// offline, for its model, and nothing is sent.
	ctx, cancel := context.WithTimeoutCause(r.Context(), g.opts.MaxDuration, errTooLong)
	defer cancel()
	c := &tokenCount{g: g, r: r, req: req}
	a, err := try(g, ctx, w, r, rt, &Exchange{}, endpoint[int](c))
	if err != nil {
		return err
	}
	a.end()
	if c.local {
		n, err := EstimateTokens(c.sent)
		if err != nil {
			return err
		}
		w.Header().Set(TokenCountHeader, "estimate")
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": n})
		return nil
	}
	warningsHeader(w, c.warns)
	w.Header().Set(TokenCountHeader, "exact")
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": a.v})
	return nil
}

// tokenCount is a token count as an endpoint of the attempt loop: prepare
// encodes the request for a target as its row would send it (or, when
// its upstream has no count call, marks the count local), send asks the
// upstream's count call.
type tokenCount struct {
	g   *Gateway
	r   *http.Request
	req chat.Request

	// The count readied for the target last prepared.
	sent   chat.Request // the request counted, with the target's model
	local  bool         // estimated offline
	cc     *wire.CountCall
	header http.Header
	data   []byte
	warns  []chat.Warning
}

func (c *tokenCount) serves(*target) bool { return true }

func (c *tokenCount) none(*route) error { return nil }

// keyless: an upstream without a count of its own is estimated here.
func (c *tokenCount) keyless(t *target) bool { return t.p.row.Upstream.CountTokens == nil }

func (c *tokenCount) prepare(t *target, k *poolKey) (bool, error) {
	p := t.p
	req := c.req
	req.Model = t.model
	req.Stream = false
	encoded, _, _, err := p.row.Encode(req, nil, nil)
	if err != nil {
		return false, badRequest(err)
	}
	c.sent, c.cc = req, p.row.Upstream.CountTokens
	if c.local = c.cc == nil; c.local {
		return true, nil
	}
	data, err := json.Marshal(encoded)
	if err != nil {
		return false, badRequest(err)
	}
	if c.data, c.warns, err = c.cc.Body(data); err != nil {
		return false, badRequest(err)
	}
	c.header = jsonHeader(k)
	if beta := c.r.Header.Values("anthropic-beta"); len(beta) > 0 {
		c.header["Anthropic-Beta"] = beta
	}
	return false, nil
}

func (c *tokenCount) send(actx context.Context, t *target, _ *poolKey, firstByte time.Duration, _ bool) (int, int, error) {
	p := t.p
	resp, err := c.g.client(p).Do(actx, upstream.Request{Method: http.MethodPost, URL: p.BaseURL + c.cc.Path(c.sent.Model), Header: c.header, Body: c.data, Redact: p.redact,
		ConnectTimeout: time.Duration(p.Timeouts.Connect), FirstByte: firstByte})
	if err != nil {
		return 0, 0, err
	}
	answer, err := readAnswer(resp, maxCountAnswer, p)
	if err != nil {
		return 0, 0, &answerFailure{outcome: outcomeServerError, status: resp.StatusCode, err: err}
	}
	n, err := c.cc.Decode(answer)
	if err != nil {
		c.g.opts.Logger.Warn("gateway count", "provider", p.Name, "err", p.redact(err.Error()))
		return 0, 0, &answerFailure{outcome: outcomeServerError, status: resp.StatusCode,
			err: &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: fmt.Sprintf("upstream %s sent a count ctxkit could not read", p.Name), Err: err}}
	}
	return n, resp.StatusCode, nil
}

// Token estimates of what a tokenizer cannot read.
const (
	// framingTokens are counted for each message and each tool (the
	// role and separators a chat template wraps around them), and once
	// for the request.
	framingTokens = 3
	// mediaTokens is the estimate of an image whose size cannot be read
	// and the most an image counts (models scale larger ones down), and
	// of each page of a PDF.
	mediaTokens = 1600
	// imagePixelsPerToken and maxImageEdge are how an image's size
	// becomes tokens: width×height/750, after scaling the longer edge
	// down to 1568 pixels.
	imagePixelsPerToken = 750
	maxImageEdge        = 1568
)

// EstimateTokens is ctxkit's offline count of a request's input tokens
// with the o200k_base encoding: the text of the system prompt, of every
// text, thinking and reasoning block, tool call (name and input JSON) and
// tool result, the name, description and input schema of every tool,
// framingTokens for each message, each tool and the request; an image
// width×height/750 tokens (its longer edge scaled to 1568 pixels; at most
// mediaTokens, and mediaTokens when its size cannot be read), a PDF
// mediaTokens a page, a text document its text; the fields of a block of
// a type ctxkit does not model as JSON text. Redacted thinking and
// signatures count nothing.
func EstimateTokens(req chat.Request) (int, error) {
	c, err := tokencount.Codec("")
	if err != nil {
		return 0, err
	}
	e := estimator{count: c.Count}
	n := framingTokens
	if req.System != nil {
		n += e.content(req.System, 0)
	}
	for i := range req.Messages {
		n += framingTokens + e.content(&req.Messages[i].Content, 0)
	}
	for _, t := range req.Tools {
		n += framingTokens + e.text(t.Name) + e.text(t.Description) + e.text(string(t.InputSchema)) + e.text(t.Type)
	}
	return n, e.err
}

type estimator struct {
	count func(string) (int, error)
	err   error
}

func (e *estimator) text(s string) int {
	if s == "" || e.err != nil {
		return 0
	}
	n, err := e.count(s)
	if err != nil {
		e.err = err
	}
	return n
}

func (e *estimator) content(c *chat.Content, depth int) int {
	if c.IsString {
		return e.text(c.Text)
	}
	n := 0
	for i := range c.Blocks {
		n += e.block(&c.Blocks[i], depth)
	}
	return n
}

func (e *estimator) block(b *chat.Block, depth int) int {
	switch b.Type {
	case chat.TypeText, chat.TypeReasoning:
		return e.text(b.Text)
	case chat.TypeThinking:
		return e.text(b.Thinking)
	case chat.TypeRedactedThinking, chat.TypeThoughtSignature:
		return 0
	case chat.TypeToolUse:
		return e.text(b.Name) + e.text(string(b.Input))
	case chat.TypeToolResult:
		if b.Content == nil || depth > chat.MaxNesting {
			return 0
		}
		return e.content(b.Content, depth+1)
	case chat.TypeImage:
		return imageTokens(b.Source)
	case chat.TypeDocument:
		return e.document(b.Source) + e.text(b.Title) + e.text(b.Context)
	}
	data, _ := json.Marshal(b.Extra)
	return e.text(string(data))
}

func (e *estimator) document(s *chat.Source) int {
	switch {
	case s == nil:
		return 0
	case s.Type == "text":
		return e.text(s.Data)
	case s.Type == "base64" && s.MediaType == "application/pdf":
		data, err := base64.StdEncoding.DecodeString(s.Data)
		if err != nil {
			return mediaTokens
		}
		return mediaTokens * pdfPages(data)
	}
	return mediaTokens
}

// pdfPages counts a PDF's page objects (/Type /Page, not /Pages); at
// least 1, as pages in compressed object streams cannot be seen.
func pdfPages(data []byte) int {
	n := 0
	for _, marker := range []string{"/Type/Page", "/Type /Page"} {
		rest := data
		for {
			i := bytes.Index(rest, []byte(marker))
			if i < 0 {
				break
			}
			rest = rest[i+len(marker):]
			if len(rest) == 0 || rest[0] != 's' {
				n++
			}
		}
	}
	return max(n, 1)
}

// imageTokens estimates an image from its size, read from the start of
// its data (PNG, JPEG and GIF; others count mediaTokens).
func imageTokens(s *chat.Source) int {
	if s == nil || s.Type != "base64" {
		return mediaTokens
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(s.Data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return mediaTokens
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if long := max(w, h); long > maxImageEdge {
		w, h = w*maxImageEdge/long, h*maxImageEdge/long
	}
	return min(max(int(w*h/imagePixelsPerToken), 1), mediaTokens)
}

// lookupModel is the entry of GET /v1/models for id.
func (g *Gateway) lookupModel(id string) (Model, bool) {
	if _, ok := g.routes[id]; !ok {
		return Model{}, false
	}
	i := sort.Search(len(g.models), func(i int) bool { return g.models[i].ID >= id })
	return g.models[i], true
}

// Model serves GET /v1/models/{model}: the model in Anthropic's shape
// ({type, id, display_name, created_at}) when DialectOf says the request
// is Anthropic's, else in OpenAI's ({id, object, created, owned_by}); a
// model the gateway does not route is a 404 in the same dialect. A model
// id holding "/" must be sent escaped (%2F), as the SDKs do.
func (g *Gateway) Model(w http.ResponseWriter, r *http.Request) {
	g.model(w, r, r.PathValue("model"))
}

func (g *Gateway) model(w http.ResponseWriter, r *http.Request, id string) {
	d := DialectOf(r)
	m, ok := g.lookupModel(id)
	if !ok {
		rep := wire.ErrorReply{Status: http.StatusNotFound, Type: string(CodeNotFound),
			Message: fmt.Sprintf("model: %q is not configured on this gateway", id)}
		if d == OpenAI {
			rep.Type, rep.Param, rep.Code = string(CodeInvalidRequest), "model", "model_not_found"
			rep.Message = fmt.Sprintf("The model '%s' does not exist on this gateway", id)
		}
		writeError(w, d, rep)
		return
	}
	if d == Anthropic {
		writeJSON(w, http.StatusOK, struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			CreatedAt   string `json:"created_at"`
		}{"model", m.ID, m.DisplayName, m.CreatedAt})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}{m.ID, "model", m.Created, m.OwnedBy})
}

// GeminiModel is a model in the Gemini API's shape.
type GeminiModel struct {
	Name                       string   `json:"name"` // "models/" and the id
	BaseModelID                string   `json:"baseModelId"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	Description                string   `json:"description"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

// geminiMethods are what the gateway serves of a model in the Gemini
// dialect.
var geminiMethods = []string{"generateContent", "streamGenerateContent"}

func geminiModel(m Model) GeminiModel {
	return GeminiModel{Name: "models/" + m.ID, BaseModelID: m.ID, Version: "ctxkit", DisplayName: m.DisplayName,
		Description: "served by ctxkit through upstream " + m.OwnedBy, SupportedGenerationMethods: geminiMethods}
}

// GeminiModel serves GET /v1beta/models/{model} in the Gemini API's shape;
// an unknown model is a 404 NOT_FOUND in Google's error shape.
func (g *Gateway) GeminiModel(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.PathValue("model"), "models/")
	m, ok := g.lookupModel(id)
	if !ok {
		writeError(w, Gemini, wire.ErrorReply{Status: http.StatusNotFound, Type: string(CodeNotFound),
			Message: fmt.Sprintf("models/%s is not found: the model is not configured on this gateway", id)})
		return
	}
	writeJSON(w, http.StatusOK, geminiModel(m))
}

// Page sizes of GET /v1beta/models.
const (
	defaultGeminiPage = 50
	maxGeminiPage     = 1000
)

// GeminiModels serves GET /v1beta/models in the Gemini API's shape:
// {"models":[…],"nextPageToken"}, pageSize models a page (default 50, at
// most 1000); the page token is the name of the last model of the page
// before, so pages need no server state.
func (g *Gateway) GeminiModels(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size := defaultGeminiPage
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, Gemini, wire.ErrorReply{Status: http.StatusBadRequest, Type: string(CodeInvalidRequest), Param: "pageSize",
				Message: fmt.Sprintf("pageSize: %q is not a non-negative integer", v)})
			return
		}
		if n > 0 {
			size = min(n, maxGeminiPage)
		}
	}
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		after := strings.TrimPrefix(tok, "models/")
		start = sort.Search(len(g.models), func(i int) bool { return g.models[i].ID > after })
	}
	end := min(start+size, len(g.models))
	out := struct {
		Models        []GeminiModel `json:"models"`
		NextPageToken string        `json:"nextPageToken,omitempty"`
	}{Models: []GeminiModel{}}
	for _, m := range g.models[start:end] {
		out.Models = append(out.Models, geminiModel(m))
	}
	if end < len(g.models) {
		out.NextPageToken = "models/" + g.models[end-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

// embedConcurrency is how many calls of one embeddings request are sent
// at once (Bedrock's Titan takes one text a call).
const embedConcurrency = 4

// Embeddings serves POST /v1/embeddings (the OpenAI dialect; see
// openai.DecodeEmbeddingRequest). The model is routed as a chat model is:
// the route's targets in turn, with the same rules (see try): a
// target fails over to the next on a connection error, no first byte in
// time or 429, 500, 502, 503, 504 or 529, within the route's
// max_attempts and max_time; a target whose keys all rest is skipped; a
// target whose provider has no embedding call (wire.EmbedCall: anthropic,
// deepseek, mock, ...) is passed over without a word. X-Ctxkit-Upstream
// and X-Ctxkit-Attempts name the last target tried and how many were (a
// target that embeds in several calls is one attempt), and each attempt
// is counted in the attempts metric. The target embeds the inputs in as
// many calls as its API needs, and the client gets OpenAI's list, numbers
// or base64 as it asked, with usage: the upstream's count, or ctxkit's
// estimate (the o200k_base tokens of the texts, the ids given) marked by
// X-Ctxkit-Token-Count: estimate where the upstream reports none; its
// cost, where the model has a price, in X-Ctxkit-Cost-Usd. A route none
// of whose targets embeds, token ids for an upstream that takes text, and
// fields the upstream cannot carry are refused (400, naming the field and
// the upstream); advisory fields it does not take are listed in
// X-Ctxkit-Warnings.
func (g *Gateway) Embeddings(w http.ResponseWriter, r *http.Request) {
	if err := g.embeddings(w, r); err != nil {
		g.fail(w, OpenAI, err)
	}
}

func (g *Gateway) embeddings(w http.ResponseWriter, r *http.Request) error {
	body, done, err := g.readBody(w, r)
	defer done()
	if err != nil {
		return err
	}
	req, err := openai.DecodeEmbeddingRequest(body)
	if err != nil {
		return badRequest(err)
	}
	rt, ok := g.routes[req.Model]
	if !ok {
		return &Error{Code: CodeNotFound, Status: http.StatusNotFound, Path: "model", Msg: fmt.Sprintf("model: %q is not configured on this gateway", req.Model)}
	}
	ctx, cancel := context.WithTimeoutCause(r.Context(), g.opts.MaxDuration, errTooLong)
	defer cancel()
	// The attempts are counted, not kept: embeddings are not recorded as
	// exchanges.
	e := &embedding{g: g, req: req.EmbedRequest}
	a, err := try(g, ctx, w, r, rt, &Exchange{}, endpoint[[]wire.Embeddings](e))
	if err != nil {
		return err
	}
	a.end()
	p := a.t.p
	total := wire.Embeddings{Vectors: make([][]float32, 0, req.Inputs()), Counted: true}
	for _, res := range a.v {
		total.Vectors = append(total.Vectors, res.Vectors...)
		total.InputTokens += res.InputTokens
		total.Counted = total.Counted && res.Counted
	}
	if !total.Counted {
		if total.InputTokens, err = estimateInputs(req.EmbedRequest); err != nil {
			return err
		}
		w.Header().Set(TokenCountHeader, "estimate")
	}
	out, err := openai.EncodeEmbeddingResponse(req.Model, total, req.Base64)
	if err != nil {
		g.opts.Logger.Warn("gateway embeddings", "provider", p.Name, "err", err.Error())
		return &Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: fmt.Sprintf("upstream %s sent embeddings ctxkit could not encode", p.Name), Err: err}
	}
	u := g.costed(p, a.t.model, chat.Usage{Input: int64(total.InputTokens)})
	g.account(r.Context(), p, a.t.model, u)
	if u.Cost != nil {
		w.Header().Set(CostHeader, formatCost(*u.Cost))
	}
	warningsHeader(w, e.warns)
	w.Header().Set("Content-Type", "application/json")
	cw := g.clientWriter(w)
	defer cw.done()
	w.WriteHeader(http.StatusOK)
	for len(out) > 0 {
		n := min(len(out), 1<<20)
		if _, err := cw.Write(out[:n]); err != nil {
			return nil
		}
		out = out[n:]
	}
	return nil
}

// embedCall is p's embedding call; nil when it has none (a mock answers
// chat alone).
func embedCall(p *Provider) *wire.EmbedCall {
	if p.mock != nil || p.row.Upstream == nil {
		return nil
	}
	return p.row.Upstream.Embed
}

// embedding is an embedding request as an endpoint of the attempt loop:
// the targets whose provider has an embedding call serve it; prepare
// makes a target's calls, send makes them (embedParts).
type embedding struct {
	g   *Gateway
	req wire.EmbedRequest

	// The calls readied for the target last prepared, and the warnings of
	// their encoding.
	call  *wire.EmbedCall
	parts []wire.EmbedPart
	warns []chat.Warning
}

func (e *embedding) serves(t *target) bool { return embedCall(t.p) != nil }

func (e *embedding) none(rt *route) error { return noEmbedding(rt) }

func (e *embedding) keyless(*target) bool { return false }

func (e *embedding) prepare(t *target, _ *poolKey) (bool, error) {
	call := embedCall(t.p)
	req := e.req
	req.Model = t.model
	parts, warns, err := encodeEmbed(t.p, call, req)
	if err != nil {
		return false, err
	}
	e.call, e.parts, e.warns = call, parts, warns
	return false, nil
}

func (e *embedding) send(actx context.Context, t *target, k *poolKey, firstByte time.Duration, _ bool) ([]wire.Embeddings, int, error) {
	results, err := e.g.embedParts(actx, t.p, k, e.call, e.parts, firstByte)
	if err != nil {
		var bad *Error
		if errors.As(err, &bad) {
			// The upstream answered, with what ctxkit cannot read: not a
			// failure another target is tried for.
			return nil, 0, &answerFailure{outcome: outcomeServerError, err: bad}
		}
		return nil, 0, err
	}
	return results, http.StatusOK, nil
}

// encodeEmbed makes the calls that embed req at p, or the 400 that
// refuses it, naming the field and the upstream.
func encodeEmbed(p *Provider, call *wire.EmbedCall, req wire.EmbedRequest) ([]wire.EmbedPart, []chat.Warning, error) {
	if req.Tokens != nil && !call.Tokens {
		return nil, nil, &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: "input",
			Msg: fmt.Sprintf("input: upstream %s (type %s) takes text, not token ids: send the text", p.Name, p.Type)}
	}
	parts, warns, err := call.Encode(req)
	if err != nil {
		e := badRequest(err)
		e.Msg = fmt.Sprintf("upstream %s (type %s): %s", p.Name, p.Type, e.Msg)
		return nil, nil, e
	}
	return parts, warns, nil
}

// noEmbedding refuses a model none of whose targets has an embedding
// call, naming them.
func noEmbedding(rt *route) *Error {
	ups := make([]string, 0, len(rt.targets))
	for _, t := range rt.targets {
		ups = append(ups, fmt.Sprintf("%s (type %s)", t.p.Name, t.p.Type))
	}
	where := "upstream " + ups[0] + ", which has"
	if len(ups) > 1 {
		where = "upstreams " + strings.Join(ups, ", ") + ", none of which has"
	}
	return &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: "model",
		Msg: fmt.Sprintf("model: %q is routed to %s an embedding API", rt.name, where)}
}

// embedParts sends the calls of an embedding request to p with key k,
// embedConcurrency at a time, each answering within firstByte; the first
// failure ends the others and is returned as it came: an
// *upstream.Error (or the context's) for classify, an *Error when an
// answer could not be read.
func (g *Gateway) embedParts(ctx context.Context, p *Provider, k *poolKey, call *wire.EmbedCall, parts []wire.EmbedPart, firstByte time.Duration) ([]wire.Embeddings, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := jsonHeader(k)
	results := make([]wire.Embeddings, len(parts))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
			cancel()
		}
	}
	sem := make(chan struct{}, embedConcurrency)
	for i := range parts {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			part := parts[i]
			resp, err := g.client(p).Do(ctx, upstream.Request{Method: http.MethodPost, URL: p.BaseURL + part.Path, Header: h, Body: part.Body, Redact: p.redact,
				ConnectTimeout: time.Duration(p.Timeouts.Connect), FirstByte: firstByte})
			if err != nil {
				fail(err)
				return
			}
			data, err := readAnswer(resp, g.opts.MaxResponseBytes, p)
			if err != nil {
				fail(err)
				return
			}
			res, err := call.Decode(part, resp.Header, data)
			if err != nil {
				g.opts.Logger.Warn("gateway embeddings", "provider", p.Name, "err", p.redact(err.Error()))
				fail(&Error{Code: CodeAPI, Status: http.StatusBadGateway, Msg: fmt.Sprintf("upstream %s sent an embedding answer ctxkit could not read", p.Name), Err: err})
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		// The request ended between two calls: a timeout of the
		// attempt or the request, or the client gone (classify tells
		// which).
		cause := context.Cause(ctx)
		return nil, &upstream.Error{Code: upstream.CodeTransport, Msg: "upstream " + p.Name + ": " + cause.Error(), Err: cause}
	}
	return results, nil
}

// estimateInputs is the o200k_base token count of the texts, or the
// number of token ids given.
func estimateInputs(req wire.EmbedRequest) (int, error) {
	n := 0
	for _, ids := range req.Tokens {
		n += len(ids)
	}
	if len(req.Texts) == 0 {
		return n, nil
	}
	c, err := tokencount.Codec("")
	if err != nil {
		return 0, err
	}
	for _, t := range req.Texts {
		k, err := c.Count(t)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// Unknown answers a request under /v1/ or /v1beta/ that no gateway route
// serves, in the dialect DialectOf names: 405 with Allow when allow lists
// the methods the path is served with, else 404. A GET of
// /v1/models/<id> whose id holds an unescaped "/" is served as GET
// /v1/models/{model}; so are the Gemini paths of such an id (Google's SDKs
// put a model's name in the path unescaped): GET /v1beta/models/<id> as
// GeminiModel, POST /v1beta/models/<id>:<method> as GenerateContent.
func (g *Gateway) Unknown(w http.ResponseWriter, r *http.Request, allow []string) {
	if len(allow) == 0 && r.Method == http.MethodGet {
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/"); ok && id != "" {
			g.model(w, r, id)
			return
		}
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/"); ok && rest != "" && len(allow) == 0 {
		switch r.Method {
		case http.MethodGet:
			r.SetPathValue("model", rest)
			g.GeminiModel(w, r)
			return
		case http.MethodPost:
			r.SetPathValue("call", rest)
			g.GenerateContent(w, r)
			return
		}
	}
	d := DialectOf(r)
	rep := wire.ErrorReply{Status: http.StatusNotFound, Type: string(CodeNotFound),
		Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		rep.Status = http.StatusMethodNotAllowed
		rep.Type = string(CodeInvalidRequest)
		rep.Message = fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, ", "))
	}
	if d == OpenAI && rep.Status == http.StatusNotFound {
		rep.Type, rep.Code = string(CodeInvalidRequest), "unknown_url"
	}
	writeError(w, d, rep)
}
