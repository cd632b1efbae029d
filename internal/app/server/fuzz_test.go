package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// FuzzCreate sends arbitrary bodies and headers to POST /breadcrumbs and
// PATCH: every one is answered with a success or a 4xx JSON error naming the
// problem, never a 5xx or a panic.
func FuzzCreate(f *testing.F) {
	for _, seed := range []string{
		`{"title":"t","context":{}}`,
		`{"title":"t","context":{"a":[1,{"b":null}]},"tags":["x","y"],"llm_hints":{"exclude":["a"]}}`,
		`{"title":"t","context":{},"ttl":"2h"}`,
		`{"title":"t","context":{},"ttl_type":"hybrid","ttl_config":{"duration":"1h","max_reads":3}}`,
		`{"title":"t","context":{},"ttl_type":"datetime","ttl":"2030-01-01T00:00:00Z"}`,
		`{"title":"t","context":{},"visibility":"private","sensitivity":"pii"}`,
		`{"title":"t","context":{},"llm_hints":{"transform":{"x":{"type":"jq","query":".a"}}}}`,
		`{"title":1}`, `[]`, `{"title":"t","context":{}}{}`, "{\"title\":\"\xff\"}",
	} {
		f.Add(seed, "1", "k")
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	h := server.New(server.Options{Store: db, Key: key, MaxBodyBytes: 32 << 10}).Handler()
	tok, _ := server.Mint(key, server.Principal{OwnerID: "o", AgentID: "a", Roles: []string{"curator"}}, time.Hour, time.Now())
	create := httptest.NewRequest("POST", "/breadcrumbs", strings.NewReader(`{"title":"base","context":{"n":1}}`))
	create.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, create)
	id := strings.Split(rec.Body.String(), `"`)[3]

	f.Fuzz(func(t *testing.T, body, ifMatch, idemKey string) {
		for _, r := range []struct{ method, path string }{{"POST", "/breadcrumbs"}, {"PATCH", "/breadcrumbs/" + id}, {"POST", "/views/preview"}} {
			req := httptest.NewRequest(r.method, r.path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("If-Match", ifMatch)
			req.Header.Set("Idempotency-Key", idemKey)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s %q: %d %s", r.method, r.path, body, rec.Code, rec.Body)
			}
			if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error":{"code":`) {
				t.Fatalf("%s %s: %d without a JSON error: %s", r.method, r.path, rec.Code, rec.Body)
			}
		}
	})
}
