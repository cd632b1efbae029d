package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
)

type searchReply struct {
	Meta struct {
		Status         string          `json:"status"`
		ErrorCode      string          `json:"error_code"`
		Message        string          `json:"message"`
		Source         string          `json:"source"`
		FreshnessState string          `json:"freshness_state"`
		IndexStatus    json.RawMessage `json:"index_status"`
	} `json:"meta"`
	Items []struct {
		ID         string          `json:"id"`
		Title      string          `json:"title"`
		Context    json.RawMessage `json:"context"`
		ViewStatus string          `json:"view_status"`
		Score      float64         `json:"score"`
		Path       string          `json:"path"`
		Lines      []struct {
			Line int    `json:"line"`
			Text string `json:"text"`
		} `json:"lines"`
	} `json:"items"`
}

func (e *env) search(token, query string) (reply, searchReply) {
	e.t.Helper()
	r := e.do("GET", "/breadcrumbs/search?"+query, token, nil)
	var sr searchReply
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.body, &sr); err != nil {
			e.t.Fatalf("search reply: %v: %s", err, r.body)
		}
	}
	return r, sr
}

func titlesOf(sr searchReply) []string {
	var out []string
	for _, it := range sr.Items {
		out = append(out, it.Title)
	}
	return out
}

func TestSearchEndpoint(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	other := e.token("evil", "m", server.RoleCurator)
	e.create(tok, map[string]any{"title": "Payroll", "description": "monthly run",
		"context":   map[string]any{"team": "finance", "ssn": "secretvalue", "note": "visibleword"},
		"llm_hints": map[string]any{"exclude": []string{"ssn"}}, "tags": []string{"hr"}})
	e.create(tok, map[string]any{"title": "Profile", "context": map[string]any{"name": "Alice", "card": "hiddencard"},
		"llm_hints": map[string]any{"transform": map[string]any{"summary": map[string]any{"type": "template", "template": "Summary for {{context.name}}"}}}})
	e.create(tok, map[string]any{"title": "Finance notes", "context": map[string]any{"x": "payroll appears here"}})

	r, sr := e.search(tok, "q=payroll")
	want(t, r, 200, `"source":"STORE"`)
	if sr.Meta.Status != "OK" || sr.Meta.FreshnessState != "FRESH" || string(sr.Meta.IndexStatus) != "null" {
		t.Fatalf("meta: %s", r.body)
	}
	if got := titlesOf(sr); len(got) != 2 || got[0] != "Payroll" {
		t.Fatalf("title match first: %q", got)
	}
	if strings.Contains(string(sr.Items[0].Context), "secretvalue") || sr.Items[0].ViewStatus != "OK" || sr.Items[0].Score <= 0 {
		t.Fatalf("item is not the view: %s", r.body)
	}
	// Hidden fields are not searchable; what the view shows is.
	for q, n := range map[string]int{"secretvalue": 0, "ssn": 0, "hiddencard": 0, "card": 0, "visibleword": 1, "summary alice": 1} {
		if _, sr := e.search(tok, "q="+url.QueryEscape(q)); len(sr.Items) != n {
			t.Errorf("%q: %q, want %d", q, titlesOf(sr), n)
		}
	}
	// Filters and limits.
	if _, sr := e.search(tok, "q=payroll&tag=hr"); len(sr.Items) != 1 {
		t.Errorf("tag filter: %q", titlesOf(sr))
	}
	if _, sr := e.search(tok, "q=payroll&limit=1"); len(sr.Items) != 1 {
		t.Errorf("limit: %q", titlesOf(sr))
	}
	// Owner isolation.
	if _, sr := e.search(other, "q=payroll"); len(sr.Items) != 0 {
		t.Errorf("another owner found %q", titlesOf(sr))
	}
	for _, q := range []string{"", "q=", "q=+++", "q=" + strings.Repeat("a", 1025), "q=a&limit=0", "q=a&limit=101", "q=a&limit=x", "q=-only"} {
		r, _ := e.search(tok, q)
		want(t, r, 400, `"code":"invalid"`)
	}
	want(t, e.do("GET", "/breadcrumbs/search?q=a", "", nil), 401, "unauthorized")
}

