package server_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

type env struct {
	t   testing.TB
	url string
	key ed25519.PrivateKey
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// newStore opens a fresh store: SQLite, or PostgreSQL (a fresh database on
// the throwaway server) when CTXKIT_TEST_STORE=postgres, so the whole server
// suite runs on either backend.
func newStore(t testing.TB) store.Store {
	t.Helper()
	if os.Getenv("CTXKIT_TEST_STORE") == "postgres" {
		return openPostgres(t, pgtest.Shared(t).NewDatabase(t))
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func openPostgres(t testing.TB, url string) store.Store {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// newEnv starts a real server on loopback over a fresh store.
func newEnv(t testing.TB, tweaks ...func(*server.Options)) *env {
	t.Helper()
	return newEnvOn(t, newStore(t), nil, tweaks...)
}

// newEnvOn starts a server on db; a nil key makes a new one.
func newEnvOn(t testing.TB, db store.Store, key ed25519.PrivateKey, tweaks ...func(*server.Options)) *env {
	t.Helper()
	if key == nil {
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	}
	opts := server.Options{Store: db, Key: key, MaxBodyBytes: 64 << 10}
	for _, f := range tweaks {
		f(&opts)
	}
	api := server.New(opts)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { api.StopStreams(); srv.Close(); db.Close() })
	return &env{t: t, url: srv.URL, key: key}
}

func (e *env) token(owner, agent string, roles ...string) string {
	e.t.Helper()
	tok, err := server.Mint(e.key, server.Principal{OwnerID: owner, AgentID: agent, Roles: roles}, time.Hour, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("reply %d is not a JSON object: %s", r.status, r.body)
	}
	return m
}

func (e *env) do(method, path, token string, body any, headers ...string) reply {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

func (e *env) create(token string, body any) string {
	e.t.Helper()
	r := e.do("POST", "/breadcrumbs", token, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("create: %d %s", r.status, r.body)
	}
	return r.json(e.t)["id"].(string)
}

func want(t *testing.T, r reply, status int, substr string) {
	t.Helper()
	if r.status != status || !strings.Contains(string(r.body), substr) {
		t.Fatalf("got %d %s; want %d containing %q", r.status, r.body, status, substr)
	}
}

func TestHealthNeedsNoToken(t *testing.T) {
	e := newEnv(t)
	want(t, e.do("GET", "/health", "", nil), 200, `"ok"`)
	want(t, e.do("GET", "/nope", "", nil), 404, `"not_found"`)
	r := e.do("PUT", "/breadcrumbs/01900000-0000-7000-8000-000000000000", "", nil)
	want(t, r, 405, `"method_not_allowed"`)
	if r.header.Get("Allow") != "GET, PATCH, DELETE" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	want(t, e.do("DELETE", "/breadcrumbs", "", nil), 405, "use GET, POST")
}

func TestAuthDenials(t *testing.T) {
	e := newEnv(t)
	emitter := e.token("acme", "a", server.RoleEmitter)
	id := e.create(emitter, map[string]any{"title": "t", "context": map[string]any{}})

	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	foreign, _ := server.Mint(otherKey, server.Principal{OwnerID: "acme", AgentID: "a", Roles: []string{"curator"}}, time.Hour, time.Now())
	expired, _ := server.Mint(e.key, server.Principal{OwnerID: "acme", AgentID: "a", Roles: []string{"curator"}}, time.Minute, time.Now().Add(-time.Hour))
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "a", "owner_id": "acme", "roles": []string{"curator"}, "exp": time.Now().Add(time.Hour).Unix()})
	hsTok, _ := hs.SignedString([]byte("secret"))
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "a", "owner_id": "acme", "roles": []string{"curator"}, "exp": time.Now().Add(time.Hour).Unix()})
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	noExp, _ := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "a", "owner_id": "acme", "roles": []string{"curator"}}).SignedString(e.key)
	badRole, _ := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "a", "owner_id": "acme", "roles": []string{"god"}, "exp": time.Now().Add(time.Hour).Unix()}).SignedString(e.key)

	endpoints := []struct{ method, path string }{
		{"POST", "/breadcrumbs"}, {"GET", "/breadcrumbs"}, {"GET", "/breadcrumbs/" + id}, {"GET", "/breadcrumbs/" + id + "/full"},
		{"PATCH", "/breadcrumbs/" + id}, {"DELETE", "/breadcrumbs/" + id}, {"GET", "/breadcrumbs/" + id + "/history"},
		{"POST", "/breadcrumbs/" + id + "/tags/add"}, {"POST", "/breadcrumbs/" + id + "/tags/remove"},
		{"POST", "/breadcrumbs/" + id + "/context/merge"}, {"POST", "/views/preview"},
	}
	for _, ep := range endpoints {
		for name, tok := range map[string]string{"none": "", "garbage": "x.y.z", "foreign key": foreign, "expired": expired,
			"HS256": hsTok, "alg none": noneTok, "no exp": noExp, "unknown role": badRole} {
			r := e.do(ep.method, ep.path, tok, "{}")
			if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `"unauthorized"`) {
				t.Errorf("%s %s with %s token: %d %s", ep.method, ep.path, name, r.status, r.body)
			}
		}
	}

	if r := e.do("GET", "/breadcrumbs", "", nil); r.header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	if r := e.do("GET", "/breadcrumbs", "", nil, "Authorization", "bearer "+emitter); r.status != 200 {
		t.Fatalf("lower-case scheme: %d", r.status)
	}
	sub := e.token("acme", "s", server.RoleSubscriber)
	want(t, e.do("POST", "/breadcrumbs", sub, map[string]any{"title": "t", "context": map[string]any{}}), 403, "emitter")
	want(t, e.do("PATCH", "/breadcrumbs/"+id, sub, map[string]any{"title": "x"}), 403, "emitter")
	want(t, e.do("POST", "/breadcrumbs/"+id+"/tags/add", sub, map[string]any{"tags": []string{"x"}}), 403, "emitter")
	want(t, e.do("POST", "/breadcrumbs/"+id+"/context/merge", sub, map[string]any{"context": map[string]any{}}), 403, "emitter")
	want(t, e.do("DELETE", "/breadcrumbs/"+id, emitter, nil), 403, "curator")
	want(t, e.do("GET", "/breadcrumbs/"+id, sub, nil), 200, id) // every role reads
	want(t, e.do("DELETE", "/breadcrumbs/"+id, e.token("acme", "c", server.RoleCurator), nil), 204, "")
}

