package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/metrics"
)

// Every fake upstream answers with the usage of the streams above: 100
// prompt tokens, 80 of them read from the cache (Mistral: no cache), and
// 7 output tokens.
const (
	// claude-sonnet-4-5 (built in): 20 × $3 + 80 × $0.30 + 7 × $15.
	costSonnet = (20*3 + 80*0.3 + 7*15) / 1e6
	// gpt-4o (built in): 20 × $2.50 + 80 × $1.25 + 7 × $10.
	costGPT4o = (20*2.5 + 80*1.25 + 7*10) / 1e6
	// gpt-4o-mini as the configuration prices it: 20 × $10 + 80 × $1 + 7 × $20.
	costMiniConfigured = (20*10 + 80*1 + 7*20) / 1e6
	// gemini-2.5-flash (built in): 20 × $0.30 + 80 × $0.03 + 7 × $2.50.
	costFlash = (20*0.3 + 80*0.03 + 7*2.5) / 1e6
	// gpt-4.1 (built in), from an upstream that streams even when asked
	// for one whole response: 20 × $2 + 80 × $0.50 + 7 × $8.
	costGPT41 = (20*2 + 80*0.5 + 7*8) / 1e6
	// house-model priced by a prefix row without a cache price: the 80
	// cached tokens cost the input price, so 100 × $1 + 7 × $2.
	costHouse = (100*1 + 7*2) / 1e6
)

// pricedGateway starts a gateway whose providers are fake upstreams: an
// Anthropic one (a built-in price, and a model with none), an OpenAI one
// (a built-in price, one the configuration replaces, and a prefix row of
// the configuration) and a Gemini one. The caller is taken from the
// X-Test-Owner and X-Test-Agent headers, as the server takes it from the
// token.
func pricedGateway(t *testing.T) (*httptest.Server, *gateway.Gateway) {
	t.Helper()
	var providers []map[string]any
	for _, p := range []struct {
		name, typ string
		models    []string
	}{
		{"claude", gateway.TypeAnthropic, []string{"claude-sonnet-4-5-20250929", "claude-next"}},
		{"oai", gateway.TypeOpenAI, []string{"gpt-4o-2024-08-06", "gpt-4o-mini", "house-model"}},
		{"gem", gateway.TypeGemini, []string{"gemini-2.5-flash"}},
	} {
		u := newUpstream(t, p.typ)
		env := "CTXKIT_TEST_PRICE_KEY_" + strings.ToUpper(p.name)
		t.Setenv(env, "key-for-"+p.name)
		providers = append(providers, map[string]any{"name": p.name, "type": p.typ, "base_url": u.srv.URL,
			"api_key_env": env, "models": p.models})
	}
	// An upstream that always streams: a client that does not stream
	// gets the stream collected.
	streamer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, openAIStream)
	}))
	t.Cleanup(streamer.Close)
	t.Setenv("CTXKIT_TEST_PRICE_KEY_STREAMER", "key-for-streamer")
	providers = append(providers, map[string]any{"name": "streamer", "type": gateway.TypeOpenAI, "base_url": streamer.URL,
		"api_key_env": "CTXKIT_TEST_PRICE_KEY_STREAMER", "models": []string{"gpt-4.1"}})
	cfg := writeConfig(t, map[string]any{"providers": providers, "prices": []map[string]any{
		{"provider": "oai", "model": "gpt-4o-mini", "input": 10, "output": 20, "cache_read": 1},
		{"provider": "oai", "model": "house-*", "input": 1, "output": 2},
	}})
	c, err := gateway.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(c, gateway.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	mux.HandleFunc("POST /v1/responses", g.Responses)
	mux.HandleFunc("POST /v1beta/models/{call}", g.GenerateContent)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := gateway.WithCaller(r.Context(), gateway.Caller{Owner: r.Header.Get("X-Test-Owner"), Agent: r.Header.Get("X-Test-Agent")})
		mux.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return srv, g
}

