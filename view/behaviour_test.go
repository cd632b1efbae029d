package view_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/internal/lru"
	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/ctxkit/ctxkit/view"
)

func mustCompile(t testing.TB, hints string, opts view.Options) *view.View {
	t.Helper()
	v, err := view.CompileWith([]byte(hints), opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustDecode(t testing.TB, s string) any {
	t.Helper()
	v, err := view.DecodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTemplateIterationCap(t *testing.T) {
	v := mustCompile(t, `{"exclude":["k"],"transform":{"t":{"type":"template","template":"{{#each context.a}}{{#each ../context.a}}x{{/each}}{{/each}}"}}}`,
		view.Options{MaxTemplateIterations: 50, RuleTimeout: time.Minute})
	res := v.Apply(context.Background(), view.Record{Context: mustDecode(t, `{"k":1,"a":[1,2,3,4,5,6,7,8]}`)})
	if res.Status != view.StatusFallback || res.Err.Code != view.CodeRuleTooLarge || res.Err.Path != "transform.t" {
		t.Fatalf("got %+v", res)
	}
	if _, leaked := res.Value.(map[string]any)["k"]; leaked {
		t.Fatal("fallback carried an excluded key")
	}
	// Within the cap the same template runs.
	res = v.Apply(context.Background(), view.Record{Context: mustDecode(t, `{"a":[1,2,3,4,5,6]}`)})
	if res.Status != view.StatusOK || res.Value.(map[string]any)["t"] != strings.Repeat("x", 36) {
		t.Fatalf("got %+v", res)
	}
}

func TestTemplateDeadline(t *testing.T) {
	v := mustCompile(t, `{"transform":{"t":{"type":"template","template":"{{#each context.a}}{{#each ../context.a}}{{#each ../../context.a}}{{#each ../../../context.a}}x{{/each}}{{/each}}{{/each}}{{/each}}"}}}`,
		view.Options{MaxTemplateIterations: 1 << 30, MaxOutputBytes: 1 << 30, RuleTimeout: 20 * time.Millisecond})
	a := make([]string, 60)
	for i := range a {
		a[i] = fmt.Sprint(i)
	}
	start := time.Now()
	res := v.Apply(context.Background(), view.Record{Context: mustDecode(t, `{"a":[`+strings.Join(a, ",")+`]}`)})
	if res.Status != view.StatusFallback || res.Err.Code != view.CodeRuleTimeout {
		t.Fatalf("got status %s err %v", res.Status, res.Err)
	}
	// 60^4 iterations would take many seconds; the deadline stopped it.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestTemplateOutputCap(t *testing.T) {
	v := mustCompile(t, `{"transform":{"t":{"type":"template","template":"{{#each context.a}}{{../context.s}}{{/each}}"}}}`,
		view.Options{MaxOutputBytes: 1000, RuleTimeout: time.Minute})
	res := v.Apply(context.Background(), view.Record{Context: mustDecode(t, `{"s":"`+strings.Repeat("y", 100)+`","a":[1,2,3,4,5,6,7,8,9,10,11]}`)})
	if res.Status != view.StatusFallback || res.Err.Code != view.CodeRuleTooLarge {
		t.Fatalf("got %+v", res)
	}
}

func TestExtractAndFormatOutputCap(t *testing.T) {
	ctx := mustDecode(t, `{"s":"`+strings.Repeat("z", 2000)+`","o":{"s":"`+strings.Repeat("z", 2000)+`"}}`)
	for _, hints := range []string{
		`{"transform":{"r":{"type":"extract","value":"$..s"}}}`,
		`{"transform":{"r":{"type":"format","format":"{context.o}"}}}`,
		`{"transform":{"r":{"type":"format","format":"{context.s}{context.s}"}}}`,
		`{"transform":{"r":{"type":"jq","query":"[.s,.s]"}}}`,
	} {
		res := mustCompile(t, hints, view.Options{MaxOutputBytes: 1500, RuleTimeout: time.Minute}).Apply(context.Background(), view.Record{Context: ctx})
		if res.Status != view.StatusFallback || res.Err.Code != view.CodeRuleTooLarge {
			t.Errorf("%s: got %s %v", hints, res.Status, res.Err)
		}
	}
}

func TestCallerCancellation(t *testing.T) {
	v := mustCompile(t, `{"transform":{"a":{"type":"jq","query":"def f: f; f"}}}`, view.Options{RuleTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	res := v.Apply(ctx, view.Record{Context: map[string]any{}})
	if res.Status != view.StatusFallback || res.Err.Code != view.CodeRuleTimeout {
		t.Fatalf("got %+v", res)
	}
	// An already-cancelled context runs no rule at all.
	res = v.Apply(ctx, view.Record{Context: map[string]any{}})
	if res.Status != view.StatusFallback || !strings.Contains(res.Err.Error(), "not run") {
		t.Fatalf("got %+v", res)
	}
}

func TestErrorsIsAndAs(t *testing.T) {
	_, err := view.Compile([]byte(`{"transform":{"count":{"type":"jq","query":".items | ]"}}}`))
	if !errors.Is(err, &view.Error{Code: view.CodeInvalidJQ}) {
		t.Fatalf("errors.Is by code failed: %v", err)
	}
	if !errors.Is(err, &view.Error{Code: view.CodeInvalidJQ, Path: "transform.count.query"}) {
		t.Fatalf("errors.Is by code and path failed: %v", err)
	}
	if errors.Is(err, &view.Error{Code: view.CodeInvalidJSONPath}) {
		t.Fatal("matched the wrong code")
	}
	var ve *view.Error
	if !errors.As(err, &ve) || ve.Err == nil {
		t.Fatalf("want the parser's error wrapped: %#v", ve)
	}
	if !strings.HasPrefix(err.Error(), "transform.count.query: ") {
		t.Fatalf("message %q does not start with the place", err)
	}
}

func TestApplyDoesNotModifyInput(t *testing.T) {
	const in = `{"a":{"b":1,"c":2},"list":[{"p":1,"q":2}],"secret":1}`
	ctx := mustDecode(t, in)
	for _, hints := range []string{
		`{"exclude":["a.b","list.p","secret"]}`,
		`{"include":["a.c","list.q"],"exclude":["a.c"]}`,
		`{"mode":"merge","exclude":["secret"],"transform":{"a":{"type":"literal","literal":1}}}`,
		`{"transform":{"j":{"type":"jq","query":".a.b = 5 | .list[0].p = 9"}}}`,
	} {
		mustCompile(t, hints, view.Options{}).Apply(context.Background(), view.Record{Context: ctx})
		got, _ := canonjson.Marshal(ctx)
		want, _ := canonjson.Marshal(mustDecode(t, in))
		if string(got) != string(want) {
			t.Fatalf("%s modified the input: %s", hints, got)
		}
	}
}

// A compiled view is shared by every request for records with the same hints.
// Run every rule kind from many goroutines at once; -race checks the rest.
func TestConcurrentApply(t *testing.T) {
	v := mustCompile(t, `{"exclude":["secret","items.pw"],"mode":"merge","transform":{
		"summary":{"type":"template","template":"{{title}}: {{#each context.items}}{{name}}{{/each}} {{context.items.length}}"},
		"names":{"type":"extract","value":"$.items[*].name"},
		"count":{"type":"jq","query":".items | map(.n += 1) | length"},
		"kind":{"type":"literal","literal":{"v":1}},
		"line":{"type":"format","format":"{title} {context.items.0.name}"}}}`, view.Options{RuleTimeout: time.Minute})
	shared := mustDecode(t, `{"secret":1,"items":[{"name":"a","n":1,"pw":"x"},{"name":"b","n":2,"pw":"y"}]}`)
	want, _ := canonjson.Marshal(v.Apply(context.Background(), view.Record{Title: "T", Context: shared}).Value)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				res := v.Apply(context.Background(), view.Record{Title: "T", Context: shared})
				got, _ := canonjson.Marshal(res.Value)
				if res.Status != view.StatusOK || string(got) != string(want) {
					errs <- fmt.Sprintf("run %d: %s %v %s", i, res.Status, res.Err, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if strings.Contains(string(want), "secret") || strings.Contains(string(want), "pw") {
		t.Fatalf("excluded data in view: %s", want)
	}
}

func TestHashIsCanonical(t *testing.T) {
	a, err := view.Hash([]byte(`{"mode":"merge","exclude":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := view.Hash([]byte("{ \"exclude\" : [ \"a\" ],\n \"mode\": \"merge\" }"))
	c, _ := view.Hash([]byte(`{"mode":"replace","exclude":["a"]}`))
	if a != b || a == c || !strings.HasPrefix(a, "sha256:") {
		t.Fatalf("a=%s b=%s c=%s", a, b, c)
	}
	v, _ := view.Compile([]byte(`{"exclude":["a"],"mode":"merge"}`))
	if v.Hash() != a {
		t.Fatalf("View.Hash %s != Hash %s", v.Hash(), a)
	}
}

func TestCacheCompilesOnce(t *testing.T) {
	c := view.NewCache(2, view.Options{})
	h1 := []byte(`{"transform":{"t":{"type":"template","template":"{{title}}"},"q":{"type":"jq","query":".a"}}}`)
	v1, err := c.Compile(h1)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := c.Compile([]byte(`{ "transform": {"q":{"query":".a","type":"jq"}, "t":{"type":"template","template":"{{title}}"}}}`))
	if v1 != v2 {
		t.Fatal("same hints compiled twice")
	}
	// A hit only hashes: a small constant number of allocations, whatever the rules.
	allocs := testing.AllocsPerRun(100, func() { c.Compile(h1) })
	fresh := testing.AllocsPerRun(20, func() { view.Compile(h1) })
	if allocs*4 > fresh {
		t.Fatalf("cache hit allocates %v, a fresh compile %v", allocs, fresh)
	}
	if _, err := c.Compile([]byte(`{"mode":"x"}`)); err == nil || c.Len() != 1 {
		t.Fatalf("bad hints: err=%v len=%d", err, c.Len())
	}
	c.Compile([]byte(`{"exclude":["a"]}`))
	c.Compile([]byte(`{"exclude":["b"]}`))
	if c.Len() != 2 {
		t.Fatalf("cache grew past its size: %d", c.Len())
	}
	if v3, _ := c.Compile(h1); v3 == v1 {
		t.Fatal("least recently used view was not evicted")
	}
}

func TestResultCacheKey(t *testing.T) {
	l := lru.New[view.ResultKey, []byte](8)
	k := view.ResultKey{RecordID: "r", Version: 1, HintsHash: "sha256:x"}
	l.Add(k, []byte("v1"))
	if _, ok := l.Get(view.ResultKey{RecordID: "r", Version: 2, HintsHash: "sha256:x"}); ok {
		t.Fatal("a new version hit the old entry")
	}
	if _, ok := l.Get(view.ResultKey{RecordID: "r", Version: 1, HintsHash: "sha256:y"}); ok {
		t.Fatal("new hints hit the old entry")
	}
	if got, ok := l.Get(k); !ok || string(got) != "v1" {
		t.Fatal("miss on the same key")
	}
}

func TestMeasure(t *testing.T) {
	before := []byte(`{"items":[{"name":"ann","id":1,"bio":"a long biography of ann that nobody reads"},{"name":"bob","id":2,"bio":"another long biography"}]}`)
	s, err := view.Measure("", before, []byte(`{"names":["ann","bob"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Encoding != "o200k_base" || s.TokensBefore <= s.TokensAfter || s.TokensAfter == 0 || s.SavedPercent <= 0 || s.SavedPercent >= 100 {
		t.Fatalf("%+v", s)
	}
	c, err := tokencount.Codec("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Count("hello world")
	if err != nil || n != 2 {
		t.Fatalf("cl100k_base hello world: %d %v", n, err)
	}
	if _, err := view.Measure("gpt9_base", before, before); err == nil || !strings.Contains(err.Error(), "o200k_base") {
		t.Fatalf("unknown encoding: %v", err)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                "empty input",
		"{\"a\":\n  tru}": "line 2, column",
		"{\"a\":1":        "unexpected end",
		"{} x":            "after the JSON value",
		"[1,2,]":          "line 1, column 6",
	} {
		_, err := view.DecodeJSON([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestDecodeRecord(t *testing.T) {
	rec, hints, err := view.DecodeRecord([]byte(`{"id":"x","title":"T","tags":["a"],"version":3,"schema_name":"s","context":{"a":1},"llm_hints":{"exclude":["a"]},"owner_id":"ignored"}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID != "x" || rec.Title != "T" || rec.Version != 3 || rec.SchemaName != "s" || len(rec.Tags) != 1 || string(hints) != `{"exclude":["a"]}` {
		t.Fatalf("%+v %s", rec, hints)
	}
	for in, want := range map[string]string{
		`[]`:                            "record: must be a JSON object",
		`{"title":1,"context":{}}`:      "record.title",
		`{"tags":["a",2],"context":{}}`: "record.tags[1]",
		`{"tags":"a","context":{}}`:     "record.tags",
		`{"version":1.5,"context":{}}`:  "record.version",
		`{"title":"no context"}`:        "record.context",
	} {
		if _, _, err := view.DecodeRecord([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestHintsSizeLimit(t *testing.T) {
	big := `{"transform":{"l":{"type":"literal","literal":"` + strings.Repeat("a", 300<<10) + `"}}}`
	if _, err := view.Compile([]byte(big)); !errors.Is(err, &view.Error{Code: view.CodeTooLarge}) {
		t.Fatalf("got %v", err)
	}
	if _, err := view.CompileWith([]byte(big), view.Options{MaxHintsBytes: 1 << 20}); err != nil {
		t.Fatalf("raised limit: %v", err)
	}
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	if _, err := view.Compile([]byte(`{"transform":{"l":{"type":"literal","literal":` + deep + `}}}`)); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Fatalf("deep hints: %v", err)
	}
}

// TestWarningsForContextPaths: a template or format path that is not a
// record field while the context has one of that name renders "" — and
// the result says so, naming the rule and the context. path; a path that
// is right, or that neither has, warns of nothing.
func TestWarningsForContextPaths(t *testing.T) {
	hints := []byte(`{"transform": {
		"list": {"type": "template", "template": "{{#each users}}{{name}}{{/each}}|{{#each context.users}}{{name}}{{/each}}|{{nothere}}|{{title}}"},
		"line": {"type": "format", "format": "{region} / {context.region} / {title}"},
		"ok":   {"type": "template", "template": "{{context.region}}"}}}`)
	v, err := view.Compile(hints)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := view.DecodeJSON([]byte(`{"users": [{"name": "ada"}], "region": "eu"}`))
	res := v.Apply(context.Background(), view.Record{Title: "T", Context: c})
	if res.Status != view.StatusOK {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	got := map[string][]string{}
	for _, w := range res.Warnings {
		got[w.Path] = append(got[w.Path], w.Message)
	}
	if len(res.Warnings) != 2 || len(got["transform.list"]) != 1 || len(got["transform.line"]) != 1 ||
		!strings.Contains(got["transform.list"][0], "context.users") || !strings.Contains(got["transform.line"][0], "context.region") {
		t.Fatalf("warnings: %+v", res.Warnings)
	}
	if out := res.Value.(map[string]any); out["list"] != "|ada||T" || out["line"] != " / eu / T" {
		t.Fatalf("value: %v", res.Value)
	}
	// Through ApplyJSON too, and none when the paths are right.
	_, res, err = v.ApplyJSON(context.Background(), []byte(`{"other": 1}`), view.Record{Title: "T"})
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("no such context field: %v %+v", err, res.Warnings)
	}
}
