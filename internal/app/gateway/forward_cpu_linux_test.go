//go:build linux

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
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

// BenchmarkForwardCPU is BenchmarkHopCPU's streamed requests (no network
// on either side) served by a gateway that forwards same-dialect streams
// and by one that decodes and encodes every event, request by request in
// turn, so that both meet the same moments of a busy machine: the CPU
// time of the thread that serves each request (the gateway's own work,
// whatever else the machine runs), each way ("fwd-cpu-µs",
// "enc-cpu-µs"), and their ratio ("x-enc").
//
//	go test ./internal/app/gateway -run '^$' -bench ForwardCPU -benchtime 5000x -count 3
func BenchmarkForwardCPU(b *testing.B) {
	cfg := writeConfigB(b, `{"providers":[
		{"name":"oai","type":"openai","base_url":"http://upstream.invalid/v1","api_key_env":"CTXKIT_BENCH_KEY","models":["gpt-bench"]},
		{"name":"ant","type":"anthropic","base_url":"http://upstream.invalid","api_key_env":"CTXKIT_BENCH_KEY","models":["claude-bench"]},
		{"name":"resp","type":"openai","api":"responses","base_url":"http://upstream.invalid/v1","api_key_env":"CTXKIT_BENCH_KEY","models":["resp-bench"]}]}`)
	b.Setenv("CTXKIT_BENCH_KEY", "k")
	var gs [2]*gateway.Gateway
	for i := range gs {
		c, err := gateway.LoadConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		gs[i] = gateway.New(c, gateway.Options{Client: &http.Client{Transport: byPath{}}})
		gateway.SetForwarding(gs[i], i == 0)
	}
	for _, d := range fakeupstream.Clients {
		body := d.Body(true)
		b.Run(d.Name, func(b *testing.B) {
			var spent [2]time.Duration
			n := 0
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for b.Loop() {
				for i, g := range gs {
					serve := handlerOf(g, d.Name)
					r := httptest.NewRequest(http.MethodPost, d.Path, strings.NewReader(body))
					r.Header = d.Header.Clone()
					w := &discardWriter{h: http.Header{}}
					t0 := threadCPU(b)
					serve(w, r)
					spent[i] += threadCPU(b) - t0
					if w.n == 0 {
						b.Fatal("no answer")
					}
				}
				n++
			}
			fwd, enc := float64(spent[0].Nanoseconds())/float64(n)/1e3, float64(spent[1].Nanoseconds())/float64(n)/1e3
			b.ReportMetric(fwd, "fwd-cpu-µs")
			b.ReportMetric(enc, "enc-cpu-µs")
			b.ReportMetric(fwd/enc, "x-enc")
		})
	}
}

func writeConfigB(b *testing.B, cfg string) string {
	p := b.TempDir() + "/g.json"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkForwardHop is BenchmarkProxyHop's streamed requests on
// loopback with a fourth path: the fake upstream straight, a bare
// reverse proxy, a gateway that forwards same-dialect streams and one
// that decodes and encodes every event, taken in turn request by request
// (the two gateways in either order, round by round).
// It reports each gateway's added p50 as a multiple of the bare proxy's
// ("x-bare-fwd", "x-bare-enc") beside the absolute figures.
//
//	go test ./internal/app/gateway -run '^$' -bench ForwardHop -benchtime 2000x -count 3
func BenchmarkForwardHop(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(fakeupstream.Handler))
	defer up.Close()
	b.Setenv("CTXKIT_BENCH_KEY", "k")
	cfg := writeConfigB(b, fmt.Sprintf(`{"providers":[
		{"name":"oai","type":"openai","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["gpt-bench"]},
		{"name":"ant","type":"anthropic","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["claude-bench"]},
		{"name":"resp","type":"openai","api":"responses","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["resp-bench"]}]}`, up.URL+"/v1", up.URL, up.URL+"/v1"))
	var gws [2]*httptest.Server
	for i := range gws {
		c, err := gateway.LoadConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		g := gateway.New(c, gateway.Options{})
		gateway.SetForwarding(g, i == 0)
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/messages", g.Messages)
		mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
		mux.HandleFunc("POST /v1/responses", g.Responses)
		gws[i] = httptest.NewServer(mux)
		defer gws[i].Close()
	}
	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	rp.Transport = tr
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
		body := d.Body(true)
		b.Run(d.Name+"/stream", func(b *testing.B) {
			paths := [4]string{up.URL + d.Path, bare.URL + d.Path, gws[0].URL + d.Path, gws[1].URL + d.Path}
			var lat [4][]time.Duration
			for _, p := range paths {
				benchRequest(b, client, p, body, d.Header)
			}
			// The two gateways swap places every other round: the request
			// after another path's meets the machine as that one left it.
			order := [2][4]int{{0, 1, 2, 3}, {0, 1, 3, 2}}
			round := 0
			for b.Loop() {
				for _, i := range order[round%2] {
					t0 := time.Now()
					benchRequest(b, client, paths[i], body, d.Header)
					lat[i] = append(lat[i], time.Since(t0))
				}
				round++
			}
			direct := p50(lat[0])
			bareAdded := p50(lat[1]) - direct
			fwd, enc := p50(lat[2])-direct, p50(lat[3])-direct
			b.ReportMetric(float64(bareAdded.Nanoseconds())/1e3, "bare-added-µs")
			b.ReportMetric(float64(fwd.Nanoseconds())/1e3, "fwd-added-µs")
			b.ReportMetric(float64(enc.Nanoseconds())/1e3, "enc-added-µs")
			b.ReportMetric(float64(fwd)/float64(bareAdded), "x-bare-fwd")
			b.ReportMetric(float64(enc)/float64(bareAdded), "x-bare-enc")
		})
	}
}