func TestBreadcrumbLifecycle(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "alice", server.RoleEmitter)
	r := e.do("POST", "/breadcrumbs", tok, map[string]any{
		"title": "Team", "tags": []string{"team", "roster"}, "schema_name": "team.v1",
		"context":   map[string]any{"users": []any{map[string]any{"name": "Ann", "email": "ann@x"}}, "api_key": "sk-1"},
		"llm_hints": map[string]any{"exclude": []string{"api_key", "users.email"}, "mode": "merge", "transform": map[string]any{"summary": map[string]any{"type": "template", "template": "{{title}}: {{context.users.length}}"}}},
	})
	want(t, r, 201, `"version":1`)
	id := r.json(t)["id"].(string)
	if r.header.Get("Location") != "/breadcrumbs/"+id {
		t.Fatalf("Location %q", r.header.Get("Location"))
	}

	v := e.do("GET", "/breadcrumbs/"+id, tok, nil)
	want(t, v, 200, `"summary":"Team: 1"`)
	if strings.Contains(string(v.body), "sk-1") || strings.Contains(string(v.body), "ann@x") {
		t.Fatalf("view leaked excluded fields: %s", v.body)
	}
	meta := v.json(t)["meta"].(map[string]any)
	if meta["status"] != "OK" || v.json(t)["title"] != "Team" {
		t.Fatalf("view: %s", v.body)
	}
	want(t, e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil), 200, `"api_key":"sk-1"`)

	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"title": "Team 2"}, "If-Match", "1"), 200, `"version":2`)
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"title": "stale"}, "If-Match", `"1"`), 412, "version_mismatch")
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"title": "x"}, "If-Match", "abc"), 400, "If-Match")
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"description": "If-Match * takes any version"}, "If-Match", "*"), 200, `"version":3`)
	// The view follows the new version (no stale cache).
	want(t, e.do("GET", "/breadcrumbs/"+id, tok, nil), 200, `"summary":"Team 2: 1"`)

	want(t, e.do("POST", "/breadcrumbs/"+id+"/tags/add", tok, map[string]any{"tags": []string{"new", "team"}}), 200, `"tags":["new","roster","team"]`)
	want(t, e.do("POST", "/breadcrumbs/"+id+"/tags/remove", tok, map[string]any{"tags": []string{"roster"}}), 200, `"tags":["new","team"]`)
	want(t, e.do("POST", "/breadcrumbs/"+id+"/context/merge", tok, map[string]any{"context": map[string]any{"lead": "Ann"}}), 200, `"lead":"Ann"`)
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"llm_hints": nil}), 200, `"version":7`)
	want(t, e.do("GET", "/breadcrumbs/"+id, tok, nil), 200, `"api_key":"sk-1"`) // hints cleared: the view is the context

	l := e.do("GET", "/breadcrumbs?tag=team&tag=new&schema_name=team.v1", tok, nil)
	want(t, l, 200, id)
	if strings.Contains(string(l.body), `"context"`) {
		t.Fatalf("list without include_context carried context: %s", l.body)
	}
	want(t, e.do("GET", "/breadcrumbs?include_context=true", tok, nil), 200, `"lead":"Ann"`)
	want(t, e.do("GET", "/breadcrumbs?tag=nope", tok, nil), 200, `"items":[]`)
	want(t, e.do("GET", "/breadcrumbs?limit=501", tok, nil), 400, "limit")

	h := e.do("GET", "/breadcrumbs/"+id+"/history", tok, nil)
	want(t, h, 200, `"version":7`)
	if items := h.json(t)["items"].([]any); len(items) != 7 || items[0].(map[string]any)["version"].(float64) != 7 {
		t.Fatalf("history: %s", h.body)
	}
	cur := e.token("acme", "root", server.RoleCurator)
	want(t, e.do("DELETE", "/breadcrumbs/"+id, cur, nil), 204, "")
	want(t, e.do("GET", "/breadcrumbs/"+id, tok, nil), 404, "not_found")
	want(t, e.do("GET", "/breadcrumbs/"+id+"/history", tok, nil), 404, "not_found")
	want(t, e.do("GET", "/breadcrumbs/"+id+"/history", cur, nil), 200, `"version":7`)
}

