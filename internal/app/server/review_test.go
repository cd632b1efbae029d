package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
)

// TestChatToolStrictCarried: a Chat Completions client's strict: true on
// a function tool asks the upstream for schema adherence; an OpenAI
// upstream is sent it, not a request without it.
func TestChatToolStrictCarried(t *testing.T) {
	e, bodies := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	r := e.do("POST", "/v1/chat/completions", alice, `{"model":"gpt-x","messages":[{"role":"user","content":"q"}],`+
		`"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{},"additionalProperties":false}}}]}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sent := bodies()
	if last := sent[len(sent)-1]; !strings.Contains(last, `"strict":true`) {
		t.Fatalf("the upstream was not sent the tool's strict: %s", last)
	}
	// From the Responses dialect too (it kept strict, then warned it away).
	r = e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"q","store":false,`+
		`"tools":[{"type":"function","name":"f","strict":true,"parameters":{"type":"object","properties":{},"additionalProperties":false}}]}`)
	if r.status != 200 || r.header.Get("X-Ctxkit-Warnings") != "" {
		t.Fatalf("%d %q %s", r.status, r.header.Get("X-Ctxkit-Warnings"), r.body)
	}
	sent = bodies()
	if last := sent[len(sent)-1]; !strings.Contains(last, `"strict":true`) {
		t.Fatalf("the upstream was not sent the tool's strict: %s", last)
	}
}

// TestResponsesNotShadowed: another agent of the owner who knows a
// response's id cannot hide it from its caller by writing a team
// breadcrumb with the same tag and schema (newer, so listed first).
func TestResponsesNotShadowed(t *testing.T) {
	e, _ := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	bob := e.token("acme", "bob", "emitter")
	r := e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"first question"}`)
	var first struct{ ID string }
	if err := json.Unmarshal(r.body, &first); err != nil || first.ID == "" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for range 3 {
		p := e.do("POST", "/breadcrumbs", bob, `{"title":"x","context":{"id":"`+first.ID+`","response":{"planted":true},"messages":[{"role":"user","content":"planted"}]},`+
			`"tags":["ctxkit.response:`+first.ID+`"],"schema_name":"ctxkit.response","visibility":"team"}`)
		if p.status != 201 {
			t.Fatalf("plant: %d %s", p.status, p.body)
		}
	}
	g := e.do("GET", "/v1/responses/"+first.ID, alice, nil)
	if g.status != 200 || strings.Contains(string(g.body), "planted") {
		t.Fatalf("alice's response, after bob's breadcrumbs: %d %s", g.status, g.body)
	}
	if d := e.do("DELETE", "/v1/responses/"+first.ID, alice, nil); d.status != 200 {
		t.Fatalf("delete: %d %s", d.status, d.body)
	}
	if g := e.do("GET", "/v1/responses/"+first.ID, alice, nil); g.status != 404 {
		t.Fatalf("after delete: %d %s", g.status, g.body)
	}
}

// TestGeminiBodyModelNotIgnored: a Gemini request whose body names a
// model other than its path's is refused, naming the field, not answered
// by the path's model as though the body had not said otherwise.
func TestGeminiBodyModelNotIgnored(t *testing.T) {
	e, _ := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	body := `{"model":"models/other","contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	r := e.do("POST", "/v1beta/models/gpt-x:generateContent", alice, body)
	if r.status != 400 || !strings.Contains(string(r.body), "INVALID_ARGUMENT") || !strings.Contains(string(r.body), "model") {
		t.Fatalf("a body naming another model: %d %s", r.status, r.body)
	}
	same := `{"model":"models/gpt-x","contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	if r := e.do("POST", "/v1beta/models/gpt-x:generateContent", alice, same); r.status != 200 {
		t.Fatalf("a body naming the path's model: %d %s", r.status, r.body)
	}
}

// TestResponsesExpire: every request may keep a response, so a kept
// response ends (after server.ResponseTTL, as OpenAI's do) rather than
// piling up in the store for good.
func TestResponsesExpire(t *testing.T) {
	e, _ := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	if r := e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"q"}`); r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	l := e.do("GET", "/breadcrumbs?schema_name=ctxkit.response", alice, nil)
	var page struct{ Items []struct{ ID string } }
	if err := json.Unmarshal(l.body, &page); err != nil || len(page.Items) != 1 {
		t.Fatalf("list: %d %s", l.status, l.body)
	}
	f := e.do("GET", "/breadcrumbs/"+page.Items[0].ID+"/full", alice, nil)
	var it struct {
		CreatedAt time.Time  `json:"created_at"`
		ExpiresAt *time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(f.body, &it); err != nil || f.status != 200 {
		t.Fatalf("full: %d %s", f.status, f.body)
	}
	if it.ExpiresAt == nil {
		t.Fatalf("a kept response never expires: %s", f.body)
	}
	if d := it.ExpiresAt.Sub(it.CreatedAt); d < server.ResponseTTL-time.Minute || d > server.ResponseTTL+time.Minute {
		t.Fatalf("kept for %v, want %v", d, server.ResponseTTL)
	}
}