// TestSearchFollowsHints: a write that changes the hints or the context
// changes what is searchable, through every write path.
func TestSearchFollowsHints(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	id := e.create(tok, map[string]any{"title": "Doc", "context": map[string]any{"a": "alphaword", "b": "betaword"}})
	count := func(q string) int {
		_, sr := e.search(tok, "q="+q)
		return len(sr.Items)
	}
	if count("alphaword") != 1 || count("betaword") != 1 {
		t.Fatal("before")
	}
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"llm_hints": map[string]any{"exclude": []string{"a"}}}), 200, "")
	if count("alphaword") != 0 || count("betaword") != 1 {
		t.Fatal("after excluding a")
	}
	want(t, e.do("POST", "/breadcrumbs/"+id+"/context/merge", tok, map[string]any{"context": map[string]any{"c": "gammaword", "a": "deltaword"}}), 200, "")
	if count("gammaword") != 1 || count("deltaword") != 0 {
		t.Fatal("after merge")
	}
	want(t, e.do("POST", "/breadcrumbs/"+id+"/tags/add", tok, map[string]any{"tags": []string{"tagword"}}), 200, "")
	if count("tagword") != 1 || count("gammaword") != 1 || count("deltaword") != 0 {
		t.Fatal("after tags")
	}
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"llm_hints": nil}), 200, "")
	if count("deltaword") != 1 {
		t.Fatal("after clearing hints")
	}
}

// FuzzSearchRoute: no query string makes the search endpoint fail with a
// 5xx.
func FuzzSearchRoute(f *testing.F) {
	e := newEnv(f)
	tok := e.token("acme", "a", server.RoleEmitter)
	e.create(tok, map[string]any{"title": "some words OR \"quoted\"", "context": map[string]any{"k": "near(x) col:umn 'q'"}})
	for _, s := range []string{"words", `"quoted" OR x`, "-", "*", "col:umn", "NEAR(x y)", "'); DROP TABLE x;--", "\x00", "%ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		te := &env{t: t, url: e.url, key: e.key}
		r := te.do("GET", "/breadcrumbs/search?q="+url.QueryEscape(q), tok, nil)
		if r.status >= 500 {
			t.Fatalf("%q: %d %s", q, r.status, r.body)
		}
	})
}

// TestOpenAPIDocumentsSearch: the search, workspace and MCP routes are in
// the served document.
func TestOpenAPIDocumentsSearch(t *testing.T) {
	e := newEnv(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(e.do("GET", "/openapi.json", "", nil).body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, rt := range [][2]string{{"get", "/breadcrumbs/search"}, {"get", "/workspace/search"}, {"post", "/mcp"}} {
		if _, ok := doc.Paths[rt[1]][rt[0]]; !ok {
			t.Errorf("openapi.json does not document %s %s", rt[0], rt[1])
		}
	}
}

// TestSearchViewThatFailsAtWrite: a view whose rules fail when the
// breadcrumb is written makes no field of its context searchable (its
// fallback, the filtered context, is not the view), through create and
// update; title, description and tags stay searchable.
func TestSearchViewThatFailsAtWrite(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	hints := map[string]any{"transform": map[string]any{"spin": map[string]any{"type": "jq", "query": "def f: f; f"}}}
	id := e.create(tok, map[string]any{"title": "spinning titleword", "context": map[string]any{"card": "hiddencardone"}, "llm_hints": hints})
	count := func(q string) int {
		_, sr := e.search(tok, "q="+q)
		return len(sr.Items)
	}
	if count("hiddencardone") != 0 || count("hiddencard*") != 0 || count("card") != 0 || count("titleword") != 1 {
		t.Fatal("after create: a hidden field is searchable")
	}
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"context": map[string]any{"card": "hiddencardtwo"}}), 200, "")
	if count("hiddencardtwo") != 0 || count("hiddencard*") != 0 || count("titleword") != 1 {
		t.Fatal("after update: a hidden field is searchable")
	}
}

// timedStore measures how long update mutations run: the time they hold
// the store's write transaction.
type timedStore struct {
	store.Store
	mu      sync.Mutex
	longest time.Duration
}

func (s *timedStore) Update(ctx context.Context, a store.Actor, id string, v int64, m store.Mutation) (store.Breadcrumb, error) {
	return s.Store.Update(ctx, a, id, v, func(b *store.Breadcrumb) error {
		t0 := time.Now()
		err := m(b)
		s.mu.Lock()
		s.longest = max(s.longest, time.Since(t0))
		s.mu.Unlock()
		return err
	})
}

