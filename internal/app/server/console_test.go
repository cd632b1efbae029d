package server_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
)

// unclosed lets two servers share one store, closed once.
type unclosed struct{ store.Store }

func (unclosed) Close() error { return nil }

// replicas starts two servers with one signing key on one database: two
// connections to PostgreSQL when the suite runs on it, else one SQLite
// store shared.
func replicas(t *testing.T) (a, b *env, key ed25519.PrivateKey) {
	t.Helper()
	_, key, _ = ed25519.GenerateKey(rand.Reader)
	if os.Getenv("CTXKIT_TEST_STORE") == "postgres" {
		url := pgtest.Shared(t).NewDatabase(t)
		return newEnvOn(t, openPostgres(t, url), key), newEnvOn(t, openPostgres(t, url), key), key
	}
	db := newStore(t)
	return newEnvOn(t, db, key), newEnvOn(t, unclosed{db}, key), key
}

func loginCode(t *testing.T, key ed25519.PrivateKey, owner, agent string, roles ...string) string {
	t.Helper()
	code, err := server.MintLoginCode(key, server.Principal{OwnerID: owner, AgentID: agent, Roles: roles}, server.LoginCodeTTL, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestConsoleLoginCodeWorksOnceAcrossReplicas(t *testing.T) {
	a, b, key := replicas(t)
	code := loginCode(t, key, "acme", "alice", "emitter")
	r := a.do("POST", "/console/login", "", map[string]string{"code": code})
	want(t, r, 200, `"token"`)
	if r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("a login's answer is cacheable: %q", r.header.Get("Cache-Control"))
	}
	m := r.json(t)
	tok := m["token"].(string)
	if m["owner_id"] != "acme" || m["agent_id"] != "alice" || fmt.Sprint(m["roles"]) != "[emitter]" {
		t.Fatalf("login answered %v", m)
	}
	// The token is the agent's, with the role the code was minted for.
	want(t, b.do("GET", "/breadcrumbs", tok, nil), 200, `"items"`)
	want(t, b.do("DELETE", "/breadcrumbs/01900000-0000-7000-8000-000000000000", tok, nil), 403, "")
	// Spent: on the replica that took it and on the other one.
	for _, e := range []*env{a, b} {
		want(t, e.do("POST", "/console/login", "", map[string]string{"code": code}), 401, "already used")
	}
	// The code itself is no bearer token.
	want(t, a.do("GET", "/breadcrumbs", code, nil), 401, "")
}

func TestConsoleLoginCodeRaceHasOneWinner(t *testing.T) {
	a, b, key := replicas(t)
	for round := range 3 {
		code := loginCode(t, key, "acme", "alice", "subscriber")
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			got = map[int]int{}
		)
		for i := range 8 {
			e := []*env{a, b}[i%2]
			wg.Go(func() {
				st := e.do("POST", "/console/login", "", map[string]string{"code": code}).status
				mu.Lock()
				got[st]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if got[200] != 1 || got[401] != 7 {
			t.Fatalf("round %d: 8 exchanges of one code answered %v; want one 200 and seven 401", round, got)
		}
	}
}

func TestConsoleLoginRefusals(t *testing.T) {
	e, _, key := replicas(t)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	good := loginCode(t, key, "acme", "alice", "curator")
	expired, err := server.MintLoginCode(key, server.Principal{OwnerID: "acme", AgentID: "alice", Roles: []string{"curator"}}, time.Minute, time.Now().Add(-2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	payload, mac, _ := strings.Cut(strings.TrimPrefix(good, "lc1."), ".")
	cases := []struct {
		name, body string
		status     int
		substr     string
	}{
		{"no code", `{}`, 400, "code"},
		{"unknown field", `{"code":"x","token":"y"}`, 400, "token"},
		{"garbage", `{"code":"hello"}`, 401, "already used"},
		{"another server's key", `{"code":"` + loginCode(t, otherKey, "acme", "alice", "curator") + `"}`, 401, "already used"},
		{"expired", `{"code":"` + expired + `"}`, 401, "already used"},
		{"MAC cut short", `{"code":"lc1.` + payload + `.` + mac[:len(mac)-2] + `"}`, 401, "already used"},
		{"a token", `{"code":"` + e.token("acme", "alice", "curator") + `"}`, 401, "already used"},
		{"too long", `{"code":"lc1.` + strings.Repeat("A", 5000) + `"}`, 401, "already used"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want(t, e.do("POST", "/console/login", "", c.body), c.status, c.substr)
		})
	}
	// After an agent's tokens are revoked, codes minted before refuse too.
	admin := e.token("acme", "root", "curator")
	want(t, e.do("POST", "/tokens/revoke", admin, `{"agent":"alice"}`), 201, "")
	want(t, e.do("POST", "/console/login", "", map[string]string{"code": good}), 401, "already used")
}

func TestConsoleMintRefusesBadInput(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	for _, c := range []struct {
		p   server.Principal
		ttl time.Duration
	}{
		{server.Principal{OwnerID: "acme", AgentID: "a"}, time.Minute},
		{server.Principal{OwnerID: "acme", Roles: []string{"curator"}}, time.Minute},
		{server.Principal{OwnerID: "acme", AgentID: "a", Roles: []string{"root"}}, time.Minute},
		{server.Principal{OwnerID: "acme", AgentID: "a", Roles: []string{"curator"}}, 0},
		{server.Principal{OwnerID: "acme", AgentID: "a", Roles: []string{"curator"}}, 2 * time.Hour},
	} {
		if _, err := server.MintLoginCode(key, c.p, c.ttl, time.Now()); err == nil {
			t.Errorf("MintLoginCode(%+v, %s) minted a code", c.p, c.ttl)
		}
	}
}

func TestViewStats(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "alice", "emitter")
	id := e.create(tok, `{"title":"t","context":{"keep":"short","drop":"a long text that the view leaves out of what the model sees, many words"},"llm_hints":{"exclude":["drop"]}}`)
	r := e.do("GET", "/breadcrumbs/"+id+"/stats", tok, nil)
	want(t, r, 200, `"encoding":"o200k_base"`)
	m := r.json(t)
	before, after := m["tokens_before"].(float64), m["tokens_after"].(float64)
	if !(after > 0 && after < before) || m["saved_percent"].(float64) <= 0 || m["status"] != "OK" || r.header.Get("ETag") != `"1"` {
		t.Fatalf("stats %s (ETag %s)", r.body, r.header.Get("ETag"))
	}
	// Another owner's record is not there for it.
	want(t, e.do("GET", "/breadcrumbs/"+id+"/stats", e.token("globex", "bob", "curator"), nil), 404, "")
	want(t, e.do("GET", "/breadcrumbs/"+id+"/stats", "", nil), http.StatusUnauthorized, "")
}
