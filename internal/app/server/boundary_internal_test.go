package server

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/console"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// boundaryServer starts a server over a fresh store (PostgreSQL when
// CTXKIT_TEST_STORE=postgres) on loopback.
func boundaryServer(t *testing.T, tweaks ...func(*Options)) (*Server, string, ed25519.PrivateKey) {
	t.Helper()
	var (
		db  store.Store
		err error
	)
	if os.Getenv("CTXKIT_TEST_STORE") == "postgres" {
		db, err = postgres.Open(context.Background(), pgtest.Shared(t).NewDatabase(t))
	} else {
		db, err = sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
	}
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	opts := Options{Store: db, Key: key, MaxBodyBytes: 64 << 10}
	for _, f := range tweaks {
		f(&opts)
	}
	s := New(opts)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.StopStreams(); srv.Close(); db.Close() })
	return s, srv.URL, key
}

// strangerRequest is a request no valid token stands behind: a random
// method (known ones, made-up ones, now and then 256 KiB long), a random
// path (under the real routes too), random headers and a random, forged or
// missing token.
func strangerRequest(rng *rand.Rand, base string, forged string) *http.Request {
	word := func(n int) string {
		const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	var method string
	switch n := rng.IntN(100); {
	case n == 0:
		method = word(256 << 10)
	case n < 40:
		method = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}[rng.IntN(8)]
	default:
		method = word(1 + rng.IntN(64))
	}
	path := []string{"/health", "/breadcrumbs", "/breadcrumbs/" + word(8), "/breadcrumbs/" + word(8) + "/full",
		"/views/preview", "/metrics", "/mcp", "/relay", "/v1/messages", "/breadcrumbs/search", "/" + word(1+rng.IntN(200)),
		"/" + word(5) + "/" + word(5) + "/", "/ui", "/health/" + word(3)}[rng.IntN(14)]
	var body io.Reader
	if rng.IntN(3) == 0 {
		body = strings.NewReader(`{"llm_hints":{"exclude":["` + word(20) + `"]},"context":{"a":1}}`)
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		panic(err)
	}
	switch rng.IntN(4) {
	case 0:
		req.Header.Set("Authorization", "Bearer "+word(1+rng.IntN(300)))
	case 1:
		req.Header.Set("Authorization", "Bearer "+forged)
	case 2:
		req.Header.Set("x-api-key", word(40))
	}
	for range rng.IntN(4) {
		req.Header.Set("X-"+word(1+rng.IntN(30)), word(rng.IntN(200)))
	}
	if rng.IntN(4) == 0 {
		req.Header.Set("Idempotency-Key", word(1+rng.IntN(100)))
	}
	return req
}

