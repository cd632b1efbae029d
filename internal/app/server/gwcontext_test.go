package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/ctxkit/ctxkit/store"
)

// countingStore counts the store's searches and lists.
type countingStore struct {
	store.Store
	searches, lists atomic.Int64
}

func (s *countingStore) Search(ctx context.Context, a store.Actor, q store.SearchQuery) (store.SearchResult, error) {
	s.searches.Add(1)
	return s.Store.Search(ctx, a, q)
}

func (s *countingStore) List(ctx context.Context, a store.Actor, q store.Query) (store.Page, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, a, q)
}

// recordingUpstream is a fake provider on loopback answering every
// request with body, recording the request bodies it got.
type recordingUpstream struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func (u *recordingUpstream) last(t *testing.T) string {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		t.Fatal("the upstream got no request")
	}
	return string(u.bodies[len(u.bodies)-1])
}

func newRecordingUpstream(t testing.TB, contentType, body string) *recordingUpstream {
	u := &recordingUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, b)
		u.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

const anthropicWhole = `{"id":"msg_up","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello, world"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":7}}`

// contextEnv is a server whose gateway routes claude-x to an Anthropic
// upstream and gpt-x to an OpenAI one, on a store that counts searches
// and lists.
func contextEnv(t *testing.T) (e *env, db *countingStore, anth, oai *recordingUpstream) {
	t.Helper()
	anth = newRecordingUpstream(t, "application/json", anthropicWhole)
	oai = newRecordingUpstream(t, "text/event-stream", upstreamStream)
	t.Setenv("CTXKIT_TEST_ANTHROPIC_KEY", "sk-ant")
	t.Setenv("CTXKIT_TEST_OPENAI_KEY", "sk-oai")
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(cfgPath, []byte("providers:\n"+
		"  - name: anth\n    type: anthropic\n    base_url: "+anth.srv.URL+"\n    api_key_env: CTXKIT_TEST_ANTHROPIC_KEY\n    models: [claude-x]\n"+
		"  - name: oai\n    type: openai\n    base_url: "+oai.srv.URL+"/v1\n    api_key_env: CTXKIT_TEST_OPENAI_KEY\n    models: [gpt-x]\n"), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	db = &countingStore{Store: newStore(t)}
	e = newEnvOn(t, db, nil, func(o *server.Options) { o.Gateway = gateway.New(cfg, gateway.Options{}) })
	return e, db, anth, oai
}

// contextSystem is the system block of an Anthropic upstream request:
// its text and cache_control.
func contextSystem(t *testing.T, body string) (text string, cache string, rest int) {
	t.Helper()
	var up struct {
		System []struct {
			Text         string
			CacheControl json.RawMessage `json:"cache_control"`
		}
	}
	if err := json.Unmarshal([]byte(body), &up); err != nil || len(up.System) == 0 {
		t.Fatalf("upstream body without system blocks: %s", body)
	}
	return up.System[0].Text, string(up.System[0].CacheControl), len(up.System) - 1
}

// TestGatewayContextReadable: the context holds the views of the
// breadcrumbs the caller may read (its own private ones included), never
// another agent's private breadcrumb nor another owner's, even when they
// match; never a field the view hides; a view that fell back is left out
// and named in the warnings header; the ids are reported in the block's
// order; an Anthropic upstream gets a cache point after the block.
func TestGatewayContextReadable(t *testing.T) {
	e, db, anth, _ := contextEnv(t)
	a1 := e.token("acme", "a1", server.RoleEmitter)
	a2 := e.token("acme", "a2", server.RoleEmitter)
	other := e.token("globex", "g1", server.RoleEmitter)
	runbook := e.create(a1, map[string]any{"title": "Deployment runbook", "tags": []string{"project-x"},
		"context":   map[string]any{"steps": "drain then deploy", "password": "hunter2"},
		"llm_hints": map[string]any{"exclude": []string{"password"}}})
	own := e.create(a1, map[string]any{"title": "My deployment notes", "tags": []string{"project-x"}, "visibility": "private",
		"context": map[string]any{"note": "mine alone"}})
	hidden := e.create(a2, map[string]any{"title": "a2 deployment secrets", "tags": []string{"project-x"}, "visibility": "private",
		"context": map[string]any{"note": "a2-private-context"}})
	foreign := e.create(other, map[string]any{"title": "globex deployment", "tags": []string{"project-x"},
		"context": map[string]any{"note": "globex-context"}})
	broken := e.create(a2, map[string]any{"title": "Broken deployment view", "tags": []string{"project-x"},
		"context":   map[string]any{"note": "broken-context"},
		"llm_hints": map[string]any{"transform": map[string]any{"x": map[string]any{"type": "jq", "query": `error("boom")`}}}})

	body := `{"model":"claude-x","max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`
	for _, sel := range []string{"tag:project-x", "q=deployment", "tag:project-x; q=deployment; n=10"} {
		r := e.do("POST", "/v1/messages", a1, body, "x-ctxkit-context", sel)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", sel, r.status, r.body)
		}
		ids := strings.Split(r.header.Get("X-Ctxkit-Context-Ids"), ",")
		if len(ids) != 2 || !(ids[0] == own && ids[1] == runbook || ids[0] == runbook && ids[1] == own) {
			t.Fatalf("%s: ids %v, want %s and %s", sel, ids, runbook, own)
		}
		if w := r.header.Get("X-Ctxkit-Warnings"); !strings.Contains(w, broken+" left out: its view fell back") {
			t.Fatalf("%s: the fallen-back view is not named: %q", sel, w)
		}
		up := anth.last(t)
		text, cache, rest := contextSystem(t, up)
		if cache != `{"type":"ephemeral"}` || rest != 1 || !strings.Contains(up, `"text":"be brief"`) {
			t.Fatalf("%s: cache point %q, %d more system blocks: %s", sel, cache, rest, up)
		}
		if strings.Index(text, `id="`+ids[0]+`"`) > strings.Index(text, `id="`+ids[1]+`"`) {
			t.Fatalf("%s: ids %v not in the block's order:\n%s", sel, ids, text)
		}
		if !strings.Contains(text, `"steps":"drain then deploy"`) || !strings.Contains(text, "mine alone") {
			t.Fatalf("%s: views missing:\n%s", sel, text)
		}
		for _, leak := range []string{"hunter2", "a2-private-context", "globex-context", "broken-context", hidden, foreign} {
			if strings.Contains(up, leak) {
				t.Fatalf("%s: %q reached the upstream:\n%s", sel, leak, up)
			}
		}
	}
	// Another agent of the owner reads what it may: its own private one
	// and the team's, not a1's private one.
	r := e.do("POST", "/v1/messages", a2, body, "x-ctxkit-context", "tag:project-x")
	if got := r.header.Get("X-Ctxkit-Context-Ids"); r.status != 200 || got != hidden+","+runbook {
		t.Fatalf("a2: %d ids %q, want %s,%s", r.status, got, hidden, runbook)
	}
	// Another owner sees only its own.
	r = e.do("POST", "/v1/messages", other, body, "x-ctxkit-context", "q=deployment")
	if got := r.header.Get("X-Ctxkit-Context-Ids"); r.status != 200 || got != foreign {
		t.Fatalf("globex: %d ids %q, want %s", r.status, got, foreign)
	}
	if db.searches.Load() == 0 || db.lists.Load() == 0 {
		t.Fatal("the context was not read through the store's search and list")
	}
}

