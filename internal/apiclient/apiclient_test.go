package apiclient_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/apiclient"
)

// TestDo: a request carries the token, its extra headers, a JSON content
// type only with a body, and its query; the reply is read up to maxBody.
func TestDo(t *testing.T) {
	type seen struct{ method, uri, auth, ctype, ifMatch, body string }
	var got seen
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.RequestURI, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("If-Match"), string(body)}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"abc","padding":"`+strings.Repeat("x", 100)+`"}`)
	}))
	defer ts.Close()
	c := apiclient.Client{BaseURL: ts.URL + "/", Token: "tok"}
	ctx := context.Background()

	resp, err := c.Do(ctx, apiclient.Request{Method: "PATCH", Path: "/breadcrumbs/a%2Fb", Body: []byte(`{"title":"x"}`),
		Header: http.Header{"If-Match": {"3"}}}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := seen{"PATCH", "/breadcrumbs/a%2Fb", "Bearer tok", "application/json", "3", `{"title":"x"}`}
	if got != want {
		t.Errorf("request %+v\nwant %+v", got, want)
	}
	if resp.Status != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" || !strings.HasPrefix(string(resp.Body), `{"id":"abc"`) {
		t.Errorf("response %d %v %s", resp.Status, resp.Header, resp.Body)
	}

	resp, err = c.Do(ctx, apiclient.Request{Method: "GET", Path: "/breadcrumbs", Query: url.Values{"tag": {"repo:a b"}}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	want = seen{"GET", "/breadcrumbs?tag=repo%3Aa+b", "Bearer tok", "", "", ""}
	if got != want {
		t.Errorf("request %+v\nwant %+v", got, want)
	}
	if len(resp.Body) != 10 {
		t.Errorf("read %d bytes of the reply, want 10", len(resp.Body))
	}
}

// TestDoUnanswered: a request that is never answered is an error with a
// zero Status, which callers tell from a reply.
func TestDoUnanswered(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	ts.Close() // nothing listens at its address now
	c := apiclient.Client{BaseURL: ts.URL, Token: "tok"}
	resp, err := c.Do(context.Background(), apiclient.Request{Method: "GET", Path: "/healthz"}, 1<<10)
	if err == nil || resp.Status != 0 {
		t.Fatalf("%d %v", resp.Status, err)
	}
	if _, err := c.Do(context.Background(), apiclient.Request{Method: "BAD METHOD", Path: "/"}, 1<<10); err == nil {
		t.Fatal("a request that cannot be built was sent")
	}
}

// TestDoFollowsNoRedirect: a server that answers with a redirect to another
// port of the same host gets its 307 back as the reply; the token and the
// body never reach the other address, with the default client or the
// caller's own.
func TestDoFollowsNoRedirect(t *testing.T) {
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		leaked = append(leaked, r.Header.Get("Authorization")+" "+string(body))
	}))
	defer other.Close()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer ts.Close()
	for _, hc := range []*http.Client{nil, {}} {
		c := apiclient.Client{BaseURL: ts.URL, Token: "secret-token", HTTP: hc}
		resp, err := c.Do(context.Background(), apiclient.Request{Method: "POST", Path: "/breadcrumbs", Body: []byte(`{"title":"x"}`)}, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusTemporaryRedirect {
			t.Errorf("status %d, want the 307 itself", resp.Status)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("the redirect was followed: the other server got %q", leaked)
	}
}