func writeConfig(t *testing.T, v any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.json")
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ask sends a request for model in dialect d, streamed or not, as owner
// and agent.
func ask(t *testing.T, srv *httptest.Server, d, model string, stream bool, owner, agent string) (*http.Response, []byte) {
	t.Helper()
	var path, body string
	switch d {
	case "anthropic":
		path = "/v1/messages"
		body = fmt.Sprintf(`{"model":%q,"max_tokens":100,"stream":%t,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	case "openai":
		path = "/v1/chat/completions"
		body = fmt.Sprintf(`{"model":%q,"stream":%t,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, model, stream)
		if !stream {
			body = fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, model)
		}
	case "responses":
		path = "/v1/responses"
		body = fmt.Sprintf(`{"model":%q,"stream":%t,"store":false,"input":"hi"}`, model, stream)
	case "gemini":
		path = "/v1beta/models/" + model + ":generateContent"
		if stream {
			path = "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
		}
		body = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Owner", owner)
	req.Header.Set("X-Test-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", d, model, resp.StatusCode, data)
	}
	return resp, data
}

// costs are the cost fields of an answer, in order: of each event of a
// stream, or of the one body; every "cost_usd" (OpenAI, Responses,
// Anthropic) and "costUsd" (Gemini) at any depth.
func costs(t *testing.T, body []byte, stream bool) []float64 {
	t.Helper()
	docs := [][]byte{body}
	if stream {
		docs = nil
		for _, d := range sseData(body) {
			if d != "[DONE]" {
				docs = append(docs, []byte(d))
			}
		}
	}
	var out []float64
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "cost_usd" || k == "costUsd" {
					n, ok := x.(json.Number)
					if !ok {
						t.Fatalf("%s: %v is not a number", k, x)
					}
					f, err := n.Float64()
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, f)
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, d := range docs {
		dec := json.NewDecoder(strings.NewReader(string(d)))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		walk(v)
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

// TestCostInEveryDialect: a client of every dialect, streamed and not,
// finds the response's cost in its usage (the last usage of a stream),
// and in X-Ctxkit-Cost-Usd when not streamed; a model without a price has
// neither. The configuration's row beats the built-in one; a dated
// snapshot takes its family's price; a prefix row prices what it begins;
// a stream collected for a client that does not stream has its cost too.
func TestCostInEveryDialect(t *testing.T) {
	srv, _ := pricedGateway(t)
	models := []struct {
		model string
		cost  float64 // 0: unpriced
	}{
		{"claude-sonnet-4-5-20250929", costSonnet},
		{"claude-next", 0},
		{"gpt-4o-2024-08-06", costGPT4o},
		{"gpt-4o-mini", costMiniConfigured},
		{"house-model", costHouse},
		{"gemini-2.5-flash", costFlash},
		{"gpt-4.1", costGPT41},
	}
	for _, d := range []string{"anthropic", "openai", "responses", "gemini"} {
		for _, m := range models {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%t", d, m.model, stream), func(t *testing.T) {
					resp, body := ask(t, srv, d, m.model, stream, "o1", "a1")
					got := costs(t, body, stream)
					header := resp.Header.Get(gateway.CostHeader)
					if m.cost == 0 {
						if len(got) != 0 || header != "" {
							t.Fatalf("an unpriced model has a cost: fields %v, header %q\n%s", got, header, body)
						}
						return
					}
					if len(got) == 0 || !near(got[len(got)-1], m.cost) {
						t.Fatalf("cost fields %v, want the last %v\n%s", got, m.cost, body)
					}
					if stream {
						if header != "" {
							t.Fatalf("a stream's header has a cost %q before it is known", header)
						}
						return
					}
					h, err := strconv.ParseFloat(header, 64)
					if err != nil || !near(h, m.cost) {
						t.Fatalf("%s: %q, want %v", gateway.CostHeader, header, m.cost)
					}
					if strings.ContainsAny(header, "eE") {
						t.Fatalf("%s: %q is not written in decimal", gateway.CostHeader, header)
					}
				})
			}
		}
	}
}