// TestUpdateComputesViewOutsideTransaction: PATCH, tags and merge compute
// the new version's view before the store's write transaction, not inside
// it; the search text still follows the update, and If-Match still holds.
func TestUpdateComputesViewOutsideTransaction(t *testing.T) {
	ts := &timedStore{Store: newStore(t)}
	e := newEnvOn(t, ts, nil, func(o *server.Options) { o.RuleTimeout = 300 * time.Millisecond })
	tok := e.token("acme", "a", server.RoleEmitter)
	slow := map[string]any{"transform": map[string]any{"spin": map[string]any{"type": "jq", "query": "def f: f; f"}}}
	id := e.create(tok, map[string]any{"title": "doc", "context": map[string]any{"k": "v"}, "llm_hints": slow})
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"title": "doc2"}, "If-Match", "1"), 200, "")
	want(t, e.do("POST", "/breadcrumbs/"+id+"/tags/add", tok, map[string]any{"tags": []string{"x"}}), 200, "")
	want(t, e.do("POST", "/breadcrumbs/"+id+"/context/merge", tok, map[string]any{"context": map[string]any{"k2": "v2"}}), 200, "")
	if ts.longest > 100*time.Millisecond {
		t.Fatalf("a mutation held the write transaction for %v: the view ran inside it", ts.longest)
	}
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, map[string]any{"title": "doc3"}, "If-Match", "1"), 412, "version_mismatch")

	// The view's text is still what search matches after an update.
	tmpl := map[string]any{"transform": map[string]any{"s": map[string]any{"type": "template", "template": "Card of {{context.name}}"}}}
	id2 := e.create(tok, map[string]any{"title": "person", "context": map[string]any{"name": "ann", "card": "hiddenc"}, "llm_hints": tmpl})
	want(t, e.do("PATCH", "/breadcrumbs/"+id2, tok, map[string]any{"context": map[string]any{"name": "zed", "card": "hiddend"}}, "If-Match", "1"), 200, "")
	for q, n := range map[string]int{"zed": 1, "ann": 0, "hiddend": 0, "hiddenc": 0} {
		if _, sr := e.search(tok, "q="+q); len(sr.Items) != n {
			t.Errorf("%q: %d hits, want %d", q, len(sr.Items), n)
		}
	}
}

// TestSearchSaysWhenRankingWasBounded: a query matching more breadcrumbs
// than the server ranks says so in the envelope's message.
func TestSearchSaysWhenRankingWasBounded(t *testing.T) {
	e := newEnv(t, func(o *server.Options) { o.SearchMaxRanked = 2 })
	tok := e.token("acme", "a", server.RoleEmitter)
	for range 3 {
		e.create(tok, map[string]any{"title": "common word", "context": map[string]any{}})
	}
	_, sr := e.search(tok, "q=common")
	if len(sr.Items) != 2 || !strings.Contains(sr.Meta.Message, "ranks at most the 2 newest matching breadcrumbs") {
		t.Fatalf("bounded: %+v", sr)
	}
	e.create(tok, map[string]any{"title": "rare word", "context": map[string]any{}})
	if _, sr := e.search(tok, "q=rare"); len(sr.Items) != 1 || sr.Meta.Message != "" {
		t.Fatalf("not bounded: %+v", sr)
	}
}

// TestSearchScoresAreNoOracle: the attack of a tenant that reads another
// owner's access key from its own search scores. A tenant with only the
// emitter role plants breadcrumbs holding each prefix of a guess and
// probes with prefix queries (AKIA1*, AKIA1A*, ...), plain and ORed with a
// word of its own; corpus-wide ranking statistics would move its scores
// when another owner stores a key with those prefixes. Every response is
// byte-identical whether or not the other owner stored it.
func TestSearchScoresAreNoOracle(t *testing.T) {
	e := newEnv(t)
	spy := e.token("evil", "m", server.RoleEmitter)
	victim := e.token("acme", "a", server.RoleEmitter)
	const key = "AKIA1ABCDEFGHIJKLMNO"
	for k := 5; k <= len(key); k++ {
		e.create(spy, map[string]any{"title": fmt.Sprintf("probe %d", k), "description": strings.ToLower(key[:k]) + " decoy",
			"context": map[string]any{"note": key[:k] + " filler words " + strings.Repeat("decoy ", k%4)}})
	}
	e.create(spy, map[string]any{"title": "AKIA1Z other", "context": map[string]any{"k": "AKIA1ZZZZ"}})
	var probes []string
	for k := 5; k <= len(key); k++ {
		probes = append(probes, key[:k]+"*", key[:k]+"* OR decoy", `"`+key[:k]+` filler"`, key[:k]+"* -akia1z*")
	}
	probes = append(probes, "akia*", "decoy", "filler words", "AKIA1ABCDEFGHIJKLMNO")
	probe := func() []string {
		out := make([]string, len(probes))
		for i, q := range probes {
			r := e.do("GET", "/breadcrumbs/search?q="+url.QueryEscape(q), spy, nil)
			want(t, r, 200, "")
			out[i] = string(r.body)
		}
		return out
	}
	before := probe()
	if !strings.Contains(before[0], `"score":`) || strings.Contains(before[0], `"items":[]`) {
		t.Fatalf("the probe finds nothing of its own: %s", before[0])
	}
	for i := range 5 {
		e.create(victim, map[string]any{"title": "aws " + key, "description": "the deploy key " + key,
			"context": map[string]any{"aws_access_key_id": key, "n": i}, "tags": []string{strings.ToLower(key)}})
	}
	e.create(victim, map[string]any{"title": "notes", "context": map[string]any{"text": key + " filler words decoy"}})
	after := probe()
	for i := range probes {
		if before[i] != after[i] {
			t.Errorf("%q: the response changed when another owner stored a key:\n before: %s\n after:  %s", probes[i], before[i], after[i])
		}
	}
}
