// Package fakeup holds strict fake upstreams, one per provider type ctxkit's
// gateway calls: OpenAI (Chat Completions, the Responses API, embeddings,
// models), Anthropic (Messages, count_tokens), Gemini (generateContent,
// streamGenerateContent, embeddings, countTokens), Bedrock (Converse,
// ConverseStream, InvokeModel embeddings), Mistral and DeepSeek.
//
// Each fake is written from the provider's documentation and refuses what
// the real API refuses, with the real API's error body: unknown fields,
// tool-call ids outside the provider's rule (Anthropic
// ^[a-zA-Z0-9_-]+$, OpenAI at most 40 characters, Mistral nine
// alphanumerics, Bedrock [a-zA-Z0-9_-]{1,64}), a Mistral user message after
// tool messages, Gemini 3 function calls of the current turn without a
// thoughtSignature, stream_options without stream, tool results that answer
// no call. What it accepts it answers with canned but realistic content,
// streamed or not as asked: text, tool calls (arguments made from the
// tool's schema), JSON made from a requested response schema, and usage.
//
// A fake records every exchange (Exchanges), so a test can check what the
// gateway sent: headers such as anthropic-beta, the ids it rewrote.
package fakeup

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Canned figures every fake answers with, so that a test can check what
// reaches the client through the gateway.
const (
	// InputTokens and OutputTokens are the usage of every generation.
	InputTokens  = 31
	OutputTokens = 9
	// AnthropicCount is what the Anthropic fake's count_tokens answers:
	// no offline estimate of a short request comes near it.
	AnthropicCount = 417
	// GeminiCount is what the Gemini fake's countTokens answers.
	GeminiCount = 233
	// EmbeddingTokens is the usage of each embedded input.
	EmbeddingTokens = 5
	// AfterTool is the text every fake answers when the conversation ends
	// with tool results.
	AfterTool = "The tool has answered: it is sunny in Paris."
)

// Greeting is the text a fake answers a plain request with.
func Greeting(provider string) string { return "Hello from the " + provider + " fake." }

// Embedding is the vector every fake returns for an input of n
// characters (or tokens): small, exact in float32, different for inputs
// of different lengths, so that a test sees the order was kept.
func Embedding(n int) []float64 {
	return []float64{0.5, -0.25, float64(n) + 0.125, 1}
}

// Limits of what a fake reads: the gateway is trusted, but a fake must
// not fall over on a broken request.
const (
	maxBody     = 8 << 20
	maxMessages = 4096
	maxDepth    = 32 // of a JSON schema a fake makes a value from
	maxLog      = 256
)

// Exchange is one request a fake answered.
type Exchange struct {
	Method string
	Path   string // with the query, as sent
	Header http.Header
	Body   []byte
	Status int
	Reply  []byte // the response body (a stream as written), at most 1 MiB
}

// Fake is one fake upstream, an http.Handler.
type Fake struct {
	// Name is the provider type the fake plays ("openai", "anthropic" ...).
	Name string
	key  string
	mux  *http.ServeMux

	mu  sync.Mutex
	log []Exchange
}

func newFake(name, key string) *Fake {
	return &Fake{Name: name, key: key, mux: http.NewServeMux()}
}

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	ex := Exchange{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body}
	defer func() {
		ex.Status, ex.Reply = rec.status, rec.buf.Bytes()
		f.mu.Lock()
		if len(f.log) == maxLog {
			f.log = f.log[1:]
		}
		f.log = append(f.log, ex)
		f.mu.Unlock()
	}()
	if err != nil {
		http.Error(rec, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mux.ServeHTTP(rec, r)
}

// Exchanges are the requests the fake answered, oldest first (the last
// 256).
func (f *Fake) Exchanges() []Exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Exchange(nil), f.log...)
}

// Last is the last exchange whose path contains part.
func (f *Fake) Last(part string) (Exchange, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.log) - 1; i >= 0; i-- {
		if strings.Contains(f.log[i].Path, part) {
			return f.log[i], true
		}
	}
	return Exchange{}, false
}

// Reset forgets the exchanges.
func (f *Fake) Reset() {
	f.mu.Lock()
	f.log = nil
	f.mu.Unlock()
}

