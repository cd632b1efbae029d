package view_test

import (
	"reflect"
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
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%s on %s: %v, want %v", src, doc, got, want)
		}
	})
}
