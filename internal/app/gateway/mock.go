package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/ctxkit/ctxkit/wire"
)

// TypeMock is the type of a provider that answers in process, without
// any network: a client's setup, streaming and fallbacks can be tried
// offline. It speaks the OpenAI Chat Completions API behind the gateway's
// upstream client, so every request goes through the same encoding,
// decoding, error mapping and fallbacks as one to a real upstream. It is
// the gateway's own: it has no row in the provider table, so `ctxkit
// convert` and `ctxkit scaffold` do not offer it.
const TypeMock = "mock"

// DefaultMockText is what a mock provider answers when its Text is not
// set.
const DefaultMockText = "Hello! This is ctxkit's mock provider: the gateway works."

// mockBaseURL is where a mock provider's requests are addressed. They
// never leave the process (its client's transport is the mock), and the
// .invalid name resolves nowhere should one ever try.
const mockBaseURL = "http://mock.invalid/v1"

// Bounds of a mock's configuration.
const (
	maxMockText       = 64 << 10
	maxMockErrors     = 64
	maxMockDelay      = 10 * time.Minute
	maxMockChunkWords = 10000
	// maxSchemaDepth bounds how deep the arguments built from a tool's
	// schema go; maxSchemaItems the elements of an array they hold.
	maxSchemaDepth = 8
	maxSchemaItems = 3
	// maxSchemaValues bounds the values they hold in all: a schema's
	// arrays multiply what their items hold.
	maxSchemaValues = 1000
	maxSchemaConst  = 1 << 10 // bytes of a const, default or enum value copied
	// maxMockRetryAfter bounds the Retry-After a mock sends.
	maxMockRetryAfter = 24 * time.Hour
)

// Mock is the configuration of a provider of type mock. Its zero value
// answers every request at once with DefaultMockText, streamed a word at
// a time, or with a call of the request's first tool.
type Mock struct {
	// Text is the answer (default DefaultMockText); Echo answers with the
	// text of the request's last user message instead (Text when it has
	// none).
	Text string `json:"text,omitempty"`
	Echo bool   `json:"echo,omitempty"`
	// ChunkWords is how many words each event of a stream carries
	// (default 1); ChunkDelay the pause between two events.
	ChunkWords int      `json:"chunk_words,omitempty"`
	ChunkDelay Duration `json:"chunk_delay,omitempty"`
	// Latency is the wait before the answer's first byte (its headers).
	Latency Duration `json:"latency,omitempty"`
	// Tools says how a request that offers tools is answered: "call" (the
	// default) with a call of the tool tool_choice names, else of the
	// first tool, whose arguments hold each required property of the
	// tool's schema; "never" with text. A request whose last message
	// holds tool results, or whose tool_choice is none, gets text.
	Tools string `json:"tools,omitempty"`
	// Errors fail chosen requests with an HTTP status, in the upstream's
	// error shape; the first rule that matches a request wins.
	Errors []MockError `json:"errors,omitempty"`
}

// MockError fails requests of a mock provider: the On-th (1 is the
// first request the provider gets), or every Every-th. A failure is a
// Status, or a Cut: the answer begins (200) and stops after Cut events
// of its stream, as a dropped connection does (a response not streamed
// stops half-way through its body).
type MockError struct {
	Status int `json:"status,omitempty"` // 400 to 599
	Cut    int `json:"cut,omitempty"`
	On     int `json:"on,omitempty"`
	Every  int `json:"every,omitempty"`
	// RetryAfter is sent as the Retry-After header, in whole seconds
	// (default 1s for a 429 and a 503; none for other statuses).
	RetryAfter Duration `json:"retry_after,omitempty"`
	Message    string   `json:"message,omitempty"` // default: says which rule failed the request
}

// Mock tool answers.
const (
	mockToolsCall  = "call"
	mockToolsNever = "never"
)

