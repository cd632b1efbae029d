package server_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// TestReviewSubscriptionWithHTMLCharsReadsBack: a condition value within
// the 1 KiB bound is stored in its canonical form, which json.Marshal
// writes with HTML escapes (< as \u003c, six bytes). A value of 300 '<'
// is accepted at create, but its stored form is 1,802 bytes, past the
// bound, so reading it back fails: the agent's whole subscription list
// and the subscription itself answer 500.
func TestReviewSubscriptionWithHTMLCharsReadsBack(t *testing.T) {
	e := newEnv(t)
	alice := e.token("acme", "alice", server.RoleEmitter, server.RoleSubscriber)
	// Raw text: json.Marshal would send the value escaped, 1,802 bytes.
	body := `{"name":"lt","selector":{"context_match":[{"path":"$.s","op":"eq","value":"` + strings.Repeat("<", 300) + `"}]}}`
	r := e.do("POST", "/subscriptions", alice, body)
	if r.status != 201 {
		// Refusing it at create is a fix too; accepting it and then
		// failing to read it back is the fault.
		t.Logf("create: %d %s", r.status, r.body)
		return
	}
	id := r.json(t)["id"].(string)
	if r := e.do("GET", "/subscriptions/"+id, alice, nil); r.status != 200 {
		t.Errorf("GET /subscriptions/%s: %d %s", id, r.status, r.body)
	}
	if r := e.do("GET", "/subscriptions", alice, nil); r.status != 200 {
		t.Errorf("GET /subscriptions: %d %s", r.status, r.body)
	}
}

// TestReviewDeletedContextProbedThroughSelector: once a breadcrumb is
// deleted, only the owner's curators may read its history (GET
// /breadcrumbs/{id}/history is 404 for an agent). But a stream resumed
// from before its creation (Last-Event-ID: 0) with a context condition
// replays its created event exactly when the condition holds on the
// deleted version's context, read from history: the condition is an
// oracle, and gt/lt on strings find a value in a few probes per byte. A
// read budget (max_reads) is passed by the same oracle.
func TestReviewDeletedContextProbedThroughSelector(t *testing.T) {
	e := newEnv(t)
	alice := e.token("acme", "alice", server.RoleEmitter, server.RoleSubscriber)
	bob := e.token("acme", "bob", server.RoleSubscriber)
	root := e.token("acme", "root", server.RoleCurator)
	gone := e.create(alice, map[string]any{"title": "pin", "context": map[string]any{"pin": "4711"}})
	if r := e.do("DELETE", "/breadcrumbs/"+gone, root, nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	want(t, e.do("GET", "/breadcrumbs/"+gone+"/history", bob, nil), 404, "not_found")

	sel := url.QueryEscape(`{"kinds":["created"],"context_match":[{"path":"$.pin","op":"gt","value":"4"}]}`)
	ch, stop := e.subscribe(bob, "?selector="+sel, "Last-Event-ID", "0")
	defer stop()
	// A live record that passes the selector too: the stream has an
	// event to show whatever the server does with the deleted one.
	marker := e.create(alice, map[string]any{"title": "marker", "context": map[string]any{"pin": "9"}})
	for {
		ev := next(t, ch, true)
		if strings.Contains(ev.data, gone) {
			t.Fatalf("bob learnt that the deleted record's pin is > \"4\": %s", ev.data)
		}
		if strings.Contains(ev.data, marker) {
			return
		}
	}
}