func TestPaging(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	for i := 0; i < 5; i++ {
		e.create(tok, map[string]any{"title": fmt.Sprint(i), "context": map[string]any{}})
	}
	seen := map[string]bool{}
	path := "/breadcrumbs?limit=2"
	for pages := 0; pages < 5; pages++ {
		m := e.do("GET", path, tok, nil).json(t)
		for _, it := range m["items"].([]any) {
			seen[it.(map[string]any)["id"].(string)] = true
		}
		next, ok := m["next_cursor"].(string)
		if !ok {
			break
		}
		path = "/breadcrumbs?limit=2&cursor=" + next
	}
	if len(seen) != 5 {
		t.Fatalf("pages gave %d distinct records", len(seen))
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	body := `{"title": "once", "context": {}}`
	first := e.do("POST", "/breadcrumbs", tok, body, "Idempotency-Key", "k-1")
	second := e.do("POST", "/breadcrumbs", tok, body, "Idempotency-Key", "k-1")
	want(t, second, 201, first.json(t)["id"].(string))
	if second.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("replay not marked")
	}
	want(t, e.do("POST", "/breadcrumbs", tok, `{"title": "other", "context": {}}`, "Idempotency-Key", "k-1"), 409, "idempotency_conflict")
	if items := e.do("GET", "/breadcrumbs", tok, nil).json(t)["items"].([]any); len(items) != 1 {
		t.Fatalf("%d records after a replay", len(items))
	}
}