// checkMock validates a provider of type mock at path at and makes it
// ready: it takes no base URL and no key (it has neither), and answers
// through the OpenAI Chat Completions row of the provider table.
func (p *Provider) checkMock(at string, row wire.Provider) error {
	switch {
	case p.BaseURL != "":
		return fmt.Errorf("%s.base_url: a mock provider takes none (it answers in process)", at)
	case p.APIKeyEnv != "":
		return fmt.Errorf("%s.api_key_env: a mock provider takes none (it needs no key)", at)
	case len(p.Keys) > 0:
		return fmt.Errorf("%s.keys: a mock provider takes none (it needs no key)", at)
	case p.KeyCooldown != 0:
		return fmt.Errorf("%s.key_cooldown: a mock provider takes none (it has no key to rest)", at)
	case p.API != "":
		return fmt.Errorf("%s.api: a mock provider speaks the Chat Completions API only", at)
	}
	m := p.Mock
	if m == nil {
		m = &Mock{}
	}
	cfg := *m
	mat := at + ".mock"
	if len(cfg.Text) > maxMockText {
		return fmt.Errorf("%s.text: %d bytes, more than %d", mat, len(cfg.Text), maxMockText)
	}
	if cfg.Text == "" {
		cfg.Text = DefaultMockText
	}
	switch {
	case cfg.ChunkWords < 0 || cfg.ChunkWords > maxMockChunkWords:
		return fmt.Errorf("%s.chunk_words: %d is not between 1 and %d", mat, cfg.ChunkWords, maxMockChunkWords)
	case cfg.ChunkWords == 0:
		cfg.ChunkWords = 1
	}
	if time.Duration(cfg.ChunkDelay) > maxMockDelay {
		return fmt.Errorf("%s.chunk_delay: %v is longer than %v", mat, time.Duration(cfg.ChunkDelay), maxMockDelay)
	}
	if time.Duration(cfg.Latency) > maxMockDelay {
		return fmt.Errorf("%s.latency: %v is longer than %v", mat, time.Duration(cfg.Latency), maxMockDelay)
	}
	switch cfg.Tools {
	case "":
		cfg.Tools = mockToolsCall
	case mockToolsCall, mockToolsNever:
	default:
		return fmt.Errorf("%s.tools: %q is not one of call, never", mat, cfg.Tools)
	}
	if len(cfg.Errors) > maxMockErrors {
		return fmt.Errorf("%s.errors: %d rules, more than %d", mat, len(cfg.Errors), maxMockErrors)
	}
	cfg.Errors = append([]MockError(nil), cfg.Errors...)
	for i := range cfg.Errors {
		e := &cfg.Errors[i]
		eat := fmt.Sprintf("%s.errors[%d]", mat, i)
		switch {
		case e.Cut < 0:
			return fmt.Errorf("%s.cut: %d is not a number of events", eat, e.Cut)
		case (e.Status == 0) == (e.Cut == 0):
			return fmt.Errorf("%s: exactly one of status (an HTTP error) and cut (the events sent before the stream stops)", eat)
		case e.Cut == 0 && (e.Status < 400 || e.Status > 599):
			return fmt.Errorf("%s.status: %d is not an HTTP error status (400 to 599)", eat, e.Status)
		case e.On < 0:
			return fmt.Errorf("%s.on: %d is not a request number (1 is the first)", eat, e.On)
		case e.Every < 0:
			return fmt.Errorf("%s.every: %d is not a positive number", eat, e.Every)
		case (e.On == 0) == (e.Every == 0):
			return fmt.Errorf("%s: exactly one of on (the Nth request) and every (every Nth request)", eat)
		case time.Duration(e.RetryAfter) > maxMockRetryAfter:
			return fmt.Errorf("%s.retry_after: %v is longer than %v", eat, time.Duration(e.RetryAfter), maxMockRetryAfter)
		case len(e.Message) > maxMockText:
			return fmt.Errorf("%s.message: %d bytes, more than %d", eat, len(e.Message), maxMockText)
		}
		if e.RetryAfter == 0 && (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) {
			e.RetryAfter = Duration(time.Second)
		}
	}
	p.BaseURL = mockBaseURL
	p.row = row
	p.redact = func(s string) string { return s } // there is no key to take out
	p.mock = &mockTransport{cfg: cfg}
	return nil
}

