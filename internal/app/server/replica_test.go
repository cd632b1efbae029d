package server_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
)

// TestReplicasOnPostgres: two servers on one PostgreSQL database with one
// signing key. A stream on one sees writes made through the other, in
// order; a view cached on one is never served after the other writes a new
// version; a client resumes on the other replica with Last-Event-ID.
func TestReplicasOnPostgres(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	a := newEnvOn(t, openPostgres(t, url), key)
	b := newEnvOn(t, openPostgres(t, url), key)
	tok := a.token("acme", "planner", "curator")
	other := a.token("globex", "spy", "curator")

	events, stop := a.subscribe(tok, "")
	defer stop()
	spy, stopSpy := b.subscribe(other, "")
	defer stopSpy()

	r := b.do("POST", "/breadcrumbs", tok, `{"title":"plan","context":{"step":1,"key":"k"},"llm_hints":{"exclude":["key"]}}`)
	if r.status != 201 {
		t.Fatalf("create on B: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	for v := 1; v <= 5; v++ {
		// Read the view on A (it is cached there), then write through B.
		view := a.do("GET", "/breadcrumbs/"+id, tok, nil)
		if view.status != 200 || !strings.Contains(string(view.body), fmt.Sprintf(`"step":%d`, v)) || strings.Contains(string(view.body), `"k"`) {
			t.Fatalf("version %d: view on A: %d %s", v, view.status, view.body)
		}
		if again := a.do("GET", "/breadcrumbs/"+id, tok, nil); string(again.body) != string(view.body) {
			t.Fatalf("version %d: a cached view differs: %s", v, again.body)
		}
		if r := b.do("PATCH", "/breadcrumbs/"+id, tok, fmt.Sprintf(`{"context":{"step":%d}}`, v+1)); r.status != 200 {
			t.Fatalf("patch on B: %d %s", r.status, r.body)
		}
	}
	var lastID string
	for v := 1; v <= 6; v++ {
		ev := next(t, events, true)
		var e struct {
			ID      string `json:"id"`
			Version int    `json:"version"`
		}
		json.Unmarshal([]byte(ev.data), &e)
		want := "updated"
		if v == 1 {
			want = "created"
		}
		if ev.event != want || e.ID != id || e.Version != v {
			t.Fatalf("event %d on A: %s %s", v, ev.event, ev.data)
		}
		lastID = ev.id
	}
	stop()

	// Resume on B from the last event seen on A: only what came after.
	if r := a.do("DELETE", "/breadcrumbs/"+id, tok, nil); r.status != 204 {
		t.Fatalf("delete on A: %d %s", r.status, r.body)
	}
	resumed, stopResumed := b.subscribe(tok, "", "Last-Event-ID", lastID)
	defer stopResumed()
	if ev := next(t, resumed, true); ev.event != "deleted" || !strings.Contains(ev.data, id) {
		t.Fatalf("resumed on B: %s %s", ev.event, ev.data)
	}
	if r := b.do("GET", "/breadcrumbs/"+id, tok, nil); r.status != 404 {
		t.Fatalf("deleted through A, still served by B: %d", r.status)
	}

	// The other owner's stream on B saw none of it.
	if r := b.do("POST", "/breadcrumbs", other, `{"title":"mine","context":{}}`); r.status != 201 {
		t.Fatalf("create: %d", r.status)
	}
	if ev := next(t, spy, true); ev.event != "created" || strings.Contains(ev.data, id) {
		t.Fatalf("other owner's first event: %s %s", ev.event, ev.data)
	}
}

// TestInputsEveryBackendStores: text PostgreSQL cannot hold (NUL, invalid
// UTF-8, numbers beyond its numeric range) is a clear 4xx or an empty
// result on every backend, never a 5xx.
func TestInputsEveryBackendStores(t *testing.T) {
	e := newEnv(t)
	tok := e.token("o", "a", "curator")
	for _, c := range []struct {
		method, path string
		body         string
		headers      []string
		status       int
		field        string
	}{
		{"POST", "/breadcrumbs", `{"title":"t","context":{"a":"x\u0000y"}}`, nil, 400, "context"},
		{"POST", "/breadcrumbs", `{"title":"t\u0000","context":{}}`, nil, 400, "title"},
		{"POST", "/breadcrumbs", `{"title":"t","context":{},"tags":["a\u0000"]}`, nil, 400, "tags"},
		{"POST", "/breadcrumbs", `{"title":"t","context":{},"llm_hints":{"transform":{"x":{"type":"literal","value":"\u0000"}}}}`, nil, 400, "llm_hints"},
		{"POST", "/breadcrumbs", `{"title":"t","context":{}}`, []string{"Idempotency-Key", "k\xff"}, 400, "Idempotency-Key"},
		{"POST", "/breadcrumbs", `{"title":"t","context":{},"ttl":"9999-12-31T23:59:59-23:59"}`, nil, 400, "expires_at"},
		{"POST", "/breadcrumbs", `{"title":"t","context":{},"schema_name":"` + strings.Repeat("s", 513) + `"}`, nil, 400, "schema_name"},
		{"GET", "/breadcrumbs?tag=a%00b", "", nil, 200, ""},
		{"GET", "/breadcrumbs?tag=%ff", "", nil, 200, ""},
		{"GET", "/breadcrumbs?schema_name=%00", "", nil, 200, ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := e.do(c.method, c.path, tok, body, c.headers...)
		if r.status != c.status || !strings.Contains(string(r.body), c.field) {
			t.Errorf("%s %s %s: %d %s, want %d naming %q", c.method, c.path, c.body, r.status, r.body, c.status, c.field)
		}
	}
	// A number PostgreSQL's numeric cannot hold: SQLite keeps it exactly,
	// PostgreSQL refuses it by field; neither answers 5xx.
	r := e.do("POST", "/breadcrumbs", tok, `{"title":"t","context":{"n":1e1000000}}`)
	if r.status != 201 && !(r.status == 400 && strings.Contains(string(r.body), "context")) {
		t.Errorf("huge number: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/breadcrumbs", tok, nil); r.status != 200 {
		t.Errorf("list after refused input: %d %s", r.status, r.body)
	}
}

// TestKeyCreatedOnceByReplicasStartingTogether: servers that start at once
// on one missing key file all end up with the same key, and exactly one
// reports having created it.
func TestKeyCreatedOnceByReplicasStartingTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared", "signing.key")
	const n = 8
	type res struct {
		key     ed25519.PrivateKey
		created bool
		err     error
	}
	out := make(chan res, n)
	for range n {
		go func() {
			k, c, err := server.LoadOrCreateKey(path)
			out <- res{k, c, err}
		}()
	}
	var first ed25519.PrivateKey
	created := 0
	for range n {
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.created {
			created++
		}
		if first == nil {
			first = r.key
		} else if !first.Equal(r.key) {
			t.Fatal("two servers got different keys")
		}
	}
	if created != 1 {
		t.Fatalf("%d servers say they created the key", created)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".signing-*"))
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 || len(left) != 0 {
		t.Fatalf("key file: %v %v, temporary files left: %v", st, err, left)
	}
}
