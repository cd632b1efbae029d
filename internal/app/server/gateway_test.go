package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/openloop"
)

const upstreamStream = "" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\", world\"},\"finish_reason\":\"stop\"}]}\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,\"total_tokens\":107}}\n\n" +
	"data: [DONE]\n\n"

// gatewayEnv is a ctxkit server with a gateway in front of a fake
// OpenAI-type upstream, which records the headers it was sent.
func gatewayEnv(t testing.TB) (*env, *httptest.Server, *[]http.Header) {
	t.Helper()
	var (
		mu      sync.Mutex
		headers []http.Header
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		if len(headers) < 100 {
			headers = append(headers, r.Header.Clone())
		}
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
	return e, up, &headers
}

// TestGatewayAuth: the gateway routes take any valid token, as a bearer
// token or in x-api-key (where Anthropic-dialect clients send it), answer
// failures in the route's dialect, and never pass the token upstream.
func TestGatewayAuth(t *testing.T) {
	e, _, headers := gatewayEnv(t)
	tok := e.token("acme", "agent", "subscriber")
	body := `{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	if r := e.do("POST", "/v1/messages", "", body, "x-api-key", tok); r.status != 200 || !strings.Contains(string(r.body), "Hello, world") {
		t.Fatalf("x-api-key: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/chat/completions", tok, `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`); r.status != 200 {
		t.Fatalf("bearer: %d %s", r.status, r.body)
	}
	r := e.do("POST", "/v1/messages", "", body, "x-api-key", "not-a-token")
	var ae struct {
		Type  string
		Error struct{ Type string }
	}
	json.Unmarshal(r.body, &ae)
	if r.status != 401 || ae.Type != "error" || ae.Error.Type != "authentication_error" {
		t.Fatalf("bad key, Anthropic dialect: %d %s", r.status, r.body)
	}
	// A provider's key where a ctxkit token belongs: the 401 says what to
	// send instead, and never repeats the key.
	for _, k := range []struct{ key, says string }{
		{"sk-ant-api03-secretsecret", "Anthropic API key"},
		{"sk-proj-secretsecret", "OpenAI-style API key"},
		{"AIzaSyDsecretsecret", "Google API key"},
	} {
		r = e.do("POST", "/v1/messages", "", body, "x-api-key", k.key)
		if r.status != 401 || !strings.Contains(string(r.body), k.says) || !strings.Contains(string(r.body), "ctxkit token") || strings.Contains(string(r.body), "secret") {
			t.Fatalf("provider key %s: %d %s", k.says, r.status, r.body)
		}
	}
	if r := e.do("GET", "/breadcrumbs", "sk-proj-secretsecret", nil); r.status != 401 || !strings.Contains(string(r.body), "not a ctxkit token") {
		t.Fatalf("provider key on the store API: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/chat/completions", "", `{}`)
	var oe struct{ Error struct{ Type string } }
	json.Unmarshal(r.body, &oe)
	if r.status != 401 || oe.Error.Type != "authentication_error" {
		t.Fatalf("no token, OpenAI dialect: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/models", tok, nil); r.status != 200 || !strings.Contains(string(r.body), `"gpt-x"`) {
		t.Fatalf("models: %d %s", r.status, r.body)
	}
	for _, h := range *headers {
		if h.Get("Authorization") != "Bearer sk-upstream" || h.Get("x-api-key") != "" {
			t.Fatalf("upstream saw %v: the caller's token must never reach it", h)
		}
		for _, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, tok) {
					t.Fatal("the caller's ctxkit token reached the upstream")
				}
			}
		}
	}
}

// BenchmarkGatewayServerLayer measures what the server adds around the
// gateway (token check, route table, metrics): the same Anthropic-dialect
// request at a fixed rate (an open loop, fixedRate) to the gateway's
// handler alone and through the server, both in front of one fake
// upstream, and reports the server's added p50 and p99. Rate and
// duration: CTXKIT_GATEWAY_BENCH_RATE (default 200 requests/s each way)
// and CTXKIT_GATEWAY_BENCH_DURATION (default 2s). What the whole of
// 'ctxkit serve' adds beside a bare proxy is BenchmarkOpenLoop's, in
// cmd/ctxkit.
func BenchmarkGatewayServerLayer(b *testing.B) {
	e, up, _ := gatewayEnv(b)
	tok := e.token("acme", "agent", "subscriber")
	rate, dur := 200, 2*time.Second
	if v := os.Getenv("CTXKIT_GATEWAY_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("CTXKIT_GATEWAY_BENCH_DURATION=%q: want a positive duration, as in 2s", v)
		}
		dur = d
	}
	if v := os.Getenv("CTXKIT_GATEWAY_BENCH_RATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 100000 {
			b.Fatalf("CTXKIT_GATEWAY_BENCH_RATE=%q: want 1 to 100000 requests/s", v)
		}
		rate = n
	}
	cfgPath := filepath.Join(b.TempDir(), "gateway.yaml")
	os.WriteFile(cfgPath, []byte("providers:\n  - name: up\n    type: openai\n    base_url: "+up.URL+"/v1\n    api_key_env: CTXKIT_TEST_UPSTREAM_KEY\n    models: [gpt-x]\n"), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	alone := httptest.NewServer(http.HandlerFunc(gateway.New(cfg, gateway.Options{}).Messages))
	defer alone.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	body := `{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	var dl, sl []time.Duration
	for b.Loop() {
		d, s := fixedRate(b, client, rate, dur, func() *http.Request {
			r, _ := http.NewRequest("POST", alone.URL+"/v1/messages", strings.NewReader(body))
			return r
		}, func() *http.Request {
			r, _ := http.NewRequest("POST", e.url+"/v1/messages", strings.NewReader(body))
			r.Header.Set("x-api-key", tok)
			return r
		})
		dl, sl = append(dl, d...), append(sl, s...)
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(0, "ns/op") // one op is a whole run at the rate
	b.ReportMetric(us(openloop.Quantile(dl, 0.5)), "gateway-p50-µs")
	b.ReportMetric(us(openloop.Quantile(sl, 0.5)-openloop.Quantile(dl, 0.5)), "server-added-p50-µs")
	b.ReportMetric(us(openloop.Quantile(sl, 0.99)-openloop.Quantile(dl, 0.99)), "server-added-p99-µs")
}

// fixedRate sends direct and via requests, each at rate per second, for
// dur, without waiting for answers (an open loop: openloop.Schedule at
// twice the rate, the ticks alternating between the two, so that neither
// waits on the other's work in the same instant), and returns both
// latency lists, each latency counted from the request's scheduled start.
// BenchmarkOpenLoop in cmd/ctxkit compares the gateway with a bare proxy,
// each a process of its own; this is for comparing two routes of one
// in-process server.
func fixedRate(b *testing.B, c *http.Client, rate int, dur time.Duration, direct, via func() *http.Request) (dl, gl []time.Duration) {
	var mu sync.Mutex
	openloop.Schedule(b.Context(), 2*rate, dur, func(i int, at time.Time) {
		r, into := direct, &dl
		if i%2 == 1 {
			r, into = via, &gl
		}
		resp, err := c.Do(r())
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(at)
		if resp.StatusCode != 200 {
			b.Errorf("status %d", resp.StatusCode)
		}
		mu.Lock()
		*into = append(*into, d)
		mu.Unlock()
	})
	return dl, gl
}

// TestTokenCacheHonoursExpiry: a token verified once is not verified
// again, but only while it is valid.
func TestTokenCacheHonoursExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	e := newEnv(t, func(o *server.Options) {
		o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	tok, err := server.Mint(e.key, server.Principal{OwnerID: "o", AgentID: "a", Roles: []string{"curator"}}, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if r := e.do("GET", "/breadcrumbs", tok, nil); r.status != 200 {
			t.Fatalf("valid token, request %d: %d", i, r.status)
		}
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if r := e.do("GET", "/breadcrumbs", tok, nil); r.status != 401 {
		t.Fatalf("an expired token was accepted from the cache: %d", r.status)
	}
	// A tampered token never matches a cached entry.
	if r := e.do("GET", "/breadcrumbs", tok[:len(tok)-2]+"AA", nil); r.status != 401 {
		t.Fatalf("tampered token: %d", r.status)
	}
}

// BenchmarkGatewaySequential is the same comparison one request at a time
// (a closed loop): ns/op is the time through the gateway, and "direct-µs"
// the time straight to the upstream, measured in the same loop.
func BenchmarkGatewaySequential(b *testing.B) {
	e, up, _ := gatewayEnv(b)
	tok := e.token("acme", "agent", "subscriber")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(r *http.Request) {
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	var direct, via time.Duration
	for b.Loop() {
		r, _ := http.NewRequest("POST", up.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		t0 := time.Now()
		do(r)
		t1 := time.Now()
		r, _ = http.NewRequest("POST", e.url+"/v1/messages", strings.NewReader(`{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`))
		r.Header.Set("x-api-key", tok)
		do(r)
		t2 := time.Now()
		direct += t1.Sub(t0)
		via += t2.Sub(t1)
	}
	b.ReportMetric(float64(direct.Microseconds())/float64(b.N), "direct-µs")
	b.ReportMetric(float64(via.Microseconds())/float64(b.N), "gateway-µs")
	b.ReportMetric(float64((via-direct).Microseconds())/float64(b.N), "overhead-µs")
}

// TestMetricsOwnerSeries: /metrics shows a curator the gateway's token and
// cost series of its own owner only — another owner's would tell who uses
// the server and how much — and every series without an owner.
func TestMetricsOwnerSeries(t *testing.T) {
	e, _, _ := gatewayEnv(t)
	ask := `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`
	for _, owner := range []string{"acme", "globex"} {
		if r := e.do("POST", "/v1/chat/completions", e.token(owner, "bot-"+owner, "subscriber"), ask); r.status != 200 {
			t.Fatalf("%s: %d %s", owner, r.status, r.body)
		}
	}
	for _, c := range []struct{ owner, other string }{{"acme", "globex"}, {"globex", "acme"}} {
		r := e.do("GET", "/metrics", e.token(c.owner, "admin", "curator"), nil)
		if r.status != 200 {
			t.Fatalf("%s: /metrics %d", c.owner, r.status)
		}
		body := string(r.body)
		for _, want := range []string{`ctxkit_gateway_tokens_total{agent="bot-` + c.owner + `",kind="input",model="gpt-x",owner="` + c.owner + `"`, "ctxkit_http_requests_total", "ctxkit_gateway_attempts_total"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s's curator: /metrics lacks %s", c.owner, want)
			}
		}
		for _, leak := range []string{`owner="` + c.other + `"`, "bot-" + c.other} {
			if strings.Contains(body, leak) {
				t.Errorf("%s's curator: /metrics shows %s", c.owner, leak)
			}
		}
	}
}