// mockTransport is a mock provider's upstream: an http.RoundTripper that
// answers Chat Completions requests in process.
type mockTransport struct {
	cfg Mock
	n   atomic.Int64 // requests received
}

// mockMaxBody bounds a request the mock reads; the gateway never sends
// one larger than its own request limit.
const mockMaxBody = 64 << 20

// RoundTrip answers r after the configured latency: with the failure
// configured for its number, or with the answer, as one response or a
// stream.
func (m *mockTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, mockMaxBody+1))
		r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	n := m.n.Add(1)
	if err := sleep(ctx, time.Duration(m.cfg.Latency)); err != nil {
		return nil, err
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		return m.reply(r, http.StatusNotFound, nil, wire.ErrorReply{Status: http.StatusNotFound, Type: "not_found_error",
			Message: "mock: " + r.Method + " " + r.URL.Path + " is not served (POST /chat/completions is)"}), nil
	}
	if len(body) > mockMaxBody {
		return m.reply(r, http.StatusRequestEntityTooLarge, nil, wire.ErrorReply{Status: http.StatusRequestEntityTooLarge,
			Type: "request_too_large", Message: "mock: the request is too large"}), nil
	}
	e := m.failure(n)
	if e != nil && e.Cut == 0 {
		h := http.Header{}
		if e.RetryAfter > 0 {
			h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(time.Duration(e.RetryAfter).Seconds())), 10))
		}
		msg := e.Message
		if msg == "" {
			which := fmt.Sprintf("every %s request", ordinal(e.Every))
			if e.On > 0 {
				which = fmt.Sprintf("the %s request", ordinal(e.On))
			}
			msg = fmt.Sprintf("mock: request %d fails with %d, as configured for %s", n, e.Status, which)
		}
		return m.reply(r, e.Status, h, wire.ErrorReply{Status: e.Status, Type: mockErrorType(e.Status), Message: msg}), nil
	}
	req, err := OpenAI.row().Decode(body, wire.Incoming{})
	if err != nil {
		return m.reply(r, http.StatusBadRequest, nil, wire.ErrorReply{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "mock: " + err.Error()}), nil
	}
	ans, err := m.answer(req, n)
	if err != nil {
		return nil, err
	}
	cut := 0
	if e != nil {
		cut = e.Cut
	}
	out := wire.Outgoing{Request: &req, Model: req.Model, ID: fmt.Sprintf("chatcmpl-mock%d", n), Created: time.Now().Unix()}
	if !req.Stream {
		res, err := chat.Collect(ans.chunks(ctx, 0))
		if err != nil {
			return nil, err
		}
		data, err := OpenAI.row().Response(res, out)
		if err != nil {
			return nil, err
		}
		if cut > 0 {
			data = data[:len(data)/2]
		}
		return m.respond(r, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, io.NopCloser(bytes.NewReader(data))), nil
	}
	pr, pw := io.Pipe()
	b := &mockBody{r: pr, done: make(chan struct{})}
	go func() {
		// The stream ends when it is written, when the request is
		// cancelled, or when its reader closes it (then every write
		// fails and every pause ends).
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-b.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		var w io.Writer = pw
		if cut > 0 {
			w = &eventCutter{w: pw, left: cut}
		}
		err := OpenAI.row().Stream(w, out, ans.chunks(ctx, time.Duration(m.cfg.ChunkDelay)))
		if errors.Is(err, errCutHere) {
			// The connection drops: the stream ends without [DONE], as
			// a plain EOF.
			err = nil
		}
		pw.CloseWithError(err)
	}()
	return m.respond(r, http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}}, b), nil
}

// failure is the error rule that fails request n, nil for none.
func (m *mockTransport) failure(n int64) *MockError {
	for i := range m.cfg.Errors {
		e := &m.cfg.Errors[i]
		if int64(e.On) == n || e.Every > 0 && n%int64(e.Every) == 0 {
			return e
		}
	}
	return nil
}

