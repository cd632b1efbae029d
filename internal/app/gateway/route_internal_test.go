package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// TestExchangeAttempts: the request's Exchange holds every attempt, in
// order — a skipped target (no key), a failed one with its status and
// class, the one that served — with the caller, dialect and route.
func TestExchangeAttempts(t *testing.T) {
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer fine.Close()
	c := &Config{
		Providers: []Provider{
			{Name: "rest", Type: TypeOpenAI, BaseURL: busy.URL, Models: []string{"r"}, Keys: []Key{{ID: "only", Env: "K"}}},
			{Name: "busy", Type: TypeOpenAI, BaseURL: busy.URL, Models: []string{"b"}, APIKeyEnv: "K"},
			{Name: "fine", Type: TypeOpenAI, BaseURL: fine.URL, Models: []string{"f"}, APIKeyEnv: "K"},
		},
		Routes: []Route{{Model: "smart", Targets: []Target{{Provider: "rest", Model: "r-1"}, {Provider: "busy", Model: "b-1"}, {Provider: "fine", Model: "f-1"}}}},
	}
	if err := c.check(func(string) string { return "key-0123456789" }); err != nil {
		t.Fatal(err)
	}
	g := New(c, Options{})
	rest := &c.Providers[0]
	rest.keys.rest(rest.keys.keys[0], maxKeyCooldown, g.opts.Now())
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil).WithContext(WithCaller(context.Background(), Caller{Owner: "o", Agent: "a"}))
	w := httptest.NewRecorder()
	rt := g.routes["smart"]
	x := g.exchange(r, OpenAI, rt, false)
	a, err := g.attempt(r.Context(), w, r, OpenAI, rt, chat.Request{Model: "smart", MaxTokens: 10, Messages: []chat.Message{{Role: "user", Content: chat.Str("hi")}}}, false, x)
	if err != nil {
		t.Fatal(err)
	}
	a.resp.Body.Close()
	a.end()
	if x.Caller != (Caller{Owner: "o", Agent: "a"}) || x.Dialect != "openai" || x.Route != "smart" || x.Stream || x.Started.IsZero() {
		t.Errorf("exchange %+v", x)
	}
	want := []Attempt{
		{Provider: "rest", Model: "r-1", ErrorClass: "no_key"},
		{Provider: "busy", Model: "b-1", KeyID: "key1", Status: 503, ErrorClass: "server_error"},
		{Provider: "fine", Model: "f-1", KeyID: "key1", Status: 200},
	}
	if len(x.Attempts) != len(want) {
		t.Fatalf("attempts %+v", x.Attempts)
	}
	for i, at := range x.Attempts {
		if i > 0 && at.Latency <= 0 {
			t.Errorf("attempt %d has no latency", i)
		}
		at.Latency = 0
		if at != want[i] {
			t.Errorf("attempt %d: %+v, want %+v", i, at, want[i])
		}
	}
	if w.Header().Get(UpstreamHeader) != "fine/f-1" || w.Header().Get(AttemptsHeader) != "2" {
		t.Errorf("headers %v", w.Header())
	}
}