// TestGatewayContextBudget: the block stays within the token budget and
// n items; items left out for the budget are named.
func TestGatewayContextBudget(t *testing.T) {
	e, _, anth, _ := contextEnv(t)
	tok := e.token("acme", "a1", server.RoleEmitter)
	var ids []string
	for i := range 6 {
		ids = append(ids, e.create(tok, map[string]any{"title": "big " + string(rune('a'+i)), "tags": []string{"big"},
			"context": map[string]any{"text": strings.Repeat("lorem ipsum dolor sit amet ", 40+i)}}))
	}
	codec, err := tokencount.Codec("")
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		sel      string
		budget   int
		max, min int
	}{
		{"tag:big; budget=1000", 1000, 5, 3},
		{"tag:big; budget=500", 500, 5, 1},
		{"tag:big; n=2; budget=16000", 16000, 2, 2},
		{"tag:big; n=20; budget=16000", 16000, 6, 6},
	} {
		r := e.do("POST", "/v1/messages", tok, body, "x-ctxkit-context", c.sel)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.sel, r.status, r.body)
		}
		got := strings.Split(r.header.Get("X-Ctxkit-Context-Ids"), ",")
		text, _, _ := contextSystem(t, anth.last(t))
		n, _ := codec.Count(text)
		if n > c.budget || len(got) > c.max || len(got) < c.min {
			t.Fatalf("%s: %d items, %d tokens:\n%s", c.sel, len(got), n, text)
		}
		// Newest first, as a list of the tag, and as in the block.
		next, at := len(ids)-1, -1
		for _, id := range got {
			for next >= 0 && ids[next] != id {
				next--
			}
			if next < 0 {
				t.Fatalf("%s: ids %v not newest first", c.sel, got)
			}
			next--
			i := strings.Index(text, `<breadcrumb id="`+id+`"`)
			if i <= at {
				t.Fatalf("%s: %s reported, not in the block in that order", c.sel, id)
			}
			at = i
		}
		t.Logf("%s: %d items, %d tokens", c.sel, len(got), n)
		if len(got) < c.max && !strings.Contains(r.header.Get("X-Ctxkit-Warnings"), "left of the budget") {
			t.Fatalf("%s: items left out for the budget are not named: %q", c.sel, r.header.Get("X-Ctxkit-Warnings"))
		}
	}
}