// flood sends n stranger requests over 8 keep-alive connections.
func flood(t *testing.T, base, forged string, seed uint64, n int) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range n / 8 {
				resp, err := client.Do(strangerRequest(rng, base, forged))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				// Liveness, the API's description and the console's
				// pages (which sign in themselves) are public.
				if p := resp.Request.URL.Path; resp.StatusCode < 400 && p != "/health" && p != "/openapi.json" && !strings.HasPrefix(p, console.Prefix) {
					errs <- fmt.Errorf("%.40s %s: %d without a token", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func (s *Server) series(t *testing.T) int {
	t.Helper()
	n := 0
	for _, f := range s.metrics.reg.Gather() {
		n += len(f.Series)
	}
	return n
}

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // the second cycle frees what sync.Pools let go of in the first
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestStrangersLeaveNoState: 10,000 requests without a valid token (random
// methods, 1% of them 256 KiB long, random paths, headers and tokens) leave
// the number of metric series, the token cache and the view caches as they
// were, and the heap within a few MiB of where it started. Before, every
// new method was a new series kept for good: the heap grew by tens of MiB.
func TestStrangersLeaveNoState(t *testing.T) {
	s, base, key := boundaryServer(t)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	forged, err := Mint(otherKey, Principal{OwnerID: "acme", AgentID: "x", Roles: []string{RoleCurator}}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A known good token in the cache, which strangers must not evict.
	good, err := Mint(key, Principal{OwnerID: "acme", AgentID: "a", Roles: []string{RoleCurator}}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+good)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := get("/metrics"); st != 200 {
		t.Fatalf("GET /metrics: %d", st)
	}
	// The first requests create the few series strangers can reach (each
	// route's 401, unmatched 404 and 405, OTHER): the bound is what holds after.
	flood(t, base, forged, 1, 2000)
	http.DefaultClient.CloseIdleConnections()

	series, tokens, views, results := s.series(t), s.tokens.Len(), s.views.Len(), s.results.Len()
	heap := heapAfterGC()
	flood(t, base, forged, 2, 10000)
	grown := int64(heapAfterGC()) - int64(heap)

	if n := s.series(t); n != series {
		t.Errorf("metric series: %d before, %d after 10,000 requests without a token", series, n)
	}
	if s.tokens.Len() != tokens || s.views.Len() != views || s.results.Len() != results {
		t.Errorf("caches grew: tokens %d→%d, views %d→%d, results %d→%d",
			tokens, s.tokens.Len(), views, s.views.Len(), results, s.results.Len())
	}
	if _, ok := s.tokens.Get(sha256.Sum256([]byte(good))); !ok {
		t.Error("the good token was evicted from the token cache")
	}
	t.Logf("heap after GC: %d KiB before, %+d KiB after 10,000 requests; %d series", heap>>10, grown>>10, series)
	if grown > 4<<20 {
		t.Errorf("heap grew by %d KiB after 10,000 requests without a token; want under 4 MiB", grown>>10)
	}
	// What strangers reach is counted, under fixed labels.
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+good)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{`method="OTHER",route="unmatched",status="404"`, `method="POST",route="POST /views/preview",status="401"`} {
		if !bytes.Contains(text, []byte(line)) {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// TestPreviewsLeaveTheViewCache: previews of ever new hints (any valid
// token can send them) neither grow the compiled-view cache nor evict the
// stored records' views from it.
func TestPreviewsLeaveTheViewCache(t *testing.T) {
	s, base, key := boundaryServer(t)
	tok, err := Mint(key, Principal{OwnerID: "acme", AgentID: "a", Roles: []string{RoleEmitter}}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, body any) (int, []byte) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, out
	}
	post := func(path string, body any) int { st, _ := do("POST", path, body); return st }
	stored := map[string]any{"exclude": []string{"secret"}}
	st, out := do("POST", "/breadcrumbs", map[string]any{"title": "t", "context": map[string]any{"a": 1}, "llm_hints": stored})
	var created struct{ ID string }
	if json.Unmarshal(out, &created); st != 201 {
		t.Fatalf("create: %d", st)
	}
	if st, _ := do("GET", "/breadcrumbs/"+created.ID, nil); st != 200 {
		t.Fatalf("read: %d", st)
	}
	before := s.views.Len()
	for i := range 2000 {
		if st := post("/views/preview", map[string]any{"llm_hints": map[string]any{"exclude": []string{fmt.Sprint("f", i)}}, "context": map[string]any{"a": 1}}); st != 200 {
			t.Fatalf("preview %d: %d", i, st)
		}
	}
	if n := s.views.Len(); n != before {
		t.Errorf("compiled views: %d before 2,000 previews, %d after", before, n)
	}
	// A preview of hints a stored record uses is still served from the cache.
	h, _ := json.Marshal(stored)
	v1, err := s.views.CompileUncached(h)
	if err != nil {
		t.Fatal(err)
	}
	if v2, _ := s.views.Compile(h); v1 != v2 {
		t.Error("a preview of a stored record's hints compiled them again")
	}
}

// TestLabelsAreBounded: method, status and route labels take their values
// from fixed sets, whatever the request or an upstream sent.
func TestLabelsAreBounded(t *testing.T) {
	for in, want := range map[string]string{"GET": "GET", "PATCH": "PATCH", "get": "OTHER", "FOO": "OTHER", strings.Repeat("X", 1<<16): "OTHER"} {
		if got := methodLabel(in); got != want {
			t.Errorf("methodLabel(%.10q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int]string{200: "200", 503: "503", 299: "2xx", 599: "5xx", 999: "other", 0: "other"} {
		if got := statusLabel(in); got != want {
			t.Errorf("statusLabel(%d) = %q, want %q", in, got, want)
		}
	}
	m := newRouter()
	m.HandleFunc("GET /a/{id}", func(http.ResponseWriter, *http.Request) {})
	m.HandleFunc("/", func(http.ResponseWriter, *http.Request) {})
	for in, want := range map[string]string{"GET /a/{id}": "GET /a/{id}", "/": "unmatched", "": "unmatched", "/a/x": "unmatched", "GET /b": "unmatched"} {
		if got := m.routeLabel(in); got != want {
			t.Errorf("routeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestViewCacheIsBoundedInBytes: views of large records are kept only up to
// the cache's byte budget, however many a reader asks for.
func TestViewCacheIsBoundedInBytes(t *testing.T) {
	s, base, key := boundaryServer(t, func(o *Options) { o.ViewCacheBytes = 1 << 20 })
	tok, err := Mint(key, Principal{OwnerID: "acme", AgentID: "a", Roles: []string{RoleEmitter}}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, body []byte) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, out
	}
	for i := range 40 {
		body, _ := json.Marshal(map[string]any{"title": fmt.Sprint("r", i), "llm_hints": map[string]any{"exclude": []string{"x"}},
			"context": map[string]any{"big": strings.Repeat("y", 60<<10), "x": 1}})
		st, out := do("POST", "/breadcrumbs", body)
		var created struct{ ID string }
		if json.Unmarshal(out, &created); st != 201 {
			t.Fatalf("create %d: %d %s", i, st, out)
		}
		if st, _ := do("GET", "/breadcrumbs/"+created.ID, nil); st != 200 {
			t.Fatalf("read %d: %d", i, st)
		}
	}
	if n, b := s.results.Len(), s.results.Bytes(); b > 1<<20 || n >= 40 || n == 0 {
		t.Errorf("the view cache holds %d views of %d bytes; the budget is 1 MiB", n, b)
	}
}