func TestOwnerIsolationOverHTTP(t *testing.T) {
	e := newEnv(t)
	alice := e.token("acme", "alice", server.RoleEmitter)
	bob := e.token("acme", "bob", server.RoleEmitter)
	acmeRoot := e.token("acme", "root", server.RoleCurator)
	evil := e.token("evil", "mallory", server.RoleCurator)
	team := e.create(alice, map[string]any{"title": "team", "context": map[string]any{"k": 1}})
	pub := e.create(alice, map[string]any{"title": "pub", "context": map[string]any{"k": 2}, "visibility": "public"})
	priv := e.create(alice, map[string]any{"title": "priv", "context": map[string]any{"k": 3}, "visibility": "private"})

	for _, id := range []string{team, priv} {
		for _, p := range []string{"", "/full", "/history"} {
			want(t, e.do("GET", "/breadcrumbs/"+id+p, evil, nil), 404, "not_found")
		}
	}
	want(t, e.do("GET", "/breadcrumbs/"+pub, evil, nil), 200, `"k":2`)
	want(t, e.do("GET", "/breadcrumbs/"+pub+"/full", evil, nil), 200, `"k":2`)
	want(t, e.do("GET", "/breadcrumbs/"+pub+"/history", evil, nil), 404, "not_found")
	for _, id := range []string{team, pub, priv} {
		want(t, e.do("PATCH", "/breadcrumbs/"+id, evil, map[string]any{"title": "pwned"}), 404, "not_found")
		want(t, e.do("POST", "/breadcrumbs/"+id+"/tags/add", evil, map[string]any{"tags": []string{"x"}}), 404, "not_found")
		want(t, e.do("POST", "/breadcrumbs/"+id+"/context/merge", evil, map[string]any{"context": map[string]any{"x": 1}}), 404, "not_found")
		want(t, e.do("DELETE", "/breadcrumbs/"+id, evil, nil), 404, "not_found")
	}
	want(t, e.do("GET", "/breadcrumbs", evil, nil), 200, `"items":[]`)

	want(t, e.do("GET", "/breadcrumbs/"+priv, bob, nil), 404, "not_found")
	want(t, e.do("PATCH", "/breadcrumbs/"+priv, bob, map[string]any{"title": "x"}), 404, "not_found")
	if strings.Contains(string(e.do("GET", "/breadcrumbs", bob, nil).body), priv) {
		t.Fatal("a teammate listed a private record")
	}
	want(t, e.do("GET", "/breadcrumbs/"+priv, acmeRoot, nil), 200, `"k":3`)
	want(t, e.do("GET", "/breadcrumbs/"+priv, alice, nil), 200, `"k":3`)
}

func TestBadInputChangesNothing(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "keep", "context": map[string]any{"v": 1}})
	tags := make([]string, 65)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	deep := strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70)
	cases := []struct {
		name, method, path string
		body               any
		status             int
		substr             string
	}{
		{"too large", "POST", "/breadcrumbs", `{"title":"t","context":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`, 413, "too_large"},
		{"unknown field", "POST", "/breadcrumbs", `{"title":"t","context":{},"colour":"red"}`, 400, `unknown field \"colour\"`},
		{"invalid utf-8", "POST", "/breadcrumbs", "{\"title\":\"\xff\",\"context\":{}}", 400, "invalid_utf8"},
		{"too deep", "POST", "/breadcrumbs", `{"title":"t","context":` + deep + `}`, 400, "too_deep"},
		{"not json", "POST", "/breadcrumbs", `{"title":`, 400, "invalid_json"},
		{"two values", "POST", "/breadcrumbs", `{"title":"t","context":{}} {}`, 400, "more than one"},
		{"trailing brace", "POST", "/breadcrumbs", `{"title":"t","context":{}}}`, 400, "invalid_json"},
		{"past ttl", "POST", "/breadcrumbs", `{"title":"t","context":{},"ttl":"2001-01-01T00:00:00Z"}`, 400, "already past"},
		{"wrong type", "POST", "/breadcrumbs", `{"title":1,"context":{}}`, 400, "title: must be a string"},
		{"no title", "POST", "/breadcrumbs", `{"context":{}}`, 400, "title: required"},
		{"context not object", "POST", "/breadcrumbs", `{"title":"t","context":[1]}`, 400, "context: must be a JSON object"},
		{"too many tags", "POST", "/breadcrumbs", map[string]any{"title": "t", "context": map[string]any{}, "tags": tags}, 400, "tags: 65 tags"},
		{"long title", "POST", "/breadcrumbs", map[string]any{"title": strings.Repeat("t", 513), "context": map[string]any{}}, 400, "title: 513 bytes"},
		{"bad hints", "POST", "/breadcrumbs", `{"title":"t","context":{},"llm_hints":{"transform":{"n":{"type":"jq","query":".a | ]"}}}}`, 400, "llm_hints.transform.n.query"},
		{"bad visibility", "POST", "/breadcrumbs", `{"title":"t","context":{},"visibility":"world"}`, 400, "visibility"},
		{"bad ttl", "POST", "/breadcrumbs", `{"title":"t","context":{},"ttl":"tomorrow"}`, 400, "ttl"},
		{"bad ttl type", "POST", "/breadcrumbs", `{"title":"t","context":{},"ttl_type":"forever"}`, 400, "ttl_type"},
		{"usage without reads", "POST", "/breadcrumbs", `{"title":"t","context":{},"ttl_type":"usage"}`, 400, "max_reads"},
		{"patch unknown field", "PATCH", "/breadcrumbs/" + id, `{"owner_id":"evil"}`, 400, "unknown field"},
		{"patch bad context", "PATCH", "/breadcrumbs/" + id, `{"context":"text"}`, 400, "context"},
		{"patch bad hints", "PATCH", "/breadcrumbs/" + id, `{"llm_hints":{"mode":"sideways"}}`, 400, "llm_hints.mode"},
		{"merge non-object", "POST", "/breadcrumbs/" + id + "/context/merge", `{"context":[1]}`, 400, "JSON object"},
		{"merge missing", "POST", "/breadcrumbs/" + id + "/context/merge", `{}`, 400, "context: required"},
		{"tags empty", "POST", "/breadcrumbs/" + id + "/tags/add", `{"tags":[]}`, 400, "at least one"},
		{"tags too long", "POST", "/breadcrumbs/" + id + "/tags/add", map[string]any{"tags": []string{strings.Repeat("x", 129)}}, 400, "tags"},
		{"bad cursor", "GET", "/breadcrumbs?cursor=zzz", nil, 400, "cursor"},
	}
	for _, c := range cases {
		r := e.do(c.method, c.path, tok, c.body)
		if r.status != c.status || !strings.Contains(string(r.body), c.substr) {
			t.Errorf("%s: %d %s; want %d containing %q", c.name, r.status, r.body, c.status, c.substr)
		}
	}
	full := e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil).json(t)
	if full["version"].(float64) != 1 || full["title"] != "keep" {
		t.Fatalf("bad input changed the record: %v", full)
	}
	if items := e.do("GET", "/breadcrumbs", tok, nil).json(t)["items"].([]any); len(items) != 1 {
		t.Fatalf("bad input created records: %d", len(items))
	}
}

