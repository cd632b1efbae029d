package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/server"
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
