package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// canned answers every request with a provider stream, in memory.
type canned struct{ body string }

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(c.body)), Request: r}, nil
}

// BenchmarkHandlerCPU is the gateway's own work per request, with no
// network: decode an Anthropic-dialect request, convert it for an
// OpenAI-type upstream, decode the upstream stream and write the client's
// response (non-streaming and streaming).
func BenchmarkHandlerCPU(b *testing.B) {
	cfgPath := filepath.Join(b.TempDir(), "g.json")
	os.WriteFile(cfgPath, []byte(`{"providers":[{"name":"up","type":"openai","base_url":"http://upstream.invalid/v1","api_key_env":"CTXKIT_BENCH_KEY","models":["m"]}]}`), 0o600)
	os.Setenv("CTXKIT_BENCH_KEY", "k")
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{Client: &http.Client{Transport: canned{openAIStream}}})
	for _, stream := range []bool{false, true} {
		name, body := "plain", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
		if stream {
			name, body = "stream", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				g.Messages(w, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body)))
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