// recorder keeps a copy of the response (up to 1 MiB) and passes flushes
// on, so that streams stream.
type recorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.buf.Len() < 1<<20 {
		r.buf.Write(p[:min(len(p), 1<<20-r.buf.Len())])
	}
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // the fakes only marshal their own values
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// sse writes one server-sent event (no event line when name is "") and
// flushes it.
func sse(w http.ResponseWriter, name string, v any) {
	var data []byte
	if raw, ok := v.(string); ok {
		data = []byte(raw)
	} else {
		var err error
		if data, err = json.Marshal(v); err != nil {
			panic(err)
		}
	}
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func startStream(w http.ResponseWriter, contentType string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// topLevel reads a request body as a JSON object and returns the first of
// its keys (sorted) that is not in allowed, "" when all are.
func topLevel(body []byte, allowed map[string]bool) (map[string]json.RawMessage, string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, "", err
	}
	if m == nil {
		return nil, "", fmt.Errorf("the body is not a JSON object")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowed[k] {
			return m, k, nil
		}
	}
	return m, "", nil
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// strict decodes data into v, refusing unknown fields at any depth.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomID is prefix and n random alphanumerics.
func randomID(prefix string, n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return prefix + string(b)
}

// toolDef is a tool a request offers.
type toolDef struct {
	Name   string
	Schema json.RawMessage
}

// turn is what a fake needs to know of a request to answer it.
type turn struct {
	tools     []toolDef
	forced    string // the tool the request forces, "" none
	any       bool   // a tool call is required, any tool
	none      bool   // tools may not be called
	schema    []byte // the response schema asked for, nil none
	afterTool bool   // the conversation ends with tool results
}

// call is a tool call of an answer.
type call struct {
	ID   string
	Name string
	Args string // JSON object
}

// answer is what a fake says.
type answer struct {
	Text      string
	Reasoning string
	Redacted  string // Anthropic's redacted_thinking data, "" none
	Encrypted string // a Responses reasoning item's encrypted_content, "" none
	Calls     []call
}

// plan decides the answer: JSON made from the response schema when one is
// asked for; a call of the forced (or first) tool when tools are offered
// and the conversation does not end with tool results; else text.
func plan(t turn, provider string, newID func() string) answer {
	pick := func(name string) (toolDef, bool) {
		for _, td := range t.tools {
			if td.Name == name {
				return td, true
			}
		}
		return toolDef{}, false
	}
	switch {
	case t.forced != "":
		if td, ok := pick(t.forced); ok {
			return answer{Calls: []call{{ID: newID(), Name: td.Name, Args: sampleJSON(td.Schema)}}}
		}
	case t.schema != nil:
		return answer{Text: sampleJSON(t.schema)}
	case len(t.tools) > 0 && !t.none && (!t.afterTool || t.any):
		td := t.tools[0]
		return answer{Calls: []call{{ID: newID(), Name: td.Name, Args: sampleJSON(td.Schema)}}}
	}
	if t.afterTool {
		return answer{Text: AfterTool}
	}
	return answer{Text: Greeting(provider)}
}

// sampleJSON is a JSON value that fits schema (JSON Schema, or Gemini's
// OpenAPI subset with upper-case types): strings "Paris" (or the first
// enum value), numbers 21, booleans true, one item per array, every
// property of an object.
func sampleJSON(schema []byte) string {
	var s any
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return "{}"
	}
	out, err := json.Marshal(sample(s, 0))
	if err != nil {
		return "{}"
	}
	return string(out)
}

func sample(s any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > maxDepth {
		return map[string]any{}
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return sample(alts[0], depth+1)
		}
	}
	typ, _ := m["type"].(string)
	if ts, ok := m["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch strings.ToLower(typ) {
	case "string":
		return "Paris"
	case "integer":
		return 21
	case "number":
		return 21.5
	case "boolean":
		return true
	case "null":
		return nil
	case "array":
		return []any{sample(m["items"], depth+1)}
	}
	obj := map[string]any{}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			obj[k] = sample(v, depth+1)
		}
	}
	return obj
}

// words splits text into the pieces a stream sends it in.
func words(text string) []string {
	var out []string
	for len(text) > 0 {
		i := strings.IndexByte(text[1:], ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// halves splits s in two, for argument deltas.
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	return []string{s[:len(s)/2], s[len(s)/2:]}
}
