package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

// dropRecorder takes every exchange and keeps none: the request path's
// share of recording, apart from the writer's.
type dropRecorder struct{ n int }

func (r *dropRecorder) Record(_ context.Context, x *gateway.Exchange) {
	if x.Response != nil {
		r.n++
	}
}

// BenchmarkRecordPathCPU is the gateway's own work per request, with no
// network (as BenchmarkHopCPU), through a route that records and one that
// does not, request by request in turn: the CPU time of the thread that
// serves each ("plain-cpu-µs", "rec-cpu-µs") and what recording adds on
// the request path ("rec-added-cpu-µs"), the recorder's write apart.
//
//	go test ./internal/app/gateway -run '^$' -bench RecordPathCPU -benchtime 5000x -count 3
func BenchmarkRecordPathCPU(b *testing.B) {
	cfg := writeConfigB(b, `{"providers":[
		{"name":"oai","type":"openai","base_url":"http://upstream.invalid/v1","api_key_env":"CTXKIT_BENCH_KEY","models":["gpt-bench"]}],
		"routes":[{"model":"gpt-plain","targets":[{"provider":"oai","model":"gpt-bench"}]},
			{"model":"gpt-rec","targets":[{"provider":"oai","model":"gpt-bench"}],"record":true}]}`)
	b.Setenv("CTXKIT_BENCH_KEY", "k")
	c, err := gateway.LoadConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	g := gateway.New(c, gateway.Options{Client: &http.Client{Transport: byPath{}}})
	rec := &dropRecorder{}
	g.SetRecorder(rec)
	for _, d := range fakeupstream.Clients[:2] {
		for _, stream := range []bool{false, true} {
			name := d.Name + "/plain"
			if stream {
				name = d.Name + "/stream"
			}
			serve := handlerOf(g, d.Name)
			var bodies [2]string
			for i, model := range []string{"gpt-plain", "gpt-rec"} {
				bodies[i] = strings.Replace(d.Body(stream), `"model":"`+modelOf(d.Name)+`"`, `"model":"`+model+`"`, 1)
			}
			b.Run(name, func(b *testing.B) {
				var spent [2]time.Duration
				n, before := 0, rec.n
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for b.Loop() {
					for i, body := range bodies {
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
				if rec.n-before != n {
					b.Fatalf("%d exchanges recorded of %d", rec.n-before, n)
				}
				plain, recd := float64(spent[0].Nanoseconds())/float64(n)/1e3, float64(spent[1].Nanoseconds())/float64(n)/1e3
				b.ReportMetric(plain, "plain-cpu-µs")
				b.ReportMetric(recd, "rec-cpu-µs")
				b.ReportMetric(recd-plain, "rec-added-cpu-µs")
			})
		}
	}
}

// modelOf is the model of fakeupstream.Clients' request of a dialect.
func modelOf(dialect string) string {
	switch dialect {
	case "messages":
		return "claude-bench"
	case "responses":
		return "resp-bench"
	}
	return "gpt-bench"
}