func TestViewFailsClosedWithoutHanging(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "t", "context": map[string]any{"public": 1, "secret": "sk"},
		"llm_hints": map[string]any{"exclude": []string{"secret"}, "transform": map[string]any{"spin": map[string]any{"type": "jq", "query": "def f: f; f"}}}})
	start := time.Now()
	r := e.do("GET", "/breadcrumbs/"+id, tok, nil)
	want(t, r, 200, `"status":"FALLBACK"`)
	if strings.Contains(string(r.body), "sk") || !strings.Contains(string(r.body), `"public":1`) {
		t.Fatalf("fallback is not the filtered context: %s", r.body)
	}
	if !strings.Contains(string(r.body), "deadline") {
		t.Fatalf("fallback without the reason: %s", r.body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("view took %v", d)
	}
}

func TestPreview(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleSubscriber)
	want(t, e.do("POST", "/views/preview", tok, map[string]any{
		"llm_hints": map[string]any{"transform": map[string]any{"h": map[string]any{"type": "template", "template": "# {{title}} ({{context.n}})"}}},
		"context":   map[string]any{"n": 3}, "title": "Draft",
	}), 200, `"h":"# Draft (3)"`)
	want(t, e.do("POST", "/views/preview", tok, map[string]any{
		"llm_hints": map[string]any{"transform": map[string]any{"h": map[string]any{"type": "jq", "query": "error(\"no\")"}}},
		"context":   map[string]any{"n": 3},
	}), 200, `"status":"FALLBACK"`)
	// A path that exists only under context. renders "" and says so, in the
	// preview and in a stored breadcrumb's view.
	hints := map[string]any{"transform": map[string]any{"h": map[string]any{"type": "template", "template": "{{#each users}}{{name}}{{/each}}"}}}
	want(t, e.do("POST", "/views/preview", tok, map[string]any{"llm_hints": hints, "context": map[string]any{"users": []any{map[string]any{"name": "ada"}}}}),
		200, `"warnings":[{"path":"transform.h","message":"\"users\" is not a record field, so it rendered as nothing; the context has one: write context.users"}]`)
	emitter := e.token("acme", "w", server.RoleEmitter)
	id := e.create(emitter, map[string]any{"title": "t", "context": map[string]any{"users": []any{}}, "llm_hints": hints})
	want(t, e.do("GET", "/breadcrumbs/"+id, tok, nil), 200, `"warnings":[{"path":"transform.h"`)
	want(t, e.do("POST", "/views/preview", tok, map[string]any{"llm_hints": map[string]any{"mode": "x"}, "context": map[string]any{}}), 400, "llm_hints.mode")
	want(t, e.do("POST", "/views/preview", tok, map[string]any{"llm_hints": map[string]any{}}), 400, "context: required")
	if items := e.do("GET", "/breadcrumbs", tok, nil).json(t)["items"].([]any); len(items) != 1 {
		t.Fatal("preview stored something")
	}
}

