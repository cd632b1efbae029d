package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
)

// TestTokenEncodingIsCanonical: a token is accepted only as it was
// minted. Base64url leaves spare bits in a segment's last character and
// padding is optional to lenient decoders, so one token could be written
// many ways, each a different string: each would be verified again and
// take a slot of the server's cache of verified tokens. Every other
// spelling is refused.
func TestTokenEncodingIsCanonical(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "bot", server.RoleEmitter)
	want(t, e.do("GET", "/breadcrumbs", tok, nil), 200, "items")
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	last := strings.IndexByte(alphabet, sig[len(sig)-1])
	// An Ed25519 signature is 64 bytes, 86 characters: the last one
	// carries 2 bits of it and 4 spare ones.
	var variants []string
	for spare := 1; spare < 16; spare++ {
		variants = append(variants, tok[:len(tok)-1]+string(alphabet[last^spare]))
	}
	variants = append(variants, tok+"==")
	for _, v := range variants {
		want(t, e.do("GET", "/breadcrumbs", v, nil), 401, "invalid token")
	}
}

// TestRevokeThenReissueAtOnce: an agent's tokens are revoked and a new one
// is minted for it right away, in the same second: the new token works,
// and one minted a moment before the revocation does not. (Token times
// are not rounded to whole seconds, which made a token minted just after
// a revocation born revoked.)
func TestRevokeThenReissueAtOnce(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 12, 0, 0, 500_000_000, time.UTC)
	e := newEnv(t, func(o *server.Options) { o.Now = func() time.Time { return t0 } })
	curator, _ := e.mintAt("acme", "root", t0.Add(-time.Minute), server.RoleCurator)
	before, _ := e.mintAt("acme", "bot", t0.Add(-time.Millisecond), server.RoleEmitter)
	want(t, e.do("GET", "/breadcrumbs", before, nil), 200, "items")
	want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"agent": "bot"}), 201, `"before":"2026-03-04T12:00:00.5Z"`)
	after, _ := e.mintAt("acme", "bot", t0.Add(time.Millisecond), server.RoleEmitter)
	want(t, e.do("GET", "/breadcrumbs", after, nil), 200, "items")
	want(t, e.do("GET", "/breadcrumbs", before, nil), 401, "token_revoked")
}

// TestStreamEndsWithItsToken: an event stream opened with a token ends
// within about a second of the token's revocation, and when the token
// expires; a reconnect is then refused. A stream on another token goes on.
func TestStreamEndsWithItsToken(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	e := newEnv(t, func(o *server.Options) { o.Now = now; o.PingEvery = time.Hour })
	curator, _ := e.mintAt("acme", "root", now(), server.RoleCurator)
	sub, subID := e.mintAt("acme", "sub", now(), server.RoleSubscriber)
	keep, _ := e.mintAt("acme", "keep", now(), server.RoleSubscriber)
	short, err := server.Mint(e.key, server.Principal{OwnerID: "acme", AgentID: "short", Roles: []string{server.RoleSubscriber}}, time.Minute, now())
	if err != nil {
		t.Fatal(err)
	}
	revoked, stopRevoked := e.subscribe(sub, "")
	defer stopRevoked()
	expiring, stopExpiring := e.subscribe(short, "")
	defer stopExpiring()
	kept, stopKept := e.subscribe(keep, "")
	defer stopKept()

	ended := func(ch <-chan sse, what string) {
		t.Helper()
		deadline := time.After(3 * time.Second)
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
			case <-deadline:
				t.Fatalf("the stream of a token %s is still open after 3s", what)
			}
		}
	}
	start := time.Now()
	want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"id": subID}), 201, subID)
	ended(revoked, "revoked")
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("the stream ended %v after its token's revocation; want within about a second", d)
	}
	clock.Add(int64(2 * time.Minute))
	ended(expiring, "expired")
	want(t, e.do("GET", "/events/stream", sub, nil), 401, "token_revoked")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.create(e.token("acme", "w", server.RoleEmitter), map[string]any{"title": "still here", "context": map[string]any{}})
	select {
	case ev, ok := <-kept:
		if !ok || ev.event != "created" {
			t.Fatalf("the other stream: %v %v", ev, ok)
		}
	case <-ctx.Done():
		t.Fatal("the other stream got nothing")
	}
}

// TestRevocationsBoundedPerOwner: revocations are kept for good and every
// replica holds them in memory, so one owner's curators may record only
// so many (409 too_many_revocations, naming the way out); other owners
// and the operator's command line are not held back.
func TestRevocationsBoundedPerOwner(t *testing.T) {
	db := newStore(t)
	e := newEnvOn(t, db, nil, func(o *server.Options) { o.MaxRevocations = 3 })
	curator := e.token("acme", "root", server.RoleCurator)
	for i := range 3 {
		want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"id": fmt.Sprintf("jti-%d", i)}), 201, "jti-")
	}
	want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"id": "jti-x"}), 409, `"too_many_revocations"`)
	want(t, e.do("POST", "/tokens/revoke", curator, map[string]any{"agent": "bot"}), 409, "revoke an agent's tokens")
	other := e.token("globex", "root", server.RoleCurator)
	want(t, e.do("POST", "/tokens/revoke", other, map[string]any{"agent": "bot"}), 201, "globex")
	// The operator is not bounded, and what it records still applies.
	bot, botID := e.mintAt("acme", "bot", time.Now(), server.RoleEmitter)
	if _, err := db.Revoke(context.Background(), store.Revocation{OwnerID: "acme", TokenID: botID, RevokedBy: "cli"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(server.RevocationRefresh)
	want(t, e.do("GET", "/breadcrumbs", bot, nil), 401, "token_revoked")
}
