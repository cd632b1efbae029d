package gateway

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// mockStream sends a streamed request to a mock of m through its
// transport.
func mockStream(t *testing.T, ctx context.Context, m Mock) *http.Response {
	t.Helper()
	p := Provider{Name: "demo", Type: TypeMock, Models: []string{"m"}, Mock: &m}
	if err := p.checkMock("providers[0]", mustRow(t)); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL+"/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := p.mock.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	return resp
}

// settled waits until the goroutines are no more than n.
func settled(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before the stream", runtime.NumGoroutine(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMockStreamEnds: a stream whose reader closes it, or whose request
// is cancelled, ends at once, in the middle of a pause, leaving nothing
// running.
func TestMockStreamEnds(t *testing.T) {
	slow := Mock{Text: strings.Repeat("word ", 50), ChunkDelay: Duration(5 * time.Minute)}
	before := runtime.NumGoroutine()

	resp := mockStream(t, context.Background(), slow)
	buf := make([]byte, 512)
	if n, err := resp.Body.Read(buf); n == 0 || err != nil {
		t.Fatalf("first event: %d %v", n, err)
	}
	resp.Body.Close()
	settled(t, before)

	ctx, cancel := context.WithCancel(context.Background())
	resp = mockStream(t, ctx, slow)
	resp.Body.Read(buf)
	cancel()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("the cancelled stream ended without an error")
	}
	resp.Body.Close()
	settled(t, before)
}

func mustRow(t *testing.T) wire.Provider {
	t.Helper()
	row, ok := providers.Lookup(TypeOpenAI)
	if !ok {
		t.Fatal("no openai row")
	}
	return row
}
