package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkMockHop: a request answered by a mock provider through the
// whole gateway (a real server on loopback, the client's decoding, the
// mock's Chat Completions encoding and decoding, the answer's encoding),
// streamed and not, in the OpenAI and Anthropic dialects.
func BenchmarkMockHop(b *testing.B) {
	srv := mockGateway(b, mockYAML)
	for _, c := range []struct{ name, path, body string }{
		{"openai", "/v1/chat/completions", `{"model":"demo-model","messages":[{"role":"user","content":"Hi"}]}`},
		{"openai-stream", "/v1/chat/completions", `{"model":"demo-model","stream":true,"messages":[{"role":"user","content":"Hi"}]}`},
		{"anthropic", "/v1/messages", `{"model":"demo-model","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`},
		{"anthropic-stream", "/v1/messages", `{"model":"demo-model","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}