// TestViewMetaVocabulary: a view's meta speaks the envelope's vocabulary:
// a stored breadcrumb's view is source STORE, a preview source VIEW, both
// FRESH; status OK, or FALLBACK with the view error's code.
func TestViewMetaVocabulary(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	plain := e.create(tok, map[string]any{"title": "t", "context": map[string]any{"n": 1}})
	want(t, e.do("GET", "/breadcrumbs/"+plain, tok, nil), 200, `"meta":{"status":"OK","source":"STORE","freshness_state":"FRESH"}`)
	failing := e.create(tok, map[string]any{"title": "t", "context": map[string]any{"n": 1},
		"llm_hints": map[string]any{"transform": map[string]any{"h": map[string]any{"type": "jq", "query": "error(\"no\")"}}}})
	r := e.do("GET", "/breadcrumbs/"+failing, tok, nil)
	want(t, r, 200, `"meta":{"status":"FALLBACK","error_code":"rule_failed","message":`)
	want(t, r, 200, `,"source":"STORE","freshness_state":"FRESH"}`)
	want(t, e.do("POST", "/views/preview", tok, map[string]any{"llm_hints": map[string]any{"exclude": []string{"n"}}, "context": map[string]any{"n": 1, "m": 2}}),
		200, `{"context":{"m":2},"meta":{"status":"OK","source":"VIEW","freshness_state":"FRESH"}}`)
}

func TestTTL(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "t", "context": map[string]any{}, "ttl": "1h"})
	full := e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil).json(t)
	exp, err := time.Parse(time.RFC3339, full["expires_at"].(string))
	if err != nil || time.Until(exp) < 59*time.Minute || time.Until(exp) > 61*time.Minute {
		t.Fatalf("expires_at %v %v", full["expires_at"], err)
	}
	id = e.create(tok, map[string]any{"title": "t", "context": map[string]any{}, "ttl_type": "usage", "ttl_config": map[string]any{"max_reads": 2}})
	want(t, e.do("GET", "/breadcrumbs/"+id, tok, nil), 200, id)
	want(t, e.do("GET", "/breadcrumbs/"+id, tok, nil), 200, id)
	want(t, e.do("GET", "/breadcrumbs/"+id, tok, nil), 404, "not_found")
	id = e.create(tok, map[string]any{"title": "t", "context": map[string]any{}, "ttl_type": "hybrid", "ttl_config": map[string]any{"duration": "2h", "max_reads": 5}})
	full = e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil).json(t)
	if full["max_reads"].(float64) != 5 || full["expires_at"] == nil {
		t.Fatalf("hybrid: %v", full)
	}
	past := time.Now().Add(-time.Minute).Format(time.RFC3339)
	want(t, e.do("POST", "/breadcrumbs", tok, map[string]any{"title": "t", "context": map[string]any{}, "ttl_type": "datetime", "ttl": past}), 400, "already past")
	// The raw record counts against a read budget too, and history does not outlive it.
	id = e.create(tok, map[string]any{"title": "t", "context": map[string]any{"otp": "123"}, "ttl_type": "usage", "ttl_config": map[string]any{"max_reads": 1}})
	want(t, e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil), 200, "otp")
	want(t, e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil), 404, "not_found")
	want(t, e.do("GET", "/breadcrumbs/"+id+"/history", tok, nil), 404, "not_found")
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleCurator)
	writer := e.token("acme", "w", server.RoleEmitter)
	want(t, e.do("GET", "/metrics", "", nil), 401, "unauthorized")
	want(t, e.do("GET", "/metrics", writer, nil), 403, "curator")
	id := e.create(writer, map[string]any{"title": "t", "context": map[string]any{"a": 1}, "llm_hints": map[string]any{"exclude": []string{"a"}}})
	e.do("GET", "/breadcrumbs/"+id, tok, nil)
	e.do("GET", "/breadcrumbs/"+id, tok, nil)
	r := e.do("GET", "/metrics", tok, nil)
	for _, line := range []string{
		`ctxkit_http_requests_total{method="POST",route="POST /breadcrumbs",status="201"} 1`,
		`ctxkit_http_requests_total{method="GET",route="GET /breadcrumbs/{id}",status="200"} 2`,
		`ctxkit_view_cache_total{result="hit"} 1`,
		`ctxkit_view_cache_total{result="miss"} 1`,
		`ctxkit_views_total{status="OK"} 1`,
		`ctxkit_http_request_duration_seconds_bucket{route="GET /breadcrumbs/{id}"`,
		`ctxkit_store_errors_total 0`,
	} {
		if !strings.Contains(string(r.body), line) {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// TestOpenAPIDocumentsEveryRoute: the served document is valid JSON and lists
// every method and path the server routes.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/openapi.json", "", nil)
	want(t, r, 200, `"openapi": "3.1.0"`)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	routes := []string{"GET /health", "GET /openapi.json", "GET /metrics", "POST /breadcrumbs", "GET /breadcrumbs",
		"GET /breadcrumbs/{id}", "GET /breadcrumbs/{id}/full", "PATCH /breadcrumbs/{id}", "DELETE /breadcrumbs/{id}",
		"GET /breadcrumbs/{id}/history", "POST /breadcrumbs/{id}/tags/add", "POST /breadcrumbs/{id}/tags/remove",
		"POST /breadcrumbs/{id}/context/merge", "POST /views/preview", "GET /events/stream",
		"GET /breadcrumbs/search", "GET /workspace/search", "POST /mcp", "POST /relay", "POST /tokens/revoke",
		"POST /subscriptions", "GET /subscriptions", "GET /subscriptions/{id}", "DELETE /subscriptions/{id}",
		"GET /ui/", "POST /console/login", "GET /breadcrumbs/{id}/stats",
		"POST /webhooks", "GET /webhooks", "GET /webhooks/{id}", "PATCH /webhooks/{id}", "DELETE /webhooks/{id}",
		"POST /webhooks/{id}/rotate-secret", "POST /webhooks/{id}/test", "GET /webhooks/{id}/deliveries",
		"GET /webhooks/{id}/deliveries/{delivery}", "POST /webhooks/{id}/deliveries/{delivery}/redeliver", "POST /webhooks/{id}/redeliver"}
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt, " ")
		if _, ok := doc.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("openapi.json does not document %s", rt)
		}
		// and the server really routes it (anything but the catch-all 404)
		r := e.do(method, strings.ReplaceAll(path, "{id}", "01900000-0000-7000-8000-000000000000"), "", nil)
		if r.status == 404 && strings.Contains(string(r.body), "no such endpoint") {
			t.Errorf("server does not route %s", rt)
		}
	}
	n := 0
	for _, ops := range doc.Paths {
		for k := range ops {
			if k != "parameters" {
				n++
			}
		}
	}
	if n != len(routes) {
		t.Errorf("openapi.json documents %d operations, the server has %d", n, len(routes))
	}
}

