package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// fakeSource is a context source that offers fixed items and records the
// selectors and callers it was asked for.
type fakeSource struct {
	mu      sync.Mutex
	items   []gateway.ContextItem
	warns   []string
	err     error
	asked   []gateway.Selector
	callers []string
}

func (f *fakeSource) Context(ctx context.Context, sel gateway.Selector) ([]gateway.ContextItem, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, sel)
	f.callers = append(f.callers, ctx.Value(callerTag{}).(string))
	return f.items, f.warns, f.err
}

type callerTag struct{}

// contextGateway starts a gateway with an anthropic and an openai
// upstream; a non-nil src answers x-ctxkit-context.
func contextGateway(t *testing.T, src gateway.ContextSource) (*httptest.Server, map[string]*upstream) {
	t.Helper()
	ups := map[string]*upstream{}
	var provs []map[string]any
	for _, typ := range []string{gateway.TypeAnthropic, gateway.TypeOpenAI} {
		u := newUpstream(t, typ)
		ups[typ] = u
		env := "CTXKIT_TEST_KEY_" + strings.ToUpper(typ)
		t.Setenv(env, "key-for-"+typ)
		provs = append(provs, map[string]any{"name": typ + "-up", "type": typ, "base_url": u.srv.URL + "/base",
			"api_key_env": env, "models": []string{typ + "-model"}})
	}
	cfgPath := filepath.Join(t.TempDir(), "gateway.json")
	data, _ := json.Marshal(map[string]any{"providers": provs})
	os.WriteFile(cfgPath, data, 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{})
	if src != nil {
		g.SetContextSource(src)
	}
	caller := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			h(w, r.WithContext(context.WithValue(r.Context(), callerTag{}, r.Header.Get("x-test-caller"))))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", caller(g.Messages))
	mux.HandleFunc("POST /v1/chat/completions", caller(g.ChatCompletions))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, ups
}

func postWith(t *testing.T, url, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}

func lastBody(u *upstream) []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		return nil
	}
	return u.bodies[len(u.bodies)-1]
}

var contextItems = []gateway.ContextItem{
	{ID: "id-1", Title: "Deployment runbook", View: json.RawMessage(`{"steps":["drain","deploy"]}`)},
	{ID: "id-2", Title: "Broken", Omit: "its view fell back"},
	{ID: "id-3", Title: "On-call", View: json.RawMessage(`"Page the on-call engineer."`)},
}

// TestContextAnthropic: an Anthropic-dialect client's request to an
// Anthropic upstream gets the block first in its system prompt, with a
// cache point after it; the ids added and the item left out are
// reported; the source is asked with the parsed selector for the caller
// of the request.
func TestContextAnthropic(t *testing.T) {
	src := &fakeSource{items: contextItems, warns: []string{"x-ctxkit-context: a note"}}
	srv, ups := contextGateway(t, src)
	for _, stream := range []bool{false, true} {
		body := `{"model":"anthropic-model","max_tokens":50,"stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`
		resp, out := postWith(t, srv.URL+"/v1/messages", body, "x-ctxkit-context", "tag:ops; q=deploy; n=4; budget=500", "x-test-caller", "acme/a1")
		if resp.StatusCode != 200 || !strings.Contains(string(out), "Hello") {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, out)
		}
		if got := resp.Header.Get("X-Ctxkit-Context-Ids"); got != "id-1,id-3" {
			t.Fatalf("stream %v: ids %q", stream, got)
		}
		if w := resp.Header.Get("X-Ctxkit-Warnings"); w != "x-ctxkit-context: a note; x-ctxkit-context: id-2 left out: its view fell back" {
			t.Fatalf("stream %v: warnings %q", stream, w)
		}
		var up struct {
			System []struct {
				Type, Text   string
				CacheControl json.RawMessage `json:"cache_control"`
			}
		}
		json.Unmarshal(lastBody(ups[gateway.TypeAnthropic]), &up)
		want := "<ctxkit-context>\n" +
			"<breadcrumb id=\"id-1\" title=\"Deployment runbook\">\n{\"steps\":[\"drain\",\"deploy\"]}\n</breadcrumb>\n" +
			"<breadcrumb id=\"id-3\" title=\"On-call\">\nPage the on-call engineer.\n</breadcrumb>\n" +
			"</ctxkit-context>"
		if len(up.System) != 2 || up.System[0].Text != want || string(up.System[0].CacheControl) != `{"type":"ephemeral"}` ||
			up.System[1].Text != "be brief" || up.System[1].CacheControl != nil {
			t.Fatalf("stream %v: upstream system %+v", stream, up.System)
		}
	}
	if len(src.asked) != 2 || src.callers[0] != "acme/a1" {
		t.Fatalf("asked %+v for %v", src.asked, src.callers)
	}
	if sel := src.asked[0]; strings.Join(sel.Tags, ",") != "ops" || sel.Query != "deploy" || sel.Max != 4 || sel.Budget != 500 {
		t.Fatalf("selector %+v", sel)
	}
}

