package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/providers"
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

// TestOpeningFailure: the first bytes of each provider's stream are read
// as a failure worth another target when they open with an overload or a
// rate limit (after nothing but usage), and as nothing otherwise: a
// stream that opens with content, a failure of the request itself, or
// too few bytes to tell.
func TestOpeningFailure(t *testing.T) {
	for _, c := range []struct {
		typ, head string
		want      string // the failure's type; "": none
	}{
		{"anthropic", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "overloaded_error"},
		{"anthropic", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "overloaded_error"},
		{"anthropic", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n", "rate_limit_error"},
		{"anthropic", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n", ""},
		{"anthropic", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"an error\"}}\n\n", ""},
		{"anthropic", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overl", ""},
		{"openai", "data: {\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}\n\n", "server_error"},
		{"openai", "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"error\"}}]}\n\n", ""},
	} {
		row, ok := providers.Lookup(c.typ)
		if !ok {
			t.Fatalf("no provider type %s", c.typ)
		}
		p := &Provider{Name: c.typ, row: row}
		got := ""
		if se := openingFailure(p, []byte(c.head)); se != nil {
			got = se.Type
		}
		if got != c.want {
			t.Errorf("%s %q: %q, want %q", c.typ, c.head, got, c.want)
		}
	}
}
