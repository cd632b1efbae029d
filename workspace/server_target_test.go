package workspace

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// TestServerTargetReplies: the server's error replies are told apart the
// way a run needs (a missing breadcrumb, a version mismatch, a refusal),
// and a server that does not answer is named as --server.
func TestServerTargetReplies(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/breadcrumbs/gone":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"not_found","message":"no breadcrumb gone"}}`))
		case "/breadcrumbs/moved":
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":{"code":"version_mismatch","message":"at version 4"}}`))
		case "/breadcrumbs/theirs":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`not JSON`))
		}
	}))
	defer ts.Close()
	target := NewServerTarget(ts.URL+"/", "tok", ts.Client())
	ctx := context.Background()
	if d := target.describe(); d != "server:"+ts.URL {
		t.Errorf("describe: %q", d)
	}
	err := target.delete(ctx, "gone")
	if !isNotFound(err) || err.Error() != "no breadcrumb gone (404 not_found)" {
		t.Errorf("gone: %v", err)
	}
	if _, err := target.update(ctx, "moved", 3, store.Breadcrumb{Title: "a.go"}); !isVersionMismatch(err) {
		t.Errorf("moved: %v", err)
	}
	err = target.delete(ctx, "theirs")
	if !isForbidden(err) || err.Error() != "Forbidden (403 )" {
		t.Errorf("theirs: %v", err)
	}

	ts.Close()
	if err := target.delete(ctx, "any"); err == nil || !strings.HasPrefix(err.Error(), "--server: ") {
		t.Errorf("closed server: %v", err)
	}
}

// TestServerTargetAgent: the agent is the subject of the token, read
// without checking it (the server does).
func TestServerTargetAgent(t *testing.T) {
	claims := func(json string) string {
		return "h." + base64.RawURLEncoding.EncodeToString([]byte(json)) + ".s"
	}
	for token, want := range map[string]string{
		claims(`{"sub":"indexer"}`): "indexer",
		claims(`{"sub":""}`):        "--token: names no agent",
		"one.part":                  "--token: not a ctxkit token",
		"h.!!.s":                    "--token: illegal base64 data at input byte 0",
	} {
		got, err := NewServerTarget("http://127.0.0.1:1", token, nil).agent()
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: %q, want %q", token, got, want)
		}
	}
}