// TestContextOpenAI: to an upstream that takes no cache points the block
// goes as the start of the system message, with no cache_control, and a
// request without a system prompt gets one.
func TestContextOpenAI(t *testing.T) {
	srv, ups := contextGateway(t, &fakeSource{items: contextItems[:1]})
	resp, out := postWith(t, srv.URL+"/v1/chat/completions", `{"model":"openai-model","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`,
		"x-ctxkit-context", "tag:ops")
	if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Context-Ids") != "id-1" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, out)
	}
	body := string(lastBody(ups[gateway.TypeOpenAI]))
	if strings.Contains(body, "cache_control") {
		t.Fatalf("a cache point went to an OpenAI upstream: %s", body)
	}
	var up struct {
		Messages []struct{ Role, Content string }
	}
	json.Unmarshal([]byte(body), &up)
	if len(up.Messages) != 2 || up.Messages[0].Role != "system" || !strings.HasPrefix(up.Messages[0].Content, "<ctxkit-context>\n<breadcrumb id=\"id-1\"") ||
		!strings.HasSuffix(up.Messages[0].Content, "</ctxkit-context>\nbe brief") {
		t.Fatalf("upstream messages %+v", up.Messages)
	}
	// No system prompt: the block is the system prompt.
	postWith(t, srv.URL+"/v1/chat/completions", `{"model":"openai-model","messages":[{"role":"user","content":"hi"}]}`, "x-ctxkit-context", "tag:ops")
	json.Unmarshal(lastBody(ups[gateway.TypeOpenAI]), &up)
	if len(up.Messages) != 2 || up.Messages[0].Role != "system" || !strings.HasSuffix(up.Messages[0].Content, "</ctxkit-context>") {
		t.Fatalf("upstream messages %+v", up.Messages)
	}
}

