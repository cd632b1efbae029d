package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
)

// responsesEnv is a ctxkit server with a gateway in front of a fake
// OpenAI-type upstream that records the bodies it was sent.
func responsesEnv(t *testing.T) (*env, func() []string) {
	t.Helper()
	var (
		mu     sync.Mutex
		bodies []string
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, upstreamStream)
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
	return e, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
}

type openAIError struct {
	Error struct {
		Message string
		Type    string
		Param   *string
		Code    *string
	}
}

func decodeOpenAIError(t *testing.T, r reply) openAIError {
	t.Helper()
	var oe openAIError
	if err := json.Unmarshal(r.body, &oe); err != nil || oe.Error.Message == "" {
		t.Fatalf("not an OpenAI error: %d %s", r.status, r.body)
	}
	return oe
}

// TestResponsesStored: a Responses-dialect response is kept (store is
// the API's default) as a private breadcrumb of the caller: the caller
// reads it by id and continues from it, streamed or not; another owner's
// agent, and another agent of the same owner, get the OpenAI-shaped 404
// an unknown id gets; store: false keeps nothing; DELETE removes it; the
// breadcrumb's view hides the conversation.
func TestResponsesStored(t *testing.T) {
	e, bodies := responsesEnv(t)
	alice := e.token("acme", "alice", "emitter")
	bob := e.token("acme", "bob", "emitter")
	mallory := e.token("globex", "mallory", "curator")
	curator := e.token("acme", "root", "curator")

	r := e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"first question"}`)
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var first struct {
		ID     string
		Object string
		Status string
	}
	json.Unmarshal(r.body, &first)
	if !strings.HasPrefix(first.ID, "resp_") || first.Object != "response" || first.Status != "completed" {
		t.Fatalf("create: %s", r.body)
	}

	if g := e.do("GET", "/v1/responses/"+first.ID, alice, nil); g.status != 200 || !strings.Contains(string(g.body), first.ID) || !strings.Contains(string(g.body), "Hello, world") {
		t.Fatalf("get by its caller: %d %s", g.status, g.body)
	}
	if g := e.do("GET", "/v1/responses/"+first.ID, curator, nil); g.status != 200 {
		t.Fatalf("get by the owner's curator: %d %s", g.status, g.body)
	}
	unknown := e.do("GET", "/v1/responses/resp_0123456789abcdef", alice, nil)
	for name, tok := range map[string]string{"another owner": mallory, "another agent": bob} {
		g := e.do("GET", "/v1/responses/"+first.ID, tok, nil)
		if g.status != 404 {
			t.Fatalf("get by %s: %d %s", name, g.status, g.body)
		}
		oe := decodeOpenAIError(t, g)
		if oe.Error.Type != "not_found_error" && oe.Error.Type != "invalid_request_error" {
			t.Fatalf("get by %s: %s", name, g.body)
		}
		// Nothing tells a foreign id from an unknown one but the id.
		if strings.ReplaceAll(string(g.body), first.ID, "X") != strings.ReplaceAll(string(unknown.body), "resp_0123456789abcdef", "X") {
			t.Fatalf("foreign and unknown ids answered differently:\n%s\n%s", g.body, unknown.body)
		}
		if c := e.do("POST", "/v1/responses", tok, `{"model":"gpt-x","input":"next","previous_response_id":"`+first.ID+`"}`); c.status != 404 {
			t.Fatalf("continue by %s: %d %s", name, c.status, c.body)
		}
	}

	// A continuation sends the conversation so far, then the new input.
	r = e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"second question","previous_response_id":"`+first.ID+`","stream":true}`)
	if r.status != 200 || !strings.Contains(string(r.body), "event: response.completed") {
		t.Fatalf("continue, streamed: %d %s", r.status, r.body)
	}
	sent := bodies()
	last := sent[len(sent)-1]
	q1, a1, q2 := strings.Index(last, "first question"), strings.Index(last, "Hello, world"), strings.Index(last, "second question")
	if q1 < 0 || a1 < q1 || q2 < a1 {
		t.Fatalf("the upstream was not sent the conversation in order: %s", last)
	}
	// The streamed response was kept before its end reached the client:
	// continuing from it at once works.
	var second string
	for _, line := range strings.Split(string(r.body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"response.completed"`) {
			var ev struct{ Response struct{ ID string } }
			json.Unmarshal([]byte(data), &ev)
			second = ev.Response.ID
		}
	}
	if c := e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"third","previous_response_id":"`+second+`"}`); c.status != 200 {
		t.Fatalf("continue from the streamed response: %d %s", c.status, c.body)
	}
	sent = bodies()
	if last := sent[len(sent)-1]; !strings.Contains(last, "first question") || !strings.Contains(last, "second question") || !strings.Contains(last, "third") {
		t.Fatalf("the second continuation lost the conversation: %s", last)
	}

	// Unknown previous_response_id: OpenAI's code and param.
	c := e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"x","previous_response_id":"resp_nope"}`)
	oe := decodeOpenAIError(t, c)
	if c.status != 404 || oe.Error.Code == nil || *oe.Error.Code != "previous_response_not_found" || oe.Error.Param == nil || *oe.Error.Param != "previous_response_id" {
		t.Fatalf("unknown previous_response_id: %d %s", c.status, c.body)
	}

	// store: false keeps nothing.
	r = e.do("POST", "/v1/responses", alice, `{"model":"gpt-x","input":"private","store":false}`)
	var unstored struct{ ID string }
	json.Unmarshal(r.body, &unstored)
	if g := e.do("GET", "/v1/responses/"+unstored.ID, alice, nil); r.status != 200 || g.status != 404 {
		t.Fatalf("store: false: %d, then get %d %s", r.status, g.status, g.body)
	}

	// The breadcrumb: private, schema ctxkit.response, its view without
	// the conversation.
	l := e.do("GET", "/breadcrumbs?schema_name=ctxkit.response", alice, nil)
	var page struct {
		Items []struct {
			ID         string
			Visibility string
		}
	}
	json.Unmarshal(l.body, &page)
	if l.status != 200 || len(page.Items) != 3 {
		t.Fatalf("alice's kept responses: %d %s", l.status, l.body)
	}
	for _, it := range page.Items {
		if it.Visibility != "private" {
			t.Fatalf("a kept response is %s", it.Visibility)
		}
	}
	v := e.do("GET", "/breadcrumbs/"+page.Items[0].ID, alice, nil)
	if v.status != 200 || strings.Contains(string(v.body), "question") || strings.Contains(string(v.body), "Hello, world") || !strings.Contains(string(v.body), `"usage"`) {
		t.Fatalf("the view of a kept response shows its conversation, or not its usage: %d %s", v.status, v.body)
	}
	if l := e.do("GET", "/breadcrumbs?schema_name=ctxkit.response", bob, nil); !strings.Contains(string(l.body), `"items":[]`) {
		t.Fatalf("bob lists alice's responses: %s", l.body)
	}

	// DELETE: by another agent 404; by the caller 200, then gone.
	if d := e.do("DELETE", "/v1/responses/"+first.ID, bob, nil); d.status != 404 {
		t.Fatalf("delete by another agent: %d %s", d.status, d.body)
	}
	d := e.do("DELETE", "/v1/responses/"+first.ID, alice, nil)
	var del struct {
		ID      string
		Deleted bool
	}
	json.Unmarshal(d.body, &del)
	if d.status != 200 || del.ID != first.ID || !del.Deleted {
		t.Fatalf("delete: %d %s", d.status, d.body)
	}
	if g := e.do("GET", "/v1/responses/"+first.ID, alice, nil); g.status != 404 {
		t.Fatalf("get after delete: %d %s", g.status, g.body)
	}
	if d := e.do("DELETE", "/v1/responses/"+first.ID, alice, nil); d.status != 404 {
		t.Fatalf("delete twice: %d %s", d.status, d.body)
	}
}
