package gateway_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

const secretKey = "sk-test-SECRET-0123456789"

// lockedBuffer is a log sink handlers may write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gatewayWith starts a gateway with one openai-type provider (key
// secretKey) in front of handler, with opts, and returns it with its log.
func gatewayWith(t *testing.T, handler http.HandlerFunc, opts gateway.Options) (*httptest.Server, *lockedBuffer) {
	t.Helper()
	up := httptest.NewServer(handler)
	t.Cleanup(up.Close)
	t.Setenv("CTXKIT_TEST_SECRET_KEY", secretKey)
	cfgPath := filepath.Join(t.TempDir(), "g.json")
	if err := os.WriteFile(cfgPath, []byte(`{"providers":[{"name":"up","type":"openai","base_url":"`+up.URL+`","api_key_env":"CTXKIT_TEST_SECRET_KEY","models":["m"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g := gateway.New(cfg, opts)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, logs
}

// TestProviderKeyNeverEchoed: an upstream (or a proxy before it) that
// quotes the credentials it was sent, in an error response, in an error
// inside its stream or in a page that is not JSON, gets none of them to
// the client or into the gateway's log, in either dialect.
func TestProviderKeyNeverEchoed(t *testing.T) {
	srv, logs := gatewayWith(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		switch {
		case bytes.Contains(body, []byte("in-stream")):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"error":{"message":"key `+strings.TrimPrefix(auth, "Bearer ")+` is over its quota","type":"insufficient_quota `+auth+`"}}`+"\n\n")
		case bytes.Contains(body, []byte("html")):
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>proxy error for "+auth+"</html>")
		default:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"invalid key for this project: `+auth+`"}}`)
		}
	}, gateway.Options{})
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		for _, content := range []string{"plain", "in-stream", "html"} {
			for _, stream := range []string{"false", "true"} {
				resp, body := post(t, srv.URL+path, `{"model":"m","max_tokens":5,"stream":`+stream+`,"messages":[{"role":"user","content":"`+content+`"}]}`)
				if strings.Contains(string(body), secretKey) || resp.StatusCode == http.StatusOK && stream == "false" {
					t.Errorf("%s %s stream=%s: %d %s", path, content, stream, resp.StatusCode, body)
				}
				if content == "html" && strings.Contains(string(body), "html") {
					t.Errorf("%s: the proxy's page reached the client: %s", path, body)
				}
			}
		}
	}
	if log := logs.String(); strings.Contains(log, secretKey) || !strings.Contains(log, "[redacted]") {
		t.Errorf("log:\n%s", log)
	}
}

// TestTransportErrorNotEchoed: an upstream that resets its connection
// mid-stream gives the client an error of the gateway's own, not the
// transport's (which names the upstream's address); the log has it.
func TestTransportErrorNotEchoed(t *testing.T) {
	srv, logs := gatewayWith(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close() // a reset
	}, gateway.Options{})
	for _, stream := range []string{"false", "true"} {
		_, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`)
		if strings.Contains(string(body), "127.0.0.1") || !strings.Contains(string(body), "could not read") {
			t.Errorf("stream=%s: %s", stream, body)
		}
	}
	if !strings.Contains(logs.String(), "127.0.0.1") {
		t.Errorf("the log lacks the transport's error:\n%s", logs.String())
	}
}

// TestClientThatStopsReadingEnds: a streaming client that keeps its
// connection open but reads nothing ends its request once a write to it
// has waited WriteTimeout, and the upstream request with it.
func TestClientThatStopsReadingEnds(t *testing.T) {
	upstreamGone := make(chan struct{})
	srv, _ := gatewayWith(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamGone)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("x", 4000) + "\"}}]}\n\n"
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}, gateway.Options{WriteTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	select {
	case <-upstreamGone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request still runs for a client that reads nothing")
	}
}

// TestAdmission: past MaxInFlight requests, or past MaxInFlightBytes of
// request bodies, a request is answered 503 with Retry-After at once;
// when the requests in flight end, requests are served again.
func TestAdmission(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	srv, _ := gatewayWith(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("hold")) {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, openAIStream)
	}, gateway.Options{MaxInFlight: 1, MaxInFlightBytes: 4 << 10})
	defer once.Do(func() { close(release) })
	held := make(chan int)
	go func() {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hold"}]}`))
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	select {
	case <-arrived:
	case status := <-held:
		t.Fatalf("the first request ended with %d", status)
	}
	resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "overloaded_error") {
		t.Fatalf("a second request while one is in flight: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	once.Do(func() { close(release) })
	if status := <-held; status != http.StatusOK {
		t.Fatalf("the held request: %d", status)
	}
	if resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the held request: %d %s", resp.StatusCode, body)
	}
	// A body larger than the bytes a gateway may hold is refused before
	// it is read.
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 8<<10) + `"}]}`
	if resp, body := post(t, srv.URL+"/v1/chat/completions", big); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a body past MaxInFlightBytes: %d %s", resp.StatusCode, body)
	}
}

// TestMaxDuration: an upstream that keeps its stream alive with comments
// but never finishes is cut at MaxDuration, with an error saying so.
func TestMaxDuration(t *testing.T) {
	srv, _ := gatewayWith(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		for r.Context().Err() == nil {
			io.WriteString(w, ": keep-alive\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	}, gateway.Options{MaxDuration: 300 * time.Millisecond, IdleTimeout: time.Minute})
	for _, stream := range []string{"false", "true"} {
		start := time.Now()
		_, body := post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":5,"stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`)
		if d := time.Since(start); d > 5*time.Second || !strings.Contains(string(body), "lasted longer") {
			t.Errorf("stream=%s after %v: %s", stream, d, body)
		}
	}
}