// TestContextNoHeader: without the header the source is not asked and
// the upstream gets byte for byte what a gateway without a source sends.
func TestContextNoHeader(t *testing.T) {
	src := &fakeSource{items: contextItems}
	with, withUps := contextGateway(t, src)
	without, withoutUps := contextGateway(t, nil)
	for _, c := range []struct{ path, typ, body string }{
		{"/v1/messages", gateway.TypeAnthropic, `{"model":"anthropic-model","max_tokens":50,"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", gateway.TypeOpenAI, `{"model":"openai-model","stream":true,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`},
	} {
		r1, _ := postWith(t, with.URL+c.path, c.body)
		r2, _ := postWith(t, without.URL+c.path, c.body)
		b1, b2 := lastBody(withUps[c.typ]), lastBody(withoutUps[c.typ])
		if r1.StatusCode != 200 || r2.StatusCode != 200 || !bytes.Equal(b1, b2) || len(b1) == 0 {
			t.Fatalf("%s: %d %d\n%s\n%s", c.path, r1.StatusCode, r2.StatusCode, b1, b2)
		}
		if r1.Header.Get("X-Ctxkit-Context-Ids") != "" || r1.Header.Get("X-Ctxkit-Warnings") != "" {
			t.Fatalf("%s: headers %v", c.path, r1.Header)
		}
	}
	if len(src.asked) != 0 {
		t.Fatalf("the source was asked without the header: %+v", src.asked)
	}
}

// TestContextRefused: a bad selector, a header sent twice, a gateway with
// no source, and a source's failures are answered in the client's
// dialect, naming the header, before anything goes upstream.
func TestContextRefused(t *testing.T) {
	src := &fakeSource{items: contextItems}
	srv, ups := contextGateway(t, src)
	bare, _ := contextGateway(t, nil)
	anth := `{"model":"anthropic-model","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	oai := `{"model":"openai-model","messages":[{"role":"user","content":"hi"}]}`
	type errReply struct {
		Type  string
		Error struct{ Type, Message, Param string }
	}
	check := func(name string, resp *http.Response, out []byte, status int, typ, msg string) {
		t.Helper()
		var e errReply
		json.Unmarshal(out, &e)
		if resp.StatusCode != status || e.Error.Type != typ || !strings.Contains(e.Error.Message, msg) {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, out)
		}
	}
	for _, c := range []struct{ name, header, msg string }{
		{"empty", "", "x-ctxkit-context: empty"},
		{"unknown part", "tag:a; limit=3", `x-ctxkit-context: "limit": not a part`},
		{"bad n", "q=x; n=50", `x-ctxkit-context: n: "50" is not a whole number from 1 to 20`},
		{"bad budget", "q=x; budget=lots", `x-ctxkit-context: budget: "lots"`},
	} {
		resp, out := postWith(t, srv.URL+"/v1/messages", anth, "x-ctxkit-context", c.header)
		check(c.name+"/anthropic", resp, out, 400, "invalid_request_error", c.msg)
		resp, out = postWith(t, srv.URL+"/v1/chat/completions", oai, "x-ctxkit-context", c.header)
		check(c.name+"/openai", resp, out, 400, "invalid_request_error", c.msg)
		var e errReply
		json.Unmarshal(out, &e)
		if e.Error.Param != "x-ctxkit-context" {
			t.Fatalf("%s: param %q", c.name, e.Error.Param)
		}
	}
	resp, out := postWith(t, srv.URL+"/v1/messages", anth, "x-ctxkit-context", "tag:a", "x-ctxkit-context", "tag:b")
	check("twice", resp, out, 400, "invalid_request_error", "x-ctxkit-context: sent 2 times")
	resp, out = postWith(t, bare.URL+"/v1/messages", anth, "x-ctxkit-context", "tag:a")
	check("no source", resp, out, 400, "invalid_request_error", "x-ctxkit-context: this gateway has no store")

	src.err = &gateway.Error{Code: gateway.CodeInvalidRequest, Status: 400, Path: "x-ctxkit-context", Msg: "x-ctxkit-context: q: bad query"}
	resp, out = postWith(t, srv.URL+"/v1/messages", anth, "x-ctxkit-context", "q=x")
	check("source's *Error", resp, out, 400, "invalid_request_error", "x-ctxkit-context: q: bad query")
	src.err = errors.New("disk on fire at /var/lib/secret")
	resp, out = postWith(t, srv.URL+"/v1/messages", anth, "x-ctxkit-context", "q=x")
	check("source's failure", resp, out, 500, "api_error", "x-ctxkit-context: the context could not be read from the store")
	if strings.Contains(string(out), "disk on fire") {
		t.Fatalf("the source's error reached the client: %s", out)
	}
	for typ, u := range ups {
		if lastBody(u) != nil {
			t.Fatalf("%s upstream was called", typ)
		}
	}
}

// TestContextNothingAdded: when nothing fits, the request goes as it
// came, without the ids header, and a warning says so.
func TestContextNothingAdded(t *testing.T) {
	srv, ups := contextGateway(t, &fakeSource{items: contextItems[1:2]})
	resp, out := postWith(t, srv.URL+"/v1/messages", `{"model":"anthropic-model","max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`,
		"x-ctxkit-context", "tag:ops")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if _, ok := resp.Header["X-Ctxkit-Context-Ids"]; ok {
		t.Fatalf("ids header %q with nothing added", resp.Header.Get("X-Ctxkit-Context-Ids"))
	}
	if w := resp.Header.Get("X-Ctxkit-Warnings"); !strings.Contains(w, "id-2 left out: its view fell back") || !strings.Contains(w, "no breadcrumb the caller may read was added") {
		t.Fatalf("warnings %q", w)
	}
	if b := string(lastBody(ups[gateway.TypeAnthropic])); strings.Contains(b, "ctxkit-context") || !strings.Contains(b, `"system":"be brief"`) {
		t.Fatalf("upstream got %s", b)
	}
}

// countGateway starts a gateway that serves POST /v1/messages and
// /v1/messages/count_tokens with src as its context source, in front of
// an Anthropic upstream that answers both (a count of 42) and records the
// body of each by path, and an OpenAI one (counted offline).
func countGateway(t *testing.T, src gateway.ContextSource) (*httptest.Server, func(path string) []byte) {
	t.Helper()
	var mu sync.Mutex
	bodies := map[string][]byte{}
	anth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		mu.Lock()
		bodies[r.URL.Path] = b.Bytes()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			io.WriteString(w, `{"input_tokens":42}`)
			return
		}
		io.WriteString(w, wholes[gateway.TypeAnthropic])
	}))
	t.Cleanup(anth.Close)
	oai := newUpstream(t, gateway.TypeOpenAI)
	t.Setenv("CTXKIT_TEST_KEY_ANTHROPIC", "key-for-anthropic")
	t.Setenv("CTXKIT_TEST_KEY_OPENAI", "key-for-openai")
	cfgPath := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(cfgPath, []byte(`{"providers":[
		{"name":"anthropic-up","type":"anthropic","base_url":"`+anth.URL+`","api_key_env":"CTXKIT_TEST_KEY_ANTHROPIC","models":["anthropic-model"]},
		{"name":"openai-up","type":"openai","base_url":"`+oai.srv.URL+`","api_key_env":"CTXKIT_TEST_KEY_OPENAI","models":["openai-model"]}]}`), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{})
	if src != nil {
		g.SetContextSource(src)
	}
	caller := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			h(w, r.WithContext(context.WithValue(r.Context(), callerTag{}, r.Header.Get("x-test-caller"))))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", caller(g.Messages))
	mux.HandleFunc("POST /v1/messages/count_tokens", caller(g.CountTokens))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func(path string) []byte {
		mu.Lock()
		defer mu.Unlock()
		return bodies[path]
	}
}

