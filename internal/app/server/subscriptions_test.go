package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
)

// TestSubscriptionsOverHTTP: an agent stores selectors, lists, reads and
// deletes them, and streams with one; another agent's ids are 404 exactly
// as unknown ones are, on every route; bad selectors are 400 naming the
// part at fault; the count per agent is bounded.
func TestSubscriptionsOverHTTP(t *testing.T) {
	e := newEnv(t)
	alice := e.token("acme", "alice", server.RoleEmitter, server.RoleSubscriber)
	bob := e.token("acme", "bob", server.RoleSubscriber)
	root := e.token("acme", "root", server.RoleCurator)
	emitter := e.token("acme", "carol", server.RoleEmitter)

	body := map[string]any{"name": "open invoices", "description": "billing",
		"selector": map[string]any{"any_tags": []string{"invoice"}, "schema_name": "billing.*",
			"context_match": []any{map[string]any{"path": "$.status", "op": "eq", "value": "open"}}}}
	r := e.do("POST", "/subscriptions", alice, body)
	want(t, r, 201, `"name":"open invoices"`)
	sub := r.json(t)
	id := sub["id"].(string)
	if sub["agent_id"] != "alice" || sub["owner_id"] != "acme" {
		t.Fatalf("created: %s", r.body)
	}
	want(t, e.do("GET", "/subscriptions/"+id, alice, nil), 200, `"schema_name":"billing.*"`)
	want(t, e.do("GET", "/subscriptions", alice, nil), 200, id)
	want(t, e.do("POST", "/subscriptions", emitter, body), 403, "forbidden")

	// Another agent, even the owner's curator, meets the answer of an
	// unknown id.
	unknown := "01900000-0000-7000-8000-000000000000"
	for _, tok := range []string{bob, root} {
		for _, c := range []struct{ method, path string }{{"GET", "/subscriptions/"}, {"DELETE", "/subscriptions/"}, {"GET", "/events/stream?subscription="}} {
			theirs, none := e.do(c.method, c.path+id, tok, nil), e.do(c.method, c.path+unknown, tok, nil)
			if theirs.status != 404 || string(theirs.body) != string(none.body) {
				t.Errorf("%s %s of alice's: %d %s; unknown: %d %s", c.method, c.path, theirs.status, theirs.body, none.status, none.body)
			}
		}
		if r := e.do("GET", "/subscriptions", tok, nil); r.status != 200 || strings.Contains(string(r.body), id) {
			t.Errorf("another agent lists alice's subscription: %s", r.body)
		}
	}

	// Stream with it: only what passes its selector.
	ch, stop := e.subscribe(alice, "?subscription="+id)
	defer stop()
	e.create(alice, map[string]any{"title": "paid", "tags": []string{"invoice"}, "schema_name": "billing.v1", "context": map[string]any{"status": "paid"}})
	e.create(alice, map[string]any{"title": "other schema", "tags": []string{"invoice"}, "schema_name": "crm.v1", "context": map[string]any{"status": "open"}})
	open := e.create(alice, map[string]any{"title": "open", "tags": []string{"invoice", "x"}, "schema_name": "billing.v1", "context": map[string]any{"status": "open"}})
	if ev := next(t, ch, true); ev.event != "created" || !strings.Contains(ev.data, open) {
		t.Fatalf("stream with the subscription: %s %s", ev.event, ev.data)
	}

	// Bad input names the part at fault.
	for _, c := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"name": "x", "selector": map[string]any{"context_match": []any{
			map[string]any{"path": "$.a", "op": "eq", "value": 1}, map[string]any{"path": "$.a", "op": "like", "value": 1}}}},
			`selector.context_match[1].op: \"like\" is not an operator`},
		{map[string]any{"name": "x", "selector": map[string]any{"kinds": []string{"moved"}}}, `selector.kinds[0]`},
		{map[string]any{"name": "x", "selector": map[string]any{"tags": []string{"a"}}}, `selector.tags: unknown member`},
		{map[string]any{"name": "x", "selector": map[string]any{"context_match": []any{map[string]any{"path": "$[", "op": "exists"}}}}, `selector.context_match[0].path`},
		{map[string]any{"name": "x"}, `selector: missing`},
		{map[string]any{"selector": map[string]any{}}, `name: missing`},
		{map[string]any{"name": "x", "selector": map[string]any{}, "colour": 1}, `unknown field`},
	} {
		r := e.do("POST", "/subscriptions", alice, c.body)
		if r.status != 400 || !strings.Contains(string(r.body), c.msg) {
			t.Errorf("%v: %d %s, want 400 with %q", c.body, r.status, r.body, c.msg)
		}
	}
	for _, c := range []struct{ query, msg string }{
		{"?selector=" + url.QueryEscape(`{"any_tags":[1]}`), `selector.any_tags[0]: must be a string`},
		{"?selector=" + url.QueryEscape(`{"context_match":[{"path":"$.a","op":"gt","value":[1]}]}`), `selector.context_match[0].value: gt compares`},
		{"?selector=" + url.QueryEscape(`{`), `"code":"invalid"`},
		{"?selector=%7B%7D&tag=a", `give one of selector, subscription, or tag and schema_name`},
		{"?selector=%7B%7D&subscription=" + id, `give one of`},
	} {
		want(t, e.do("GET", "/events/stream"+c.query, alice, nil), 400, c.msg)
	}

	// The bound is per agent.
	for i := 1; i < store.MaxSubscriptions; i++ {
		want(t, e.do("POST", "/subscriptions", alice, map[string]any{"name": fmt.Sprint("s", i), "selector": map[string]any{}}), 201, "")
	}
	want(t, e.do("POST", "/subscriptions", alice, map[string]any{"name": "more", "selector": map[string]any{}}), 409, "too_many_subscriptions")
	want(t, e.do("POST", "/subscriptions", bob, map[string]any{"name": "bob's", "selector": map[string]any{}}), 201, "")

	want(t, e.do("DELETE", "/subscriptions/"+id, alice, nil), 204, "")
	want(t, e.do("GET", "/subscriptions/"+id, alice, nil), 404, "not_found")
	want(t, e.do("GET", "/events/stream?subscription="+id, alice, nil), 404, "not_found")
}

