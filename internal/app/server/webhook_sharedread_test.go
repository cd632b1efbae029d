package server_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// TestWebhookSharedReadIsolation: the fan-out reads events once per
// actor and matches every webhook of that actor in memory. Webhooks of
// two agents of one owner and of another owner, at the same cursor, with
// the same selectors: a private breadcrumb of alice reaches alice's
// webhooks only, and a later ordinary one reaches every webhook of its
// owner (so the private one, had it leaked, would have come first).
func TestWebhookSharedReadIsolation(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	alice := e.token("acme", "alice", server.RoleEmitter)
	bob := e.token("acme", "bob", server.RoleEmitter)
	carol := e.token("beta", "carol", server.RoleEmitter)
	type hook struct {
		who string
		rc  *receiver
	}
	var hooks []hook
	for _, who := range []struct {
		name, tok string
	}{{"alice", alice}, {"bob", bob}, {"carol", carol}} {
		for _, sel := range []string{`{}`, `{"kinds": ["created"]}`} {
			rc := newReceiver(t, nil)
			e.createHook(who.tok, rc.srv.URL, sel, "view")
			hooks = append(hooks, hook{who.name, rc})
		}
	}
	e.write(alice, `{"title": "alice-private-title", "visibility": "private", "context": {"k": "alice-private-value"}}`)
	e.write(alice, `{"title": "marker", "context": {}}`)
	has := func(rc *receiver, s string) bool {
		for _, q := range rc.requests() {
			if strings.Contains(string(q.body), s) {
				return true
			}
		}
		return false
	}
	for _, h := range hooks {
		if h.who == "carol" {
			continue
		}
		waitUntil(t, h.who+"'s marker", func() bool { return has(h.rc, "marker") })
	}
	for _, h := range hooks {
		leaked := has(h.rc, "alice-private")
		switch {
		case h.who == "alice" && !leaked:
			t.Errorf("alice's webhook missed her private breadcrumb")
		case h.who != "alice" && leaked:
			t.Errorf("%s's webhook got alice's private breadcrumb", h.who)
		}
		if h.who == "carol" && len(h.rc.requests()) > 0 {
			t.Errorf("carol's webhook got acme's events")
		}
	}
}
