package fakeupstream_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

// TestAnswers: each API's path answers with its canned answer, streamed
// (as server-sent events, one flush each) when the request says so, and
// every answer holds every word; anything else is refused.
func TestAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(fakeupstream.Handler))
	defer srv.Close()
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses"} {
		for _, stream := range []bool{false, true} {
			body := `{"model":"m","stream":false}`
			if stream {
				body = `{"model":"m","stream":true}`
			}
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want, _ := fakeupstream.Answer(path, stream)
			ct := resp.Header.Get("Content-Type")
			if resp.StatusCode != 200 || string(got) != want || (stream != (ct == "text/event-stream")) {
				t.Fatalf("%s stream=%v: %d %s, %.80s", path, stream, resp.StatusCode, ct, got)
			}
			for _, w := range fakeupstream.Words {
				if !strings.Contains(want, w) {
					t.Fatalf("%s stream=%v: the answer lacks %q", path, stream, w)
				}
			}
			if stream && !strings.HasSuffix(want, "\n\n") {
				t.Fatalf("%s: the stream does not end an event", path)
			}
		}
	}
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/v1/other", "{}", 404},
		{"GET", "/v1/messages", "", 405},
		{"POST", "/v1/messages", strings.Repeat("x", fakeupstream.MaxBody+1), 413},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
}