// TestResponseRetrieveStreamRefused: retrieving a stored response as a
// stream (the SDK's responses.retrieve(id, stream=True)) is refused in
// OpenAI's shape, naming the parameter, rather than answered with the
// JSON object the client would try to read as events.
func TestResponseRetrieveStreamRefused(t *testing.T) {
	e, _ := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	r := e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"q"}`)
	var first struct{ ID string }
	if err := json.Unmarshal(r.body, &first); err != nil || first.ID == "" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for _, q := range []string{"?stream=true", "?starting_after=3"} {
		g := e.do("GET", "/v1/responses/"+first.ID+q, alice, nil)
		oe := decodeOpenAIError(t, g)
		if g.status != 400 || oe.Error.Param == nil || !strings.HasPrefix(q[1:], *oe.Error.Param) {
			t.Fatalf("retrieve%s: %d %s", q, g.status, g.body)
		}
	}
	if g := e.do("GET", "/v1/responses/"+first.ID+"?stream=false", alice, nil); g.status != 200 {
		t.Fatalf("retrieve with stream=false: %d %s", g.status, g.body)
	}
}

// TestGeminiModelIDWithSlash: a model whose id holds a "/" (an
// OpenRouter-style id on an OpenAI-type upstream) is reached through the
// Gemini paths as Google's SDKs write them, the name unescaped, as it is
// through GET /v1/models/{id}.
func TestGeminiModelIDWithSlash(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, upstreamStream)
	}))
	t.Cleanup(up.Close)
	t.Setenv("CTXKIT_TEST_UPSTREAM_KEY", "sk-upstream")
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(cfgPath, []byte("providers:\n  - name: up\n    type: openai\n    base_url: "+up.URL+"/v1\n    api_key_env: CTXKIT_TEST_UPSTREAM_KEY\n    models: [\"org/model-x\"]\n"), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *server.Options) { o.Gateway = gateway.New(cfg, gateway.Options{}) })
	alice := e.token("acme", "alice", "emitter")
	if r := e.do("GET", "/v1beta/models/org/model-x", alice, nil); r.status != 200 || !strings.Contains(string(r.body), `"name":"models/org/model-x"`) {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	if r := e.do("POST", "/v1beta/models/org/model-x:generateContent", alice, body); r.status != 200 || !strings.Contains(string(r.body), "Hello, world") {
		t.Fatalf("generateContent: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1beta/models/org/model-x:streamGenerateContent?alt=sse", alice, body); r.status != 200 || !strings.HasPrefix(string(r.body), "data: ") {
		t.Fatalf("streamGenerateContent: %d %s", r.status, r.body)
	}
	// Still in Google's shape: an unknown method, an unknown model, no token.
	if r := e.do("POST", "/v1beta/models/org/model-x:countTokens", alice, body); r.status != 404 || !strings.Contains(string(r.body), `"NOT_FOUND"`) {
		t.Fatalf("countTokens: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1beta/models/org/nope", alice, nil); r.status != 404 || !strings.Contains(string(r.body), `"NOT_FOUND"`) {
		t.Fatalf("unknown model: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1beta/models/org/model-x:generateContent", "", body); r.status != 401 || !strings.Contains(string(r.body), `"UNAUTHENTICATED"`) {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
}

// TestImageDetailCarried: an image's detail (its resolution, hence its
// cost) from a Chat Completions or Responses client reaches an OpenAI
// upstream, where it was dropped without a word.
func TestImageDetailCarried(t *testing.T) {
	e, bodies := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	for name, body := range map[string]string{
		"/v1/chat/completions": `{"model":"gpt-x","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]}]}`,
		"/v1/responses":        `{"model":"gpt-x","store":false,"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png","detail":"low"}]}]}`,
	} {
		r := e.do("POST", name, alice, body)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		sent := bodies()
		if last := sent[len(sent)-1]; !strings.Contains(last, `"detail":"low"`) {
			t.Fatalf("%s: the upstream was not sent the image's detail: %s", name, last)
		}
	}
}

// TestWarningsOneHeader: when a response cannot be kept (here: larger
// than a stored response may be), the client learns it in the same
// x-ctxkit-warnings value as the request's other warnings, not in a
// second header line that a client reading one value misses.
func TestWarningsOneHeader(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\""+big+"\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	t.Setenv("CTXKIT_TEST_UPSTREAM_KEY", "sk-upstream")
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(cfgPath, []byte("providers:\n  - name: up\n    type: openai\n    base_url: "+up.URL+"/v1\n    api_key_env: CTXKIT_TEST_UPSTREAM_KEY\n    models: [gpt-x]\n"), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *server.Options) { o.Gateway = gateway.New(cfg, gateway.Options{}) })
	alice := e.token("acme", "alice", "emitter")
	r := e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"q","text":{"verbosity":"low"}}`)
	if r.status != 200 {
		t.Fatalf("%d %.300s", r.status, r.body)
	}
	vals := r.header.Values("X-Ctxkit-Warnings")
	if len(vals) != 1 || !strings.Contains(vals[0], "text:") || !strings.Contains(vals[0], "store: the response was not kept") {
		t.Fatalf("warnings: %q", vals)
	}
}
