package server_test

import (
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
