package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// mintAt mints a token issued at, returning it and its id.
func (e *env) mintAt(owner, agent string, at time.Time, roles ...string) (string, string) {
	e.t.Helper()
	tok, id, err := server.MintWithID(e.key, server.Principal{OwnerID: owner, AgentID: agent, Roles: roles}, time.Hour, at)
	if err != nil || id == "" {
		e.t.Fatalf("mint: %q %v", id, err)
	}
	return tok, id
}

// TestRevokeOverHTTP: a curator revokes one token by its id, or an agent's
// tokens issued before a time; every route then answers them 401
// token_revoked (a cached verification included), and nothing else is
// touched: not the agent's other tokens, tokens issued later, nor any
// other owner's tokens whatever the body names.
func TestRevokeOverHTTP(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	curator, _ := e.mintAt("acme", "root", now, server.RoleCurator)
	bot1, bot1ID := e.mintAt("acme", "bot", now.Add(-2*time.Second), server.RoleEmitter)
	bot2, _ := e.mintAt("acme", "bot", now.Add(-2*time.Second), server.RoleEmitter)
	spy, _ := e.mintAt("globex", "spy", now, server.RoleCurator)
	other, _ := e.mintAt("globex", "bot", now.Add(-2*time.Second), server.RoleEmitter)
	other2, otherID := e.mintAt("globex", "spy", now, server.RoleEmitter)
	// A token from before tokens had ids: only an agent revocation names it.
	legacy, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "bot", "owner_id": "acme", "roles": []string{"emitter"},
		"iat": now.Add(-time.Hour).Unix(), "exp": now.Add(time.Hour).Unix()}).SignedString(e.key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{bot1, bot2, other, legacy} {
		want(t, e.do("GET", "/breadcrumbs", tok, nil), 200, "items") // verified and cached
	}

	// Another owner's curator cannot reach acme's tokens: the owner is its own.
	want(t, e.do("POST", "/tokens/revoke", spy, map[string]any{"id": bot1ID}), 201, `"owner_id":"globex"`)
	want(t, e.do("POST", "/tokens/revoke", spy, map[string]any{"agent": "bot"}), 201, `"agent":"bot"`)
	want(t, e.do("GET", "/breadcrumbs", bot1, nil), 200, "items")
	want(t, e.do("GET", "/breadcrumbs", legacy, nil), 200, "items")
	want(t, e.do("GET", "/breadcrumbs", other, nil), 401, "token_revoked") // its own agent "bot"
	// Only curators revoke.
	emitter, _ := e.mintAt("acme", "w", now, server.RoleEmitter, server.RoleSubscriber)
	want(t, e.do("POST", "/tokens/revoke", emitter, map[string]any{"id": bot1ID}), 403, "curator")
	want(t, e.do("POST", "/tokens/revoke", "", map[string]any{"id": bot1ID}), 401, "unauthorized")
	want(t, e.do("GET", "/breadcrumbs", bot1, nil), 200, "items")

	// One token by id: at once on this replica, on every route.
	r := e.do("POST", "/tokens/revoke", curator, map[string]any{"id": bot1ID})
	want(t, r, 201, `"id":"`+bot1ID+`"`)
	if m := r.json(t); m["owner_id"] != "acme" || m["revoked_by"] != "root" || m["before"] != nil {
		t.Fatalf("revocation: %v", m)
	}
	for _, ep := range [][2]string{{"GET", "/breadcrumbs"}, {"POST", "/breadcrumbs"}, {"GET", "/breadcrumbs/search?q=x"}, {"POST", "/mcp"}} {
		want(t, e.do(ep[0], ep[1], bot1, "{}"), 401, `"token_revoked"`)
	}
	want(t, e.do("GET", "/breadcrumbs", bot2, nil), 200, "items")
	want(t, e.do("GET", "/breadcrumbs", other, nil), 401, "token_revoked")
	// An id of another owner's token names nothing of acme's, and the
	// other way round.
	want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"id": otherID}), 201, otherID)
	want(t, e.do("GET", "/breadcrumbs", other2, nil), 200, "items")

	// An agent's tokens issued before now, the one without an id included;
	// one issued later works.
	want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"agent": "bot"}), 201, `"before":"`)
	want(t, e.do("GET", "/breadcrumbs", bot2, nil), 401, "token_revoked")
	want(t, e.do("GET", "/breadcrumbs", legacy, nil), 401, "token_revoked")
	later, _ := e.mintAt("acme", "bot", time.Now().Add(2*time.Second), server.RoleEmitter)
	want(t, e.do("GET", "/breadcrumbs", later, nil), 200, "items")
	// An explicit time in the past: tokens issued after it still work.
	early, _ := e.mintAt("acme", "early", now.Add(-50*time.Minute), server.RoleEmitter)
	recent, _ := e.mintAt("acme", "early", now.Add(-time.Minute), server.RoleEmitter)
	want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"agent": "early", "before": now.Add(-30 * time.Minute).Format(time.RFC3339)}), 201, "early")
	want(t, e.do("GET", "/breadcrumbs", early, nil), 401, "token_revoked")
	want(t, e.do("GET", "/breadcrumbs", recent, nil), 200, "items")
	want(t, e.do("GET", "/breadcrumbs", curator, nil), 200, "items")
}

