package upstream_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/upstream"
)

// TestNoProxyForPlainHTTP: a plain http upstream is never reached through
// a proxy (the provider's key would cross to it in clear text).
func TestNoProxyForPlainHTTP(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	r, err := http.NewRequest(http.MethodPost, "http://models.invalid/v1/chat/completions", nil)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := upstream.Proxy(r); u != nil || err != nil {
		t.Fatalf("proxy %v, %v", u, err)
	}
}

func redact(s string) string { return strings.ReplaceAll(s, "KEY", "[redacted]") }

// TestRedirects: a redirect is never followed, and the key never reaches
// the other host. Without Options.Redirect it is the answer (a status
// error); with it, the request fails with its error.
func TestRedirects(t *testing.T) {
	leaked := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked <- r.Header.Get("Authorization")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/KEY", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	req := upstream.Request{Method: http.MethodPost, URL: srv.URL, Header: http.Header{"Authorization": {"Bearer KEY"}}, Body: []byte(`{}`), Redact: redact}

	_, err := upstream.New(upstream.Options{}).Do(context.Background(), req)
	var se *upstream.Error
	if !errors.As(err, &se) || se.Code != upstream.CodeStatus || se.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("no Redirect option: %v, want a 307 status error", err)
	}

	refused := errors.New("refused")
	c := upstream.New(upstream.Options{Redirect: func(to *url.URL) error { return refused }})
	_, err = c.Do(context.Background(), req)
	var te *upstream.Error
	if !errors.As(err, &te) || te.Code != upstream.CodeTransport || !errors.Is(err, refused) || strings.Contains(err.Error(), "KEY") {
		t.Errorf("Redirect option: %v, want a redacted transport error wrapping the Redirect error", err)
	}
	select {
	case got := <-leaked:
		t.Errorf("the redirect was followed (Authorization %q)", got)
	default:
	}
}

// TestErrorBodyCapped: an error response is read up to MaxErrorBody, and
// the caller gets it with the status and headers.
func TestErrorBodyCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	_, err := upstream.New(upstream.Options{MaxErrorBody: 100}).Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL})
	var se *upstream.Error
	if !errors.As(err, &se) || se.Code != upstream.CodeStatus {
		t.Fatalf("%v, want a status error", err)
	}
	if se.StatusCode != 429 || se.Status != "429 Too Many Requests" || len(se.Body) != 100 || se.Header.Get("Retry-After") != "7" {
		t.Errorf("%d %q %d bytes, Retry-After %q", se.StatusCode, se.Status, len(se.Body), se.Header.Get("Retry-After"))
	}
}

// TestTransportErrorRedacted: the text of a failed exchange goes through
// the caller's redaction; the cause still matches.
func TestTransportErrorRedacted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := upstream.New(upstream.Options{}).Do(ctx, upstream.Request{Method: http.MethodGet, URL: "http://127.0.0.1:1/KEY", Redact: redact})
	var te *upstream.Error
	if !errors.As(err, &te) || te.Code != upstream.CodeTransport || !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "KEY") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("%v", err)
	}
}

// TestIdleBodyEnds: a body that sends nothing for IdleTimeout is closed,
// and Idled says so.
func TestIdleBodyEnds(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	resp, err := upstream.New(upstream.Options{IdleTimeout: 50 * time.Millisecond}).Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	data, err := io.ReadAll(&resp.Body)
	if err == nil || !resp.Body.Idled() || string(data) != "first" || time.Since(start) > 5*time.Second {
		t.Errorf("read %q, %v, idled %v", data, err, resp.Body.Idled())
	}
}

// TestFirstByte: with Request.FirstByte, Do returns once the headers and
// the first body byte are in, and the body reads whole (the bytes read
// ahead come first); an upstream that sends no headers, or headers and
// then nothing, in time fails with ErrFirstByte and sees its request end.
func TestFirstByte(t *testing.T) {
	ended := make(chan struct{}, 4)
	body := strings.Repeat("0123456789", 200) // more than is read ahead
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow-byte":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(30 * time.Millisecond)
			io.WriteString(w, body)
		case "/no-headers", "/no-byte":
			if r.URL.Path == "/no-byte" {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
			ended <- struct{}{}
		case "/empty":
		case "/error":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "busy")
		}
	}))
	defer srv.Close()
	c := upstream.New(upstream.Options{IdleTimeout: time.Minute})
	resp, err := c.Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL + "/slow-byte", FirstByte: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(&resp.Body)
	resp.Body.Close()
	if err != nil || string(data) != body {
		t.Fatalf("read %d bytes, %v", len(data), err)
	}
	for _, path := range []string{"/no-headers", "/no-byte"} {
		start := time.Now()
		_, err := c.Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL + path, FirstByte: 100 * time.Millisecond, Redact: redact})
		var te *upstream.Error
		if !errors.As(err, &te) || te.Code != upstream.CodeTransport || !errors.Is(err, upstream.ErrFirstByte) || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %v", path, err, time.Since(start))
		}
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the request did not end", path)
		}
	}
	resp, err = c.Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL + "/empty", FirstByte: time.Second})
	if err != nil {
		t.Fatalf("an empty body: %v", err)
	}
	if data, err := io.ReadAll(&resp.Body); err != nil || len(data) != 0 {
		t.Errorf("an empty body read %q, %v", data, err)
	}
	resp.Body.Close()
	_, err = c.Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL + "/error", FirstByte: time.Second})
	var se *upstream.Error
	if !errors.As(err, &se) || se.StatusCode != 503 || string(se.Body) != "busy" {
		t.Errorf("an error status: %v", err)
	}
}

// TestRequestTimeouts: a request's ConnectTimeout bounds its dial (one
// that cannot be met fails as a dial error), and its Idle replaces the
// client's idle timeout.
func TestRequestTimeouts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := upstream.New(upstream.Options{IdleTimeout: time.Hour})
	_, err := c.Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL, ConnectTimeout: time.Nanosecond})
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("a connect timeout of 1ns: %v, want a dial error", err)
	}
	resp, err := c.Do(context.Background(), upstream.Request{Method: http.MethodGet, URL: srv.URL, ConnectTimeout: 5 * time.Second, Idle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	data, _ := io.ReadAll(&resp.Body)
	if !resp.Body.Idled() || string(data) != "first" || time.Since(start) > 5*time.Second {
		t.Errorf("read %q, idled %v after %v", data, resp.Body.Idled(), time.Since(start))
	}
}