// TestConcurrentIfMatchPatches: conditional PATCHes racing over HTTP either
// succeed with a new version or get 412; none is lost.
func TestConcurrentIfMatchPatches(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "counter", "context": map[string]any{"n": 0}})
	var (
		mu      sync.Mutex
		wins    int
		refused int
		wg      sync.WaitGroup
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				cur := e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil).json(t)
				n := cur["context"].(map[string]any)["n"].(float64)
				v := fmt.Sprint(cur["version"].(float64))
				r := e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"context": map[string]any{"n": n + 1}}, "If-Match", v)
				mu.Lock()
				switch r.status {
				case 200:
					wins++
				case 412:
					refused++
				default:
					t.Errorf("PATCH: %d %s", r.status, r.body)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	final := e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil).json(t)
	if n := final["context"].(map[string]any)["n"].(float64); int(n) != wins || int(final["version"].(float64)) != wins+1 || wins+refused != 80 {
		t.Fatalf("wins %d, refused %d, n %v, version %v", wins, refused, n, final["version"])
	}
}

// TestViewConcurrencyBound: with one view slot, two views whose rules each
// run to their deadline cannot overlap, so together they take at least two
// deadlines (a lower bound, which a slow machine cannot break).
func TestViewConcurrencyBound(t *testing.T) {
	const deadline = 150 * time.Millisecond
	e := newEnv(t, func(o *server.Options) { o.MaxConcurrentViews = 1; o.RuleTimeout = deadline })
	tok := e.token("acme", "a", server.RoleEmitter)
	hints := map[string]any{"transform": map[string]any{"spin": map[string]any{"type": "jq", "query": "def f: f; f"}}}
	ids := []string{
		e.create(tok, map[string]any{"title": "a", "context": map[string]any{}, "llm_hints": hints}),
		e.create(tok, map[string]any{"title": "b", "context": map[string]any{}, "llm_hints": hints}),
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.do("GET", "/breadcrumbs/"+id, tok, nil); r.status != 200 || !strings.Contains(string(r.body), "FALLBACK") {
				t.Errorf("view: %d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d < 2*deadline {
		t.Fatalf("two views took %v with one slot: they ran at the same time", d)
	}
}

// TestContextMergeIsJSONMergePatch: POST context/merge applies RFC 7396
// over HTTP: null deletes a member, objects merge, arrays replace.
func TestContextMergeIsJSONMergePatch(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "t", "context": map[string]any{"a": 1, "o": map[string]any{"x": 1, "y": 2}, "l": []any{1, 2}}})
	r := e.do("POST", "/breadcrumbs/"+id+"/context/merge", tok, map[string]any{"context": map[string]any{"a": nil, "o": map[string]any{"y": nil, "z": 3}, "l": []any{3}}})
	want(t, r, 200, `"context":{"l":[3],"o":{"x":1,"z":3}}`)
}