func (m *mockTransport) reply(r *http.Request, status int, h http.Header, e wire.ErrorReply) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return m.respond(r, status, h, io.NopCloser(bytes.NewReader(OpenAI.row().Error(e))))
}

func (m *mockTransport) respond(r *http.Request, status int, h http.Header, body io.ReadCloser) *http.Response {
	return &http.Response{Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: body, ContentLength: -1, Request: r}
}

// mockErrorType is the error type a status is sent with, in the
// vocabulary the dialects share.
func mockErrorType(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// errCutHere ends a stream a mock cuts.
var errCutHere = errors.New("mock: the stream is cut here")

// eventCutter passes on the first left events of a stream (each written
// by one Write, as the encoders do), then fails every write.
type eventCutter struct {
	w    io.Writer
	left int
}

func (c *eventCutter) Write(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errCutHere
	}
	c.left--
	return c.w.Write(p)
}

// mockBody is a streamed answer's body; closing it ends the stream.
type mockBody struct {
	r    *io.PipeReader
	once sync.Once
	done chan struct{}
}

func (b *mockBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *mockBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return b.r.Close()
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mockAnswer is what the mock answers a request: text in pieces, or one
// tool call; and the usage.
type mockAnswer struct {
	pieces []string // the text, a stream event each
	call   *chat.Chunk
	usage  chat.Usage
}

// answer builds the answer to req, the n-th request.
func (m *mockTransport) answer(req chat.Request, n int64) (*mockAnswer, error) {
	in, err := EstimateTokens(req)
	if err != nil {
		return nil, err
	}
	codec, err := tokencount.Codec("")
	if err != nil {
		return nil, err
	}
	a := &mockAnswer{usage: chat.Usage{Input: int64(in)}}
	var said string
	if tool := m.tool(req); tool != nil {
		args := schemaValue(tool.InputSchema)
		if _, ok := args.(map[string]any); !ok {
			args = map[string]any{}
		}
		data, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		a.call = &chat.Chunk{Type: chat.ChunkToolCallEnd, ID: fmt.Sprintf("call_mock%d", n), Name: tool.Name, Arguments: string(data)}
		said = tool.Name + string(data)
	} else {
		text := m.text(req)
		a.pieces = splitWords(text, m.cfg.ChunkWords)
		said = text
	}
	out, err := codec.Count(said)
	if err != nil {
		return nil, err
	}
	a.usage.Output = int64(out)
	return a, nil
}

// tool is the tool req is answered with a call of, nil for text.
func (m *mockTransport) tool(req chat.Request) *chat.Tool {
	if m.cfg.Tools == mockToolsNever || len(req.Tools) == 0 || req.ToolChoice != nil && req.ToolChoice.Type == "none" {
		return nil
	}
	if k := len(req.Messages); k > 0 {
		for _, b := range req.Messages[k-1].Content.AsBlocks() {
			if b.Type == chat.TypeToolResult {
				return nil // the model has what it asked for: it answers
			}
		}
	}
	if req.ToolChoice != nil && req.ToolChoice.Name != "" {
		for i := range req.Tools {
			if req.Tools[i].Name == req.ToolChoice.Name {
				return &req.Tools[i]
			}
		}
	}
	return &req.Tools[0]
}

// text is the text req is answered with: JSON for a request of
// structured output, the last user message's text for an echo, else the
// configured text.
func (m *mockTransport) text(req chat.Request) string {
	if f := req.Format; f != nil {
		var v any = map[string]any{"text": m.cfg.Text}
		if f.Type == "json_schema" && len(f.Schema) > 0 {
			v = schemaValue(f.Schema)
		}
		data, _ := json.Marshal(v)
		return string(data)
	}
	if m.cfg.Echo {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if msg := req.Messages[i]; msg.Role == chat.User {
				if s := msg.Content.PlainText("\n"); s != "" {
					return s
				}
				break
			}
		}
	}
	return m.cfg.Text
}