// sample is the value of the metric name with labels, from g's
// collectors as /metrics shows them; false when there is none.
func sample(t *testing.T, g *gateway.Gateway, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	reg := metrics.NewRegistry()
	reg.MustRegister(g.Collectors()...)
	for _, f := range reg.Gather() {
		if f.Name != name {
			continue
		}
	next:
		for _, m := range f.Series {
			have := map[string]string{}
			for _, l := range m.Labels {
				have[l.Name] = l.Value
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			return m.Value, true
		}
	}
	return 0, false
}

// TestCostMetrics: tokens by kind and cost are summed per owner, agent,
// provider and model, streamed or not; a model without a price counts as
// unpriced and adds no cost.
func TestCostMetrics(t *testing.T) {
	srv, g := pricedGateway(t)
	ask(t, srv, "openai", "gpt-4o-2024-08-06", false, "acme", "coder")
	ask(t, srv, "anthropic", "gpt-4o-2024-08-06", true, "acme", "coder")
	ask(t, srv, "openai", "gpt-4o-2024-08-06", false, "acme", "reviewer")
	ask(t, srv, "gemini", "claude-next", false, "acme", "coder")
	ask(t, srv, "responses", "claude-next", true, "acme", "coder")

	who := map[string]string{"owner": "acme", "agent": "coder", "provider": "oai", "model": "gpt-4o-2024-08-06"}
	if v, _ := sample(t, g, "ctxkit_gateway_cost_usd_total", who); !near(v, 2*costGPT4o) {
		t.Errorf("cost of acme/coder: %v, want %v", v, 2*costGPT4o)
	}
	for kind, want := range map[string]float64{"input": 2 * 20, "cache_read": 2 * 80, "output": 2 * 7} {
		l := map[string]string{"kind": kind}
		for k, v := range who {
			l[k] = v
		}
		if v, _ := sample(t, g, "ctxkit_gateway_tokens_total", l); v != want {
			t.Errorf("%s tokens of acme/coder: %v, want %v", kind, v, want)
		}
	}
	who["agent"] = "reviewer"
	if v, _ := sample(t, g, "ctxkit_gateway_cost_usd_total", who); !near(v, costGPT4o) {
		t.Errorf("cost of acme/reviewer: %v, want %v", v, costGPT4o)
	}
	if v, _ := sample(t, g, "ctxkit_gateway_unpriced_total", map[string]string{"provider": "claude", "model": "claude-next"}); v != 2 {
		t.Errorf("unpriced responses of claude-next: %v, want 2", v)
	}
	if _, ok := sample(t, g, "ctxkit_gateway_cost_usd_total", map[string]string{"model": "claude-next"}); ok {
		t.Error("an unpriced model has a cost series")
	}
	if v, _ := sample(t, g, "ctxkit_gateway_tokens_total", map[string]string{"model": "claude-next", "kind": "output"}); v != 14 {
		t.Errorf("an unpriced model's output tokens: %v, want 14 (tokens are counted all the same)", v)
	}
}

// TestCostMetricsBoundOwners: past the first 200 owners, every owner's
// series is "other": a flood of owners cannot grow /metrics without end.
func TestCostMetricsBoundOwners(t *testing.T) {
	srv, g := pricedGateway(t)
	const owners = 205
	for i := range owners {
		ask(t, srv, "openai", "gpt-4o-mini", false, fmt.Sprintf("owner-%03d", i), "a")
	}
	if _, ok := sample(t, g, "ctxkit_gateway_cost_usd_total", map[string]string{"owner": "owner-000"}); !ok {
		t.Error("the first owner has no series of its own")
	}
	if _, ok := sample(t, g, "ctxkit_gateway_cost_usd_total", map[string]string{"owner": "owner-204"}); ok {
		t.Error("an owner past the bound has a series of its own")
	}
	if v, _ := sample(t, g, "ctxkit_gateway_cost_usd_total", map[string]string{"owner": "other"}); !near(v, 5*costMiniConfigured) {
		t.Errorf("other: %v, want the cost of the last 5 owners %v", v, 5*costMiniConfigured)
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(g.Collectors()...)
	for _, f := range reg.Gather() {
		if f.Name == "ctxkit_gateway_cost_usd_total" && len(f.Series) != 201 {
			t.Errorf("%d cost series, want 201 (200 owners and other)", len(f.Series))
		}
	}
}

// TestPriceConfigErrors: every bad price row is refused at start, the
// error naming the row and field at fault.
func TestPriceConfigErrors(t *testing.T) {
	t.Setenv("CTXKIT_TEST_PRICE_KEY", "k")
	provider := map[string]any{"name": "oai", "type": gateway.TypeOpenAI, "base_url": "http://127.0.0.1:1",
		"api_key_env": "CTXKIT_TEST_PRICE_KEY", "models": []string{"gpt-4o"}}
	ok := map[string]any{"provider": "oai", "model": "gpt-4o", "input": 1, "output": 2}
	for _, c := range []struct {
		name string
		rows []any
		want string
	}{
		{"negative", []any{ok, map[string]any{"provider": "oai", "model": "m", "input": 1, "output": -2}}, "prices[1].output: -2 is negative"},
		{"negative cache", []any{map[string]any{"provider": "oai", "model": "m", "cache_read": -0.1}}, "prices[0].cache_read: -0.1 is negative"},
		{"unknown provider", []any{map[string]any{"provider": "openai", "model": "gpt-4o", "input": 1}}, `prices[0].provider: "openai" is not the name of a configured provider`},
		{"no provider", []any{map[string]any{"model": "gpt-4o", "input": 1}}, "prices[0].provider: required"},
		{"duplicate", []any{ok, map[string]any{"provider": "oai", "model": "x"}, ok}, `prices[2].model: "gpt-4o" of provider "oai" is already priced by prices[0]`},
		{"no model", []any{map[string]any{"provider": "oai", "input": 1}}, "prices[0].model: required"},
		{"inner star", []any{map[string]any{"provider": "oai", "model": "gpt-*-mini"}}, `prices[0].model: "gpt-*-mini": "*" may only end the name`},
		{"space", []any{map[string]any{"provider": "oai", "model": "gpt 4o"}}, "prices[0].model: \"gpt 4o\" holds a space"},
		{"per token", []any{map[string]any{"provider": "oai", "model": "m", "input": 250000}}, "prices[0].input: 250000 is more than 100000 US dollars per million tokens"},
		{"long context without bound", []any{map[string]any{"provider": "oai", "model": "m", "long_context": map[string]any{"input": 2}}}, "prices[0].long_context.above_tokens: required"},
		{"long context negative", []any{map[string]any{"provider": "oai", "model": "m", "long_context": map[string]any{"above_tokens": 200000, "output": -1}}}, "prices[0].long_context.output: -1 is negative"},
		{"long context unknown field", []any{map[string]any{"provider": "oai", "model": "m", "long_context": map[string]any{"above": 1}}}, `unknown field "above"`},
		{"unknown field", []any{map[string]any{"provider": "oai", "model": "m", "price": 1}}, `unknown field "price"`},
		{"a string", []any{map[string]any{"provider": "oai", "model": "m", "input": "1"}}, `prices[0].input: must be a number, not "1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.LoadConfig(writeConfig(t, map[string]any{"providers": []any{provider}, "prices": c.rows}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}
	if _, err := gateway.LoadConfig(writeConfig(t, map[string]any{"providers": []any{provider}, "prices": []any{ok,
		map[string]any{"provider": "oai", "model": "gpt-4o*", "input": 0, "output": 0},
		map[string]any{"provider": "oai", "model": "big", "input": 1, "output": 2, "long_context": map[string]any{"above_tokens": 128000, "input": 2, "output": 4}}}})); err != nil {
		t.Fatalf("good rows refused: %v", err)
	}
}
