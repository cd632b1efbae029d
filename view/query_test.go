package view_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/theory/jsonpath"

	"github.com/ctxkit/ctxkit/view"
)

// FuzzQuerySelect: a compiled query selects what theory/jsonpath selects
// (singular queries take a shorter path of their own).
func FuzzQuerySelect(f *testing.F) {
	for _, s := range [][2]string{
		{`$.a.b`, `{"a":{"b":[1,2]}}`}, {`$.a[-1]`, `{"a":[1,2,3]}`}, {`$["x\"y"][0]`, `{"x\"y":[true]}`},
		{`$['\u00e9']`, `{"é":1}`}, {`$.a[*]`, `{"a":[1,{"b":2}]}`}, {`$`, `3`}, {`$[0][-4]`, `[[1,2]]`},
		{`$..b`, `{"a":{"b":1},"b":2}`}, {`$.a[?@ > 1]`, `{"a":[1,2,3]}`},
		{`$..*`, `[[1,[2]],{"a":[3]}]`}, {`$[::-1][1:3,0]`, `[[1,2,3],[4,5,6]]`}, {`$[*,*][0,-1]`, `[[1,2],[3]]`},
		{`$..[?@.k == $[0].k]`, `[{"k":1},[{"k":1}]]`}, {`$[5:1:-2]..[*]`, `[0,[1],2,[[3]],4,[5]]`},
		{`$[?length(@) > 1]`, `[[1],[1,2],"ab"]`}, {`$.a[?@..c]`, `{"a":[{"b":{"c":1}},2]}`},
		{`$[?@[?@[0] == "]@"] || count($[*]) > 1]`, `[[[1]],[["]@"]],[]]`}, {`$[?match(@, "a.*")]`, `["ab","b"]`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, src, doc string) {
		q, err := view.CompileQuery(src)
		if err != nil {
			return
		}
		v, err := view.DecodeJSON([]byte(doc))
		if err != nil {
			return
		}
		got, err := q.Select(v)
		if err != nil {
			return // priced out
		}
		want := []any(jsonpath.MustParse(src).Select(v))
		if len(got) != len(want) {
			t.Fatalf("%s on %s: %v, want %v", src, doc, got, want)
		}
		if !hasObjectOfTwo(v) {
			if len(got) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s on %s: %v, want %v", src, doc, got, want)
			}
			return
		}
		// An object's members come in no set order: compare as multisets.
		if g, w := sortedJSON(t, got), sortedJSON(t, want); !slices.Equal(g, w) {
			t.Fatalf("%s on %s: %v, want %v", src, doc, g, w)
		}
	})
}

// hasObjectOfTwo reports whether v holds an object of two or more
// members, whose order a selection need not keep.
func hasObjectOfTwo(v any) bool {
	switch c := v.(type) {
	case map[string]any:
		if len(c) > 1 {
			return true
		}
		for _, x := range c {
			if hasObjectOfTwo(x) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(c, hasObjectOfTwo)
	}
	return false
}

func sortedJSON(t *testing.T, nodes []any) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

// TestQuerySelectCost: a query is priced by the document's nodes times the
// nodes it may produce per node, before it runs; past MaxQueryWork it
// selects nothing and says why, and a QueryBudget shared by several
// queries bounds their sum.
func TestQuerySelectCost(t *testing.T) {
	// 100,000 zeros: `$..*` (one unit a node) fits in MaxQueryWork, a
	// descendant segment of 64 wildcards (64 units a node) does not.
	const n = 100_000
	doc, err := view.DecodeJSON([]byte("[" + strings.Repeat("0,", n-1) + "0]"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := view.CompileQuery(`$..*`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := all.Select(doc)
	if err != nil || len(got) != n {
		t.Fatalf("$..* selected %d nodes (%v); want %d", len(got), err, n)
	}
	four, err := view.CompileQuery(`$..[` + strings.Repeat("*,", 63) + `*]`)
	if err != nil {
		t.Fatal(err)
	}
	got, err = four.Select(doc)
	var ve *view.Error
	if !errors.As(err, &ve) || ve.Code != view.CodeTooCostly || got != nil {
		t.Fatalf("64 wildcards on %d nodes: %d nodes, error %v; want CodeTooCostly and none", n, len(got), err)
	}
	if !strings.Contains(ve.Msg, "64 nodes per node") {
		t.Errorf("the error does not say why: %s", ve.Msg)
	}

	// A filter weighs the queries in it: 64 wildcards read per candidate.
	costlyFilter, err := view.CompileQuery(`$[?@[` + strings.Repeat("*,", 63) + `*]]`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := costlyFilter.Select(doc); !errors.As(err, &ve) || ve.Code != view.CodeTooCostly || got != nil {
		t.Fatalf("a filter reading 64 wildcards on %d nodes: %d nodes, error %v; want CodeTooCostly", n, len(got), err)
	}
	// A filter whose query multiplies (8^8 nodes per node) is refused even
	// on a small document, before it runs.
	nested, err := view.CompileQuery(`$[?@` + strings.Repeat("[*,*,*,*,*,*,*,*]", 8) + `]`)
	if err != nil {
		t.Fatal(err)
	}
	small, err := view.DecodeJSON([]byte(`[[[[[[[[[[0]]]]]]]]]]`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := nested.Select(small); !errors.As(err, &ve) || ve.Code != view.CodeTooCostly || got != nil {
		t.Fatalf("a filter of 8^8 nodes per node: %d nodes, error %v; want CodeTooCostly", len(got), err)
	}

	// Shared: a budget for two and a half runs of `$..*` (n+1 nodes with
	// the root); the third is refused and yields nothing.
	b := view.NewQueryBudget(doc, 5*(n+1)/2)
	for i := range 3 {
		yielded := 0
		err := all.Each(b, func(any) bool { yielded++; return true })
		if i < 2 && (err != nil || yielded != n) {
			t.Fatalf("run %d: %d nodes, %v; want %d", i, yielded, err, n)
		}
		if i == 2 && (err == nil || yielded != 0) {
			t.Fatalf("run 3 over the shared budget: %d nodes, %v; want an error and none", yielded, err)
		}
	}

	// A singular query costs nothing of the budget.
	one, err := view.CompileQuery(`$[7]`)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Each(b, func(any) bool { return true }); err != nil {
		t.Fatalf("a singular query after the budget is spent: %v", err)
	}
}

// TestQueryEachStops: Each stops when yield says so, mid-descent.
func TestQueryEachStops(t *testing.T) {
	q, err := view.CompileQuery(`$..[?@ == 2]`)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := view.DecodeJSON([]byte(`[1,[2,[2]],2,{"a":2}]`))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	if err := q.Each(view.NewQueryBudget(doc, view.MaxQueryWork), func(n any) bool { calls++; return false }); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("yield called %d times after it returned false; want once", calls)
	}
}
