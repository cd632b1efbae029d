package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProxy: the hop passes method, path, headers and body on, and a
// stream back event by event; it refuses a target off loopback and a body
// past its bound.
func TestProxy(t *testing.T) {
	for _, bad := range []string{"", "ftp://127.0.0.1:1", "http://example.com", "http://10.0.0.1:80", "http://[::1", "127.0.0.1:80"} {
		if _, err := proxy(bad); err == nil {
			t.Errorf("target %q was accepted", bad)
		}
	}
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != "POST" || r.URL.Path != "/v1/x" || r.Header.Get("X-Api-Key") != "k" || string(body) != "hello" {
			http.Error(w, "the request changed on the way", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-release // the second event waits until the client has the first
		io.WriteString(w, "data: 2\n\n")
	}))
	defer up.Close()
	h, err := proxy(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	hop := httptest.NewServer(h)
	defer hop.Close()
	req, _ := http.NewRequest("POST", hop.URL+"/v1/x", strings.NewReader("hello"))
	req.Header.Set("X-Api-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	r := bufio.NewReader(resp.Body)
	if line, _ := r.ReadString('\n'); line != "data: 1\n" {
		t.Fatalf("first event %q: it did not pass at once", line)
	}
	close(release)
	rest, _ := io.ReadAll(r)
	if string(rest) != "\ndata: 2\n\n" {
		t.Fatalf("the rest %q", rest)
	}
	big, err := http.Post(hop.URL+"/v1/x", "text/plain", strings.NewReader(strings.Repeat("x", maxBody+1)))
	if err != nil {
		t.Fatal(err)
	}
	big.Body.Close()
	if big.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body past the bound: %d", big.StatusCode)
	}
}