// TestContextCountTokens: POST /v1/messages/count_tokens with
// x-ctxkit-context counts the request with the context block
// POST /v1/messages would add to it — the same selector, budget and
// caller, the same block and cache point — and names the breadcrumbs
// counted in X-Ctxkit-Context-Ids (what was left out in the warnings):
// an Anthropic upstream counts the block itself, the offline estimate
// grows by the block's tokens exactly. A bad selector is refused in
// Anthropic's shape before anything is counted.
func TestContextCountTokens(t *testing.T) {
	src := &fakeSource{items: contextItems}
	srv, sent := countGateway(t, src)
	const sel = "tag:ops; n=4; budget=500"
	anth := `{"model":"anthropic-model","max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`
	resp, out := postWith(t, srv.URL+"/v1/messages/count_tokens", anth, "x-ctxkit-context", sel, "x-test-caller", "acme/a1")
	if resp.StatusCode != 200 || strings.TrimSpace(string(out)) != `{"input_tokens":42}` || resp.Header.Get("X-Ctxkit-Token-Count") != "exact" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, out)
	}
	if got := resp.Header.Get("X-Ctxkit-Context-Ids"); got != "id-1,id-3" {
		t.Fatalf("ids %q", got)
	}
	if w := resp.Header.Get("X-Ctxkit-Warnings"); !strings.Contains(w, "id-2 left out: its view fell back") {
		t.Fatalf("warnings %q", w)
	}
	type system struct {
		System json.RawMessage `json:"system"`
	}
	var counted, asked system
	json.Unmarshal(sent("/v1/messages/count_tokens"), &counted)
	want := "<ctxkit-context>\n" +
		"<breadcrumb id=\"id-1\" title=\"Deployment runbook\">\n{\"steps\":[\"drain\",\"deploy\"]}\n</breadcrumb>\n" +
		"<breadcrumb id=\"id-3\" title=\"On-call\">\nPage the on-call engineer.\n</breadcrumb>\n" +
		"</ctxkit-context>"
	var blocks []struct {
		Text         string
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(counted.System, &blocks); len(blocks) != 2 || blocks[0].Text != want || string(blocks[0].CacheControl) != `{"type":"ephemeral"}` || blocks[1].Text != "be brief" {
		t.Fatalf("counted system %s", counted.System)
	}
	// The request itself gets the same system prompt.
	if resp, out := postWith(t, srv.URL+"/v1/messages", anth, "x-ctxkit-context", sel, "x-test-caller", "acme/a1"); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	json.Unmarshal(sent("/v1/messages"), &asked)
	var c, a any
	json.Unmarshal(counted.System, &c)
	json.Unmarshal(asked.System, &a)
	if !reflect.DeepEqual(c, a) {
		t.Fatalf("counted %s\nsent    %s", counted.System, asked.System)
	}
	if len(src.asked) != 2 || src.asked[0].Budget != 500 || src.asked[0].Max != 4 || src.callers[0] != "acme/a1" {
		t.Fatalf("asked %+v for %v", src.asked, src.callers)
	}

	// Offline: the estimate grows by the block's tokens.
	oai := `{"model":"openai-model","system":"be brief","messages":[{"role":"user","content":"hi"}]}`
	count := func(headers ...string) (int, *http.Response) {
		t.Helper()
		resp, out := postWith(t, srv.URL+"/v1/messages/count_tokens", oai, headers...)
		var v struct {
			InputTokens int `json:"input_tokens"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(out, &v) != nil || resp.Header.Get("X-Ctxkit-Token-Count") != "estimate" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, out)
		}
		return v.InputTokens, resp
	}
	plain, resp := count()
	if resp.Header.Get("X-Ctxkit-Context-Ids") != "" {
		t.Fatalf("ids without the header: %v", resp.Header)
	}
	with, resp := count("x-ctxkit-context", sel)
	if n := countTokens(t, want); with-plain != n || resp.Header.Get("X-Ctxkit-Context-Ids") != "id-1,id-3" {
		t.Fatalf("with the context %d, without %d: the block is %d tokens (%v)", with, plain, n, resp.Header)
	}
	// A smaller budget counts a smaller block, and names what it left out.
	small, resp := count("x-ctxkit-context", "tag:ops; budget=40")
	if resp.Header.Get("X-Ctxkit-Context-Ids") != "id-1" || small >= with || !strings.Contains(resp.Header.Get("X-Ctxkit-Warnings"), "id-3 left out") {
		t.Fatalf("budget 40: %d tokens, %v", small, resp.Header)
	}

	resp, out = postWith(t, srv.URL+"/v1/messages/count_tokens", anth, "x-ctxkit-context", "q=x; n=50")
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	json.Unmarshal(out, &e)
	if resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "x-ctxkit-context: n:") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
}