// TestSelectorStreamLeaksNothing: the stream of an agent that may not read
// bob's private breadcrumb is byte for byte the same (the at timestamps
// aside, which are the clock's) whether that breadcrumb's context passes
// the stream's conditions, fails them, or the breadcrumb is not there at
// all (another owner's writes take its sequence numbers).
func TestSelectorStreamLeaksNothing(t *testing.T) {
	sel := url.QueryEscape(`{"context_match":[{"path":"$.secret","op":"eq","value":"x"}]}`)
	at := regexp.MustCompile(`"at":"[^"]*"`)
	run := func(hidden string) string {
		e := newEnv(t, func(o *server.Options) { o.PingEvery = time.Hour })
		alice := e.token("acme", "alice", server.RoleSubscriber)
		bob := e.token("acme", "bob", server.RoleEmitter)
		gina := e.token("globex", "gina", server.RoleEmitter)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/events/stream?selector="+sel, nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", err, resp)
		}
		defer resp.Body.Close()

		// The hidden writes: a private breadcrumb of bob's, created and
		// updated, or as many writes of another owner's.
		hiddenWrites := func(n int) {
			if hidden == "" {
				id := e.create(gina, map[string]any{"title": "elsewhere", "context": map[string]any{"secret": "x", "n": n}})
				want(t, e.do("DELETE", "/breadcrumbs/"+id, e.token("globex", "root", server.RoleCurator), nil), 204, "")
				return
			}
			id := e.create(bob, map[string]any{"title": "bob's", "visibility": "private", "context": map[string]any{"secret": hidden, "n": n}})
			want(t, e.do("PATCH", "/breadcrumbs/"+id, bob, map[string]any{"context": map[string]any{"secret": hidden, "n": n + 1}}), 200, "")
		}
		hiddenWrites(1)
		seen := e.create(bob, map[string]any{"title": "team", "context": map[string]any{"secret": "x"}})
		hiddenWrites(10)
		e.create(bob, map[string]any{"title": "team, no match", "context": map[string]any{"secret": "y"}})
		end := e.create(bob, map[string]any{"title": "end", "context": map[string]any{"secret": "x", "end": true}})

		var got strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			got.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), end) {
				break
			}
		}
		out := got.String()
		if !strings.Contains(out, seen) || strings.Count(out, "event: created") != 2 {
			t.Fatalf("alice's stream:\n%s", out)
		}
		// Ids of breadcrumbs differ between runs; their places do not.
		out = strings.NewReplacer(seen, "SEEN", end, "END").Replace(out)
		return at.ReplaceAllString(out, `"at":"T"`)
	}
	matching, failing, absent := run("x"), run("y"), run("")
	if matching != failing || matching != absent {
		t.Fatalf("streams differ:\nhidden record matching:\n%s\nfailing:\n%s\nabsent:\n%s", matching, failing, absent)
	}
}
