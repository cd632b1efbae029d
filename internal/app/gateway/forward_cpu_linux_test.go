//go:build linux

package gateway_test

import (
	"net/http"
	"net/http/httptest"
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
		{"name":"ant","type":"anthropic","base_url":"http://upstream.invalid","api_key_env":"CTXKIT_BENCH_KEY","models":["claude-bench"]}]}`)
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
	for _, d := range fakeupstream.Clients[:2] {
		body := d.Body(true)
		b.Run(d.Name, func(b *testing.B) {
			var spent [2]time.Duration
			n := 0
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for b.Loop() {
				for i, g := range gs {
					serve := g.ChatCompletions
					if d.Name == "messages" {
						serve = g.Messages
					}
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
