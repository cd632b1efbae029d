package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

// byPath answers an upstream request from memory: the fake upstream's
// answer for its path, streamed or whole, with no network between.
type byPath struct{}

func (byPath) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	stream := strings.Contains(string(body), `"stream":true`)
	i := strings.LastIndex(r.URL.Path, "/v1/")
	out, ok := "", i >= 0
	if ok {
		out, ok = fakeupstream.Answer(r.URL.Path[i:], stream)
	}
	if !ok {
		return nil, fmt.Errorf("no canned answer for %s", r.URL.Path)
	}
	ct := "application/json"
	if stream {
		ct = "text/event-stream"
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(strings.NewReader(out)), Request: r}, nil
}

// discardWriter is a client connection that reads everything at once: it
// takes deadlines and flushes as a server's connection does.
type discardWriter struct {
	h http.Header
	n int
}

func (w *discardWriter) Header() http.Header              { return w.h }
func (w *discardWriter) Write(p []byte) (int, error)      { w.n += len(p); return len(p), nil }
func (w *discardWriter) WriteHeader(int)                  {}
func (w *discardWriter) Flush()                           {}
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkHopCPU is the gateway's own work for the requests of
// BenchmarkProxyHop, with no network on either side: for each client
// dialect, the request decoded, sent to an in-memory upstream of the same
// type, and its answer written to a client that reads at once.
//
//	go test ./internal/app/gateway -run '^$' -bench HopCPU -benchmem
func BenchmarkHopCPU(b *testing.B) {
	cfgPath := filepath.Join(b.TempDir(), "g.json")
	cfg := `{"providers":[
		{"name":"oai","type":"openai","base_url":"http://upstream.invalid/v1","api_key_env":"CTXKIT_BENCH_KEY","models":["gpt-bench"]},
		{"name":"ant","type":"anthropic","base_url":"http://upstream.invalid","api_key_env":"CTXKIT_BENCH_KEY","models":["claude-bench"]},
		{"name":"resp","type":"openai","api":"responses","base_url":"http://upstream.invalid/v1","api_key_env":"CTXKIT_BENCH_KEY","models":["resp-bench"]}]}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("CTXKIT_BENCH_KEY", "k")
	c, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	g := gateway.New(c, gateway.Options{Client: &http.Client{Transport: byPath{}}})
	for _, d := range fakeupstream.Clients {
		for _, stream := range []bool{false, true} {
			name := d.Name + "/plain"
			if stream {
				name = d.Name + "/stream"
			}
			body := d.Body(stream)
			serve := handlerOf(g, d.Name)
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r := httptest.NewRequest(http.MethodPost, d.Path, strings.NewReader(body))
					r.Header = d.Header.Clone()
					w := &discardWriter{h: http.Header{}}
					serve(w, r)
					if w.n == 0 {
						b.Fatal(fmt.Sprint("no answer for ", name))
					}
				}
			})
		}
	}
}

// handlerOf is g's handler of a client dialect of fakeupstream.Clients.
func handlerOf(g *gateway.Gateway, dialect string) http.HandlerFunc {
	switch dialect {
	case "messages":
		return g.Messages
	case "responses":
		return g.Responses
	}
	return g.ChatCompletions
}
