package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

// BenchmarkProxyHop puts ctxkit's gateway and a bare reverse proxy
// (net/http/httputil) side by side in front of the same fake upstream on
// loopback, and reports what each adds to a request made straight to the
// upstream: for every client dialect, streamed and not, the added p50
// latency of ctxkit as a multiple of the bare proxy's ("x-bare-p50") and
// the added allocations likewise ("x-bare-allocs"), with the absolute
// figures beside them. The three paths are taken in turn, request after
// request, so that a slower moment of the machine weighs on all three
// alike. Each dialect goes to an upstream of its own type, which is what
// the bare proxy can serve.
//
//	go test ./internal/app/gateway -run '^$' -bench ProxyHop -benchtime 2000x
func BenchmarkProxyHop(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(fakeupstream.Handler))
	defer up.Close()
	g := benchGateway(b, up.URL)
	gw := httptest.NewServer(g)
	defer gw.Close()
	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // a stream's events pass at once, as through the gateway
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	rp.Transport = tr
	// The bare proxy reads the request body before it forwards it, as the
	// gateway does: forwarding the inbound body as it comes races with the
	// server closing it once the response has begun (the upstream answers
	// before the transport has read the body's EOF), which cuts a stream
	// now and then.
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	defer bare.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	for _, d := range fakeupstream.Clients {
		for _, stream := range []bool{false, true} {
			name := d.Name + "/plain"
			if stream {
				name = d.Name + "/stream"
			}
			body := d.Body(stream)
			b.Run(name, func(b *testing.B) {
				paths := [3]string{up.URL + d.Path, bare.URL + d.Path, gw.URL + d.Path}
				var lat [3][]time.Duration
				for i := range paths {
					benchRequest(b, client, paths[i], body, d.Header) // warm the connections
				}
				for b.Loop() {
					for i, p := range paths {
						t0 := time.Now()
						benchRequest(b, client, p, body, d.Header)
						lat[i] = append(lat[i], time.Since(t0))
					}
				}
				var allocs [3]float64
				for i, p := range paths {
					allocs[i] = allocsPerRequest(b, client, p, body, d.Header)
				}
				direct := p50(lat[0])
				bareAdded, ctxkitAdded := p50(lat[1])-direct, p50(lat[2])-direct
				b.ReportMetric(float64(bareAdded.Nanoseconds())/1e3, "bare-added-µs")
				b.ReportMetric(float64(ctxkitAdded.Nanoseconds())/1e3, "ctxkit-added-µs")
				b.ReportMetric(float64(ctxkitAdded)/float64(bareAdded), "x-bare-p50")
				b.ReportMetric(allocs[1]-allocs[0], "bare-allocs/req")
				b.ReportMetric(allocs[2]-allocs[0], "ctxkit-allocs/req")
				b.ReportMetric((allocs[2]-allocs[0])/(allocs[1]-allocs[0]), "x-bare-allocs")
			})
		}
	}
}

// benchGateway is a gateway with an OpenAI and an Anthropic provider,
// both the fake upstream at base.
func benchGateway(b *testing.B, base string) http.Handler {
	cfgPath := filepath.Join(b.TempDir(), "g.json")
	cfg := fmt.Sprintf(`{"providers":[
		{"name":"oai","type":"openai","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["gpt-bench"]},
		{"name":"ant","type":"anthropic","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["claude-bench"]},
		{"name":"resp","type":"openai","api":"responses","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["resp-bench"]}]}`, base+"/v1", base, base+"/v1")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("CTXKIT_BENCH_KEY", "k")
	c, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	g := gateway.New(c, gateway.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	mux.HandleFunc("POST /v1/responses", g.Responses)
	return mux
}

func benchRequest(b *testing.B, c *http.Client, url, body string, h http.Header) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header = h.Clone()
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || n == 0 {
		b.Fatalf("%s: %d, %d bytes, %v", url, resp.StatusCode, n, err)
	}
}

// allocsPerRequest is the mean number of heap allocations of the whole
// process (client, hop and upstream) per request to url.
func allocsPerRequest(b *testing.B, c *http.Client, url, body string, h http.Header) float64 {
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		benchRequest(b, c, url, body, h)
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / n
}

func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
