package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
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

// BenchmarkGatewayOverhead sends requests at a fixed rate, alternating
// straight to the fake upstream and through ctxkit's gateway (an
// Anthropic-dialect client, an OpenAI-type upstream: token check,
// decoding, conversion, re-encoding), and reports the overhead: the
// gateway's p50 and p99 latency minus the upstream's, non-streaming and
// streaming. Rate and duration: CTXKIT_GATEWAY_BENCH_RATE (default 500
// requests/s each way) and CTXKIT_GATEWAY_BENCH_DURATION (default 10s).
//
// It also measures the floor: the same comparison through a bare
// forwarder (a handler that sends the request on to the upstream with
// net/http and copies the answer back, doing nothing else), the least an
// extra loopback HTTP hop costs in this setting. "hop-p50-overhead-µs" is
// that floor and "work-p50-µs" the gateway's overhead above it.
func BenchmarkGatewayOverhead(b *testing.B) {
	e, up, _ := gatewayEnv(b)
	tok := e.token("acme", "agent", "subscriber")
	rate, dur := 500, 10*time.Second
	if v := os.Getenv("CTXKIT_GATEWAY_BENCH_DURATION"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			dur = d
		}
	}
	if v := os.Getenv("CTXKIT_GATEWAY_BENCH_RATE"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			rate = n
		}
	}
	upClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	hop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fw, _ := http.NewRequestWithContext(r.Context(), "POST", up.URL+"/v1/chat/completions", r.Body)
		fw.Header.Set("Authorization", "Bearer sk-upstream")
		resp, err := upClient.Do(fw)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		io.Copy(w, resp.Body)
	}))
	defer hop.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0}}
	direct := `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	toUpstream := func() *http.Request {
		r, _ := http.NewRequest("POST", up.URL+"/v1/chat/completions", strings.NewReader(direct))
		r.Header.Set("Authorization", "Bearer sk-upstream")
		return r
	}
	modes := []struct{ name, via string }{
		{"plain", `{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`},
		{"stream", `{"model":"gpt-x","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	}
	lat := map[string][]time.Duration{}
	for b.Loop() {
		for _, m := range modes {
			d, g := fixedRate(b, client, rate, dur, toUpstream, func() *http.Request {
				r, _ := http.NewRequest("POST", e.url+"/v1/messages", strings.NewReader(m.via))
				r.Header.Set("x-api-key", tok)
				return r
			})
			lat[m.name+"-direct"] = append(lat[m.name+"-direct"], d...)
			lat[m.name+"-gateway"] = append(lat[m.name+"-gateway"], g...)
		}
		d, h := fixedRate(b, client, rate, dur, toUpstream, func() *http.Request {
			r, _ := http.NewRequest("POST", hop.URL, strings.NewReader(direct))
			return r
		})
		lat["hop-direct"] = append(lat["hop-direct"], d...)
		lat["hop-via"] = append(lat["hop-via"], h...)
	}
	p := func(l []time.Duration, q float64) time.Duration {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		return l[int(float64(len(l)-1)*q)]
	}
	hop50 := p(lat["hop-via"], 0.5) - p(lat["hop-direct"], 0.5)
	b.ReportMetric(float64(hop50.Microseconds()), "hop-p50-overhead-µs")
	for _, m := range modes {
		dl, gl := lat[m.name+"-direct"], lat[m.name+"-gateway"]
		over50 := p(gl, 0.5) - p(dl, 0.5)
		b.ReportMetric(float64(over50.Microseconds()), m.name+"-p50-overhead-µs")
		b.ReportMetric(float64((p(gl, 0.99) - p(dl, 0.99)).Microseconds()), m.name+"-p99-overhead-µs")
		b.ReportMetric(float64(p(dl, 0.5).Microseconds()), m.name+"-direct-p50-µs")
		b.ReportMetric(float64(p(gl, 0.5).Microseconds()), m.name+"-gateway-p50-µs")
		b.ReportMetric(float64((over50 - hop50).Microseconds()), m.name+"-work-p50-µs")
	}
}

// fixedRate sends direct and gateway requests, each at rate per second,
// for dur, without waiting for answers (an open loop), and returns both
// latency lists.
func fixedRate(b *testing.B, c *http.Client, rate int, dur time.Duration, direct, via func() *http.Request) (dl, gl []time.Duration) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	send := func(r *http.Request, into *[]time.Duration) {
		defer wg.Done()
		t0 := time.Now()
		resp, err := c.Do(r)
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode != 200 {
			b.Errorf("status %d", resp.StatusCode)
		}
		mu.Lock()
		*into = append(*into, d)
		mu.Unlock()
	}
	// Ticks alternate between the two, at twice the rate, so each goes at
	// rate and neither waits on the other's work in the same instant.
	tick := time.NewTicker(time.Second / time.Duration(2*rate))
	defer tick.Stop()
	end := time.After(dur)
	for n := 0; ; n++ {
		select {
		case <-end:
			wg.Wait()
			return dl, gl
		case <-tick.C:
			wg.Add(1)
			if n%2 == 0 {
				go send(direct(), &dl)
			} else {
				go send(via(), &gl)
			}
		}
	}
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