// TestRevokeBadBodies: each bad body is a 400 naming the field at fault,
// and records nothing.
func TestRevokeBadBodies(t *testing.T) {
	e := newEnv(t)
	curator := e.token("acme", "root", server.RoleCurator)
	for _, tc := range []struct {
		body, code, msg string
	}{
		{`{}`, "invalid", "id: required"},
		{`{"id":"","agent":""}`, "invalid", "id: required"},
		{`{"id":"j","agent":"a"}`, "invalid", "id: name one token"},
		{`{"id":"j","before":"2020-01-01T00:00:00Z"}`, "invalid", "before: applies to an agent"},
		{`{"before":"2020-01-01T00:00:00Z"}`, "invalid", "before: applies to an agent"},
		{`{"agent":"a","before":"yesterday"}`, "invalid", `before: \"yesterday\" is not an RFC 3339 time`},
		{`{"agent":"a","before":"2999-01-01T00:00:00Z"}`, "invalid", "before: 2999-01-01T00:00:00Z is in the future"},
		{`{"agent":"a","before":"0001-01-01T00:00:00Z"}`, "invalid", "before: 0001-01-01T00:00:00Z is before 1970"},
		{`{"agent":"a","before":"1969-12-31T23:59:59Z"}`, "invalid", "before: 1969-12-31T23:59:59Z is before 1970"},
		{`{"id":5}`, "invalid", "id: must be a string"},
		{`{"agent":["a"]}`, "invalid", "agent: must be a string"},
		{`{"id":"j","owner_id":"globex"}`, "unknown_field", `unknown field \"owner_id\"`},
		{`{"id":"j\u0001"}`, "invalid", "id: at most 256 bytes"},
		{`{"agent":"` + strings.Repeat("a", 257) + `"}`, "invalid", "agent: at most 256 bytes"},
		{`[]`, "invalid", ""},
		{`{"id":"j"`, "", ""},
	} {
		r := e.do("POST", "/tokens/revoke", curator, tc.body)
		if r.status != 400 || !strings.Contains(string(r.body), `"`+tc.code) || !strings.Contains(string(r.body), tc.msg) {
			t.Errorf("%s: %d %s; want 400 %s %s", tc.body, r.status, r.body, tc.code, tc.msg)
		}
	}
}

// TestRevocationAcrossReplicas: two servers on one database. A token in
// use (verified and cached) on B is refused by B within a second of its
// revocation through A, and likewise for a revocation written straight
// into the database, as 'ctxkit token revoke' does.
func TestRevocationAcrossReplicas(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var pgURL string
			// open opens one more store on the same database.
			open := func() store.Store {
				t.Helper()
				return openPostgres(t, pgURL)
			}
			if backend == "sqlite" {
				path := filepath.Join(t.TempDir(), "ctxkit.db")
				open = func() store.Store {
					t.Helper()
					db, err := sqlite.Open(context.Background(), path)
					if err != nil {
						t.Fatal(err)
					}
					return db
				}
			} else {
				pgURL = pgtest.Shared(t).NewDatabase(t)
			}
			_, key, _ := ed25519.GenerateKey(rand.Reader)
			a := newEnvOn(t, open(), key)
			b := newEnvOn(t, open(), key)
			curator := a.token("acme", "root", server.RoleCurator)
			tok, id := a.mintAt("acme", "bot", time.Now(), server.RoleEmitter)
			tok2, _ := a.mintAt("acme", "bot2", time.Now().Add(-2*time.Second), server.RoleEmitter)
			want(t, b.do("GET", "/breadcrumbs", tok, nil), 200, "items")
			want(t, b.do("GET", "/breadcrumbs", tok2, nil), 200, "items")

			want(t, a.do("POST", "/tokens/revoke", curator, map[string]any{"id": id}), 201, id)
			revoked := time.Now()
			want(t, a.do("GET", "/breadcrumbs", tok, nil), 401, "token_revoked")
			waitRevoked(t, b, tok, revoked)

			direct := open()
			defer direct.Close()
			if _, err := direct.Revoke(context.Background(), store.Revocation{OwnerID: "acme", AgentID: "bot2", Before: time.Now(), RevokedBy: "cli"}); err != nil {
				t.Fatal(err)
			}
			revoked = time.Now()
			for _, e := range []*env{a, b} {
				waitRevoked(t, e, tok2, revoked)
			}
		})
	}
}