// TestGatewayContextNoCacheWhereUnsupported: an OpenAI upstream gets the
// block in its system message, and no cache point.
func TestGatewayContextNoCacheWhereUnsupported(t *testing.T) {
	e, _, _, oai := contextEnv(t)
	tok := e.token("acme", "a1", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "Runbook", "tags": []string{"ops"}, "context": map[string]any{"step": "drain"}})
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		r := e.do("POST", path, tok, `{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, "x-ctxkit-context", "tag:ops")
		if r.status != 200 || r.header.Get("X-Ctxkit-Context-Ids") != id {
			t.Fatalf("%s: %d %v %s", path, r.status, r.header, r.body)
		}
		up := oai.last(t)
		if !strings.Contains(up, `{"role":"system","content":"\u003cctxkit-context\u003e\n\u003cbreadcrumb id=\"`+id+`\"`) ||
			strings.Contains(up, "cache_control") || strings.Contains(up, "ephemeral") {
			t.Fatalf("%s: upstream got %s", path, up)
		}
	}
}

// TestGatewayContextAbsent: without the header the store is not asked
// and the upstream gets the request as it came.
func TestGatewayContextAbsent(t *testing.T) {
	e, db, anth, _ := contextEnv(t)
	tok := e.token("acme", "a1", server.RoleEmitter)
	e.create(tok, map[string]any{"title": "Runbook", "tags": []string{"ops"}, "context": map[string]any{"step": "drain"}})
	searches, lists := db.searches.Load(), db.lists.Load()
	r := e.do("POST", "/v1/messages", tok, `{"model":"claude-x","max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 200 || r.header.Get("X-Ctxkit-Context-Ids") != "" {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	if db.searches.Load() != searches || db.lists.Load() != lists {
		t.Fatal("the store was searched or listed for a request without x-ctxkit-context")
	}
	if up := anth.last(t); up != `{"model":"claude-x","max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"hi"}]}` {
		t.Fatalf("upstream got %s", up)
	}
}

// TestGatewayContextBadSelector: a selector the header or the store's
// query syntax refuses is a 400 in the client's dialect naming the
// header and the part; nothing goes upstream.
func TestGatewayContextBadSelector(t *testing.T) {
	e, _, anth, oai := contextEnv(t)
	tok := e.token("acme", "a1", server.RoleEmitter)
	for _, c := range []struct{ sel, msg string }{
		{"tag:ops; n=0", `x-ctxkit-context: n: "0" is not a whole number from 1 to 20`},
		{"budget=100", "x-ctxkit-context: name tags (tag:NAME) or a query (q=TEXT)"},
		{"q=-draft", "x-ctxkit-context: q: only excluded words"},
		{"q=" + strings.Repeat("x", 600), "x-ctxkit-context: q: 600 bytes; the limit is 512"},
	} {
		for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
			r := e.do("POST", path, tok, `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, "x-ctxkit-context", c.sel)
			var reply struct {
				Error struct{ Type, Message, Param string }
			}
			json.Unmarshal(r.body, &reply)
			if r.status != 400 || reply.Error.Type != "invalid_request_error" || !strings.Contains(reply.Error.Message, c.msg) {
				t.Fatalf("%s %s: %d %s", path, c.sel, r.status, r.body)
			}
			if path == "/v1/chat/completions" && reply.Error.Param != "x-ctxkit-context" {
				t.Fatalf("%s %s: param %q", path, c.sel, reply.Error.Param)
			}
		}
	}
	for _, u := range []*recordingUpstream{anth, oai} {
		if len(u.bodies) != 0 {
			t.Fatalf("an upstream was called: %s", u.bodies[0])
		}
	}
}

// BenchmarkGatewayContext measures a request through the gateway without
// the header, with a tag selector (list and views) and with a query
// (search and views), five items of about 100 tokens each added.
func BenchmarkGatewayContext(b *testing.B) {
	anth := newRecordingUpstream(b, "application/json", anthropicWhole)
	b.Setenv("CTXKIT_TEST_ANTHROPIC_KEY", "sk-ant")
	cfgPath := filepath.Join(b.TempDir(), "gateway.yaml")
	os.WriteFile(cfgPath, []byte("providers:\n  - name: anth\n    type: anthropic\n    base_url: "+anth.srv.URL+"\n    api_key_env: CTXKIT_TEST_ANTHROPIC_KEY\n    models: [claude-x]\n"), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, func(o *server.Options) { o.Gateway = gateway.New(cfg, gateway.Options{}) })
	tok := e.token("acme", "a1", server.RoleEmitter)
	for i := range 10 {
		e.create(tok, map[string]any{"title": "runbook " + string(rune('a'+i)), "tags": []string{"ops"},
			"context": map[string]any{"text": strings.Repeat("drain the node then deploy ", 20)}})
	}
	body := `{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct{ name, sel string }{{"none", ""}, {"tag", "tag:ops"}, {"query", "q=runbook"}} {
		b.Run(c.name, func(b *testing.B) {
			var hs []string
			if c.sel != "" {
				hs = []string{"x-ctxkit-context", c.sel}
			}
			for b.Loop() {
				if r := e.do("POST", "/v1/messages", tok, body, hs...); r.status != 200 {
					b.Fatalf("%d %s", r.status, r.body)
				}
			}
		})
	}
}
