package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// TestStreamOutlastsWriteTimeoutBetweenEvents: an upstream that waits
// longer than WriteTimeout between two events (a model thinking) does not
// end the stream of a client that reads everything: a write after the wait
// gets a deadline of its own, even one large enough to go straight to the
// connection.
func TestStreamOutlastsWriteTimeoutBetweenEvents(t *testing.T) {
	big := strings.Repeat("y", 16<<10)
	srv, _ := gatewayWith(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
		f.Flush()
		time.Sleep(600 * time.Millisecond)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""+big+"\"}}]}\n\n")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}, gateway.Options{WriteTimeout: 150 * time.Millisecond})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the stream broke after %d bytes: %v", len(body), err)
	}
	got := string(body)
	if !strings.Contains(got, "first") || !strings.Contains(got, big) || !strings.Contains(got, `"finish_reason":"stop"`) || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Fatalf("the stream is not whole (%d bytes): ...%s", len(got), got[max(0, len(got)-300):])
	}
}