// waitRevoked polls until e refuses tok, which must happen within a second
// of since.
func waitRevoked(t *testing.T, e *env, tok string, since time.Time) {
	t.Helper()
	for {
		r := e.do("GET", "/breadcrumbs", tok, nil)
		if r.status == 401 {
			want(t, r, 401, "token_revoked")
			return
		}
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if time.Since(since) > time.Second {
			t.Fatalf("still accepted %v after its revocation", time.Since(since))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// failingRevocations is a store whose revocations cannot be loaded while
// fail is set, as when its database is away.
type failingRevocations struct {
	store.Store
	fail atomic.Bool
}

func (s *failingRevocations) Revocations(ctx context.Context, after int64) ([]store.Revocation, error) {
	if s.fail.Load() {
		return nil, &store.Error{Code: store.CodeUnavailable, Msg: "the database is unavailable for now"}
	}
	return s.Store.Revocations(ctx, after)
}

// TestRevocationsFailClosed: when the revocations cannot be loaded, a
// token is not trusted on an old copy: the API answers 503 with
// Retry-After, the gateway likewise in its dialect (not 401: the token may
// be fine), and both serve again once the database is back. The gateway
// refuses a revoked token in its dialect.
func TestRevocationsFailClosed(t *testing.T) {
	db := &failingRevocations{Store: newStore(t)}
	t.Setenv("CTXKIT_TEST_UPSTREAM_KEY", "sk-upstream")
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(cfgPath, []byte("providers:\n  - name: up\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key_env: CTXKIT_TEST_UPSTREAM_KEY\n    models: [gpt-x]\n"), 0o600)
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, db, nil, func(o *server.Options) { o.Gateway = gateway.New(cfg, gateway.Options{}) })
	tok := e.token("acme", "a", server.RoleCurator)
	want(t, e.do("GET", "/breadcrumbs", tok, nil), 200, "items")
	db.fail.Store(true)
	time.Sleep(server.RevocationRefresh + 100*time.Millisecond)
	r := e.do("GET", "/breadcrumbs", tok, nil)
	want(t, r, 503, `"unavailable"`)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	want(t, e.do("GET", "/v1/models", tok, nil), 503, "overloaded_error")
	want(t, e.do("POST", "/v1/messages", "", `{}`, "x-api-key", tok), 503, `"type":"error"`)
	db.fail.Store(false)
	want(t, e.do("GET", "/breadcrumbs", tok, nil), 200, "items")
	want(t, e.do("GET", "/v1/models", tok, nil), 200, "gpt-x")

	gw, _ := e.mintAt("acme", "gw", time.Now(), server.RoleSubscriber)
	want(t, e.do("POST", "/tokens/revoke", tok, map[string]any{"agent": "gw"}), 201, "gw")
	want(t, e.do("GET", "/v1/models", gw, nil), 401, "revoked")
	want(t, e.do("POST", "/v1/messages", "", `{}`, "x-api-key", gw), 401, "authentication_error")
}

// BenchmarkRevocationCheck: authenticated reads on a server whose store
// holds 2,000 revocations (of other tokens and agents) against one with
// none, interleaved in one run; it reports the ratio of throughputs
// (checking every request against revocations should cost next to nothing).
func BenchmarkRevocationCheck(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	none := newEnvOn(b, newStore(b), key)
	db := newStore(b)
	ctx := context.Background()
	for i := range 2000 {
		r := store.Revocation{OwnerID: "acme", TokenID: fmt.Sprintf("jti-%d", i), RevokedBy: "bench"}
		if i%2 == 1 {
			r = store.Revocation{OwnerID: "acme", AgentID: fmt.Sprintf("agent-%d", i), Before: time.Now(), RevokedBy: "bench"}
		}
		if _, err := db.Revoke(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	many := newEnvOn(b, db, key)
	tok := none.token("acme", "a", server.RoleEmitter)
	var rn, rm float64
	for b.Loop() {
		n, _ := load(b, 8, 2000, get(none.url+"/breadcrumbs?limit=1", tok))
		m, _ := load(b, 8, 2000, get(many.url+"/breadcrumbs?limit=1", tok))
		rn, rm = rn+n, rm+m
	}
	b.ReportMetric(rn/float64(b.N), "none-req/s")
	b.ReportMetric(rm/float64(b.N), "2000-req/s")
	b.ReportMetric(rm/rn, "2000/none")
}