// chunks is the answer as a chunk stream, with delay between two
// events; it ends early, with ctx's error, when ctx ends.
func (a *mockAnswer) chunks(ctx context.Context, delay time.Duration) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		first := true
		emit := func(c chat.Chunk) bool {
			if !first {
				if err := sleep(ctx, delay); err != nil {
					yield(chat.Chunk{}, err)
					return false
				}
			}
			first = false
			return yield(c, nil)
		}
		stop := chat.Stop{Reason: chat.StopEndTurn, Raw: "stop"}
		if c := a.call; c != nil {
			stop = chat.Stop{Reason: chat.StopToolUse, Raw: "tool_calls"}
			if !emit(chat.Chunk{Type: chat.ChunkToolCallStart, ID: c.ID, Name: c.Name}) ||
				!emit(chat.Chunk{Type: chat.ChunkToolCallDelta, Arguments: c.Arguments}) ||
				!yield(*c, nil) {
				return
			}
		}
		for _, p := range a.pieces {
			if !emit(chat.Chunk{Type: chat.ChunkText, Text: p}) {
				return
			}
		}
		u := a.usage
		if yield(chat.Chunk{Type: chat.ChunkStop, Stop: &stop}, nil) {
			yield(chat.Chunk{Type: chat.ChunkUsage, Usage: &u}, nil)
		}
	}
}

// splitWords cuts s into pieces of n words each, every word with the
// space that follows it, so that the pieces add up to s.
func splitWords(s string, n int) []string {
	var out []string
	start, words := 0, 0
	inWord := false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if !space && !inWord {
			if words == n {
				out = append(out, s[start:i])
				start, words = i, 0
			}
			words++
		}
		inWord = !space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// schemaValue is a value that the JSON Schema schema accepts, built from
// what it says (const, enum, default, type; an object's required
// properties; an array's minItems, up to maxSchemaItems), as simple as it
// can be: "mock" for a string, 0 (or the minimum) for a number, false,
// an empty array. A schema ctxkit cannot read gives null, and so does
// one past maxSchemaDepth or maxSchemaValues.
func schemaValue(schema json.RawMessage) any {
	budget := maxSchemaValues
	return buildValue(schema, 0, &budget)
}

func buildValue(schema json.RawMessage, depth int, budget *int) any {
	var s map[string]json.RawMessage
	if depth > maxSchemaDepth || *budget <= 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	*budget--
	for _, k := range []string{"const", "default"} {
		// A large constant is not copied: it would be copied for each
		// item of the arrays it is in.
		if raw, ok := s[k]; ok && len(raw) <= maxSchemaConst {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				return v
			}
		}
	}
	var enum []json.RawMessage
	if json.Unmarshal(s["enum"], &enum) == nil && len(enum) > 0 && len(enum[0]) <= maxSchemaConst {
		var v any
		if json.Unmarshal(enum[0], &v) == nil {
			return v
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		var alts []json.RawMessage
		if json.Unmarshal(s[k], &alts) == nil && len(alts) > 0 {
			return buildValue(alts[0], depth+1, budget)
		}
	}
	typ := ""
	var types []string
	switch {
	case json.Unmarshal(s["type"], &typ) == nil:
	case json.Unmarshal(s["type"], &types) == nil:
		for _, t := range types {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		}
	}
	switch typ {
	case "object":
		var props map[string]json.RawMessage
		var required []string
		json.Unmarshal(s["properties"], &props)
		json.Unmarshal(s["required"], &required)
		obj := map[string]any{}
		for _, name := range required {
			obj[name] = buildValue(props[name], depth+1, budget)
		}
		return obj
	case "array":
		var minItems int
		json.Unmarshal(s["minItems"], &minItems)
		arr := []any{}
		for range min(max(minItems, 0), maxSchemaItems) {
			arr = append(arr, buildValue(s["items"], depth+1, budget))
		}
		return arr
	case "string":
		return "mock"
	case "integer", "number":
		var lo float64
		if json.Unmarshal(s["minimum"], &lo) == nil {
			if typ == "integer" {
				lo = math.Ceil(lo)
			}
			return lo
		}
		return 0
	case "boolean":
		return false
	}
	return nil
}
