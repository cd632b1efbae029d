package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

// BenchmarkRouteHop measures what a route's fallback machinery costs
// when it is not needed: the added p50 latency (over a request made
// straight to the fake upstream) of a request through a route of two
// targets whose first answers, as a multiple of a route of one target
// ("x-single-p50"; the goal is at most 1.1), and of a plain provider
// model beside them. The paths are taken in turn, request after request,
// so that a slower moment of the machine weighs on all alike.
//
//	go test ./internal/app/gateway -run '^$' -bench RouteHop -benchtime 2000x -count 3
func BenchmarkRouteHop(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(fakeupstream.Handler))
	defer up.Close()
	cfgPath := filepath.Join(b.TempDir(), "g.json")
	cfg := fmt.Sprintf(`{"providers":[
		{"name":"oai","type":"openai","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["gpt-bench"]},
		{"name":"oai2","type":"openai","base_url":%q,"keys":[{"env":"CTXKIT_BENCH_KEY"},{"env":"CTXKIT_BENCH_KEY","weight":2}],"models":["gpt-other"]}],
		"routes":[{"model":"gpt-single","targets":[{"provider":"oai","model":"gpt-bench"}]},
			{"model":"gpt-two","targets":[{"provider":"oai","model":"gpt-bench"},{"provider":"oai2","model":"gpt-bench"}]}]}`, up.URL+"/v1", up.URL+"/v1")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("CTXKIT_BENCH_KEY", "k")
	c, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	g := gateway.New(c, gateway.Options{})
	gw := httptest.NewServer(http.HandlerFunc(g.ChatCompletions))
	defer gw.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	header := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}}
	for _, stream := range []bool{false, true} {
		name := "plain"
		if stream {
			name = "stream"
		}
		body := func(model string) string {
			return fmt.Sprintf(`{"model":%q,"stream":%v,"max_tokens":200,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in twenty words."}]}`, model, stream)
		}
		b.Run(name, func(b *testing.B) {
			type path struct{ url, body string }
			paths := [4]path{
				{up.URL + "/v1/chat/completions", body("gpt-bench")},
				{gw.URL, body("gpt-bench")},
				{gw.URL, body("gpt-single")},
				{gw.URL, body("gpt-two")},
			}
			var lat [4][]time.Duration
			for _, p := range paths {
				benchRequest(b, client, p.url, p.body, header) // warm the connections
			}
			for b.Loop() {
				for i, p := range paths {
					t0 := time.Now()
					benchRequest(b, client, p.url, p.body, header)
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
			direct := p50(lat[0])
			plain, single, two := p50(lat[1])-direct, p50(lat[2])-direct, p50(lat[3])-direct
			b.ReportMetric(float64(plain.Nanoseconds())/1e3, "model-added-µs")
			b.ReportMetric(float64(single.Nanoseconds())/1e3, "single-added-µs")
			b.ReportMetric(float64(two.Nanoseconds())/1e3, "two-added-µs")
			b.ReportMetric(float64(two)/float64(single), "x-single-p50")
		})
	}
}
