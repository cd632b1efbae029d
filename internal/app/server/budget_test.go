package server_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// TestReadBudgetOwnersOnly: another owner's agents may read a public
// breadcrumb with a read budget as often as they like without spending it
// (so they cannot delete it), a HEAD spends none, and the owner's own reads
// spend it down to its deletion.
func TestReadBudgetOwnersOnly(t *testing.T) {
	e := newEnv(t)
	owner := e.token("acme", "a", server.RoleEmitter)
	stranger := e.token("globex", "spy", server.RoleCurator)
	id := e.create(owner, map[string]any{"title": "shared", "context": map[string]any{"k": 1}, "visibility": "public",
		"ttl_type": "usage", "ttl_config": map[string]any{"max_reads": 2}})

	for i := 0; i < 5; i++ {
		want(t, e.do("GET", "/breadcrumbs/"+id, stranger, nil), 200, id)
		want(t, e.do("GET", "/breadcrumbs/"+id+"/full", stranger, nil), 200, `"reads":0`)
	}
	for _, path := range []string{"/breadcrumbs/" + id, "/breadcrumbs/" + id + "/full"} {
		for _, tok := range []string{owner, stranger} {
			for i := 0; i < 3; i++ {
				if r := e.do("HEAD", path, tok, nil); r.status != 200 {
					t.Fatalf("HEAD %s: %d", path, r.status)
				}
			}
		}
	}
	want(t, e.do("GET", "/breadcrumbs/"+id+"/full", owner, nil), 200, `"reads":1`)
	want(t, e.do("GET", "/breadcrumbs/"+id, owner, nil), 200, id)
	want(t, e.do("GET", "/breadcrumbs/"+id, stranger, nil), 404, "not_found")
	if r := e.do("HEAD", "/breadcrumbs/"+id, owner, nil); r.status != 404 {
		t.Fatalf("HEAD after the budget ran out: %d", r.status)
	}
}
