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
// owner. Deliveries go out in parallel, so the marker may arrive before
// the private one: what a webhook was given is read from its deliveries,
// which the fan-out makes in event order (a leaked private one would be
// made with the marker or before it).
func TestWebhookSharedReadIsolation(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	alice := e.token("acme", "alice", server.RoleEmitter)
	bob := e.token("acme", "bob", server.RoleEmitter)
	carol := e.token("beta", "carol", server.RoleEmitter)
	type hook struct {
		who, tok, id string
		rc           *receiver
	}
	var hooks []hook
	for _, who := range []struct {
		name, tok string
	}{{"alice", alice}, {"bob", bob}, {"carol", carol}} {
		for _, sel := range []string{`{}`, `{"kinds": ["created"]}`} {
			rc := newReceiver(t, nil)
			h := e.createHook(who.tok, rc.srv.URL, sel, "view")
			hooks = append(hooks, hook{who.name, who.tok, h.ID, rc})
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
		switch h.who {
		case "alice":
			waitUntil(t, "alice's marker and private breadcrumb", func() bool { return has(h.rc, "marker") && has(h.rc, "alice-private") })
		case "bob":
			waitUntil(t, "bob's marker", func() bool { return has(h.rc, "marker") })
			if n := len(deliveryIDs(t, e, h.tok, h.id, "")); n != 1 || has(h.rc, "alice-private") {
				t.Errorf("bob's webhook has %d deliveries, want 1 (the marker); alice's private one leaked: %v", n, has(h.rc, "alice-private"))
			}
		}
	}
	for _, h := range hooks {
		if h.who == "carol" {
			if n := len(deliveryIDs(t, e, h.tok, h.id, "")); n != 0 || len(h.rc.requests()) > 0 {
				t.Errorf("carol's webhook got acme's events: %d deliveries, %d requests", n, len(h.rc.requests()))
			}
		}
	}
}