// TestConditionalGet: GET /breadcrumbs/{id} (and /full) sends the version
// as its ETag; If-None-Match naming it is a 304 with no body that spends
// no read budget; If-Match naming another version is a 412.
func TestConditionalGet(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "t", "context": map[string]any{"a": 1}, "ttl_type": "usage", "ttl_config": map[string]any{"max_reads": 2}})
	get := func(path, header, value string) (int, string, string) {
		req, _ := http.NewRequest("GET", e.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("ETag"), string(b)
	}
	for _, path := range []string{"/breadcrumbs/" + id, "/breadcrumbs/" + id + "/full"} {
		for i := 0; i < 5; i++ {
			if code, tag, body := get(path, "If-None-Match", `"1"`); code != 304 || tag != `"1"` || body != "" {
				t.Fatalf("%s If-None-Match: %d %q %q", path, code, tag, body)
			}
		}
		if code, _, body := get(path, "If-Match", `"7"`); code != 412 || !strings.Contains(body, "version 1, not 7") {
			t.Fatalf("%s If-Match: %d %s", path, code, body)
		}
	}
	// Ten conditional answers later the read budget of 2 is untouched.
	if code, tag, _ := get("/breadcrumbs/"+id, "If-None-Match", `"2", W/"3"`); code != 200 || tag != `"1"` {
		t.Fatalf("another version: %d %q", code, tag)
	}
	if code, _, _ := get("/breadcrumbs/"+id, "", ""); code != 200 {
		t.Fatalf("second read: %d", code)
	}
	if code, _, _ := get("/breadcrumbs/"+id, "", ""); code != 404 {
		t.Fatalf("the read budget is spent by reads only: %d", code)
	}
	// A view that fell back has a tag of its own, which no If-None-Match
	// of the version matches.
	hints := map[string]any{"transform": map[string]any{"x": map[string]any{"type": "jq", "query": "error(\"no\")"}}}
	fb := e.create(tok, map[string]any{"title": "t", "context": map[string]any{"a": 1}, "llm_hints": hints})
	if code, tag, _ := get("/breadcrumbs/"+fb, "", ""); code != 200 || tag != `"1-fallback"` {
		t.Fatalf("fallback view: %d %q", code, tag)
	}
}

// A list names the agent that created each record and the one that made
// its current version, so a curator sees who wrote what without reading
// the records whole.
func TestListNamesCreatorAndUpdater(t *testing.T) {
	e := newEnv(t)
	alice := e.token("acme", "alice", server.RoleEmitter)
	boss := e.token("acme", "boss", server.RoleCurator)
	id := e.create(alice, map[string]any{"title": "runbook", "context": map[string]any{"step": 1}, "visibility": "team"})
	r := e.do("PATCH", "/breadcrumbs/"+id, boss, map[string]any{"title": "runbook v2"}, "If-Match", "1")
	want(t, r, http.StatusOK, "runbook v2")
	for _, tok := range []string{alice, boss} {
		var page struct {
			Items []struct {
				ID        string `json:"id"`
				CreatedBy string `json:"created_by"`
				UpdatedBy string `json:"updated_by"`
			}
		}
		r := e.do("GET", "/breadcrumbs", tok, nil)
		if err := json.Unmarshal(r.body, &page); err != nil || len(page.Items) != 1 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		if it := page.Items[0]; it.ID != id || it.CreatedBy != "alice" || it.UpdatedBy != "boss" {
			t.Fatalf("list item %+v; want created_by alice, updated_by boss", it)
		}
	}
}
