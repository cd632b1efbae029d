package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

func TestParseSearch(t *testing.T) {
	cases := []struct{ in, want string }{
		{"deploy", "deploy"},
		{"Deploy  RUNBOOK", "deploy runbook"},
		{`"push image" now`, `"push image" now`},
		{`a OR b c`, "a OR b c"},
		{`a OR b OR c`, "a OR b OR c"},
		{`OR a`, "a"},
		{`a OR`, "a"},
		{`a OR -b`, "a -b"},
		{`a -b -"c d"`, `a -b -"c d"`},
		{`kube*`, "kube*"},
		{`"roll ou"*`, `"roll ou"*`},
		{`foo-bar`, `"foo bar"`},
		{`x.y.z*`, `"x y z"*`},
		{`"unclosed phrase`, `"unclosed phrase"`},
		{`or and not`, "or and not"},
		{`café Zoë`, "café zoë"},
		{`a - b`, "a b"},
		{`(a) [b]`, "a b"},
		{`'; DROP TABLE breadcrumbs; --`, "drop table breadcrumbs"},
		{strings.Repeat("x", 150), strings.Repeat("x", store.MaxWordBytes)},
	}
	for _, c := range cases {
		e, err := store.ParseSearch(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := e.String(); got != c.want {
			t.Errorf("%q: got %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"", "  \t", "-a", "-a -b", "!!!", `""`, "\xff\xfe", strings.Repeat("a", 1025), strings.Repeat("a ", 33)} {
		_, err := store.ParseSearch(bad)
		var se *store.Error
		if !errors.As(err, &se) || se.Code != store.CodeInvalid || se.Path != "q" {
			t.Errorf("%.30q: %v, want invalid q", bad, err)
		}
	}
}

func TestMatch(t *testing.T) {
	doc := store.Words("The quick brown fox jumps over the lazy dog; foxes run.")
	cases := []struct {
		q     string
		match bool
	}{
		{"fox", true}, {"fox dog", true}, {"fox cat", false}, {"cat OR dog", true},
		{`"quick brown"`, true}, {`"brown quick"`, false}, {"fox -lazy", false}, {"fox -cat", true},
		{"jum*", true}, {`"lazy d"*`, true}, {"zzz*", false}, {"FOX", true},
	}
	for _, c := range cases {
		e, err := store.ParseSearch(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if ok, score := e.Match(doc); ok != c.match || ok && score < 1 {
			t.Errorf("%q: %v %d", c.q, ok, score)
		}
	}
}

func TestWords(t *testing.T) {
	got := store.Words("Hello, wörld! x_y 42.5 ĀB")
	if !slices.Equal(got, []string{"hello", "wörld", "x", "y", "42", "5", "āb"}) {
		t.Fatalf("%q", got)
	}
}

func TestDocumentBudgets(t *testing.T) {
	b := store.Breadcrumb{Title: "t", SearchText: strings.Repeat("word ", 3*store.MaxSearchWords)}
	d := store.Document(&b)
	if len(d.Body) != store.MaxSearchWords {
		t.Fatalf("%d body words", len(d.Body))
	}
}

// FuzzParseSearch: any text parses or is an invalid-q error; what parses
// renders to a query that parses to the same thing, with words that are
// non-empty letters and digits within the limits.
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{"a b", `"a b" OR c*`, "-x y", "OR OR", `"`, "-", "*", "a\x00b", "ǅ 𝟘 ﬁ", `\"'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		e, err := store.ParseSearch(q)
		if err != nil {
			if !store.IsCode(err, store.CodeInvalid) {
				t.Fatalf("%q: %v", q, err)
			}
			return
		}
		n := len(e.None)
		for _, g := range e.All {
			if len(g) == 0 {
				t.Fatalf("%q: empty group", q)
			}
			n += len(g)
		}
		if n > store.MaxQueryTerms || len(e.All) == 0 {
			t.Fatalf("%q: %d terms, %d groups", q, n, len(e.All))
		}
		check := func(terms []store.SearchTerm) {
			for _, term := range terms {
				for _, w := range term.Words {
					if w == "" || len(w) > store.MaxWordBytes || !utf8.ValidString(w) || len(store.Words(w)) != 1 {
						t.Fatalf("%q: bad word %q", q, w)
					}
				}
			}
		}
		for _, g := range e.All {
			check(g)
		}
		check(e.None)
		again, err := store.ParseSearch(e.String())
		if err != nil || again.String() != e.String() {
			t.Fatalf("%q: renders as %q, which parses as %v (%v)", q, e.String(), again, err)
		}
	})
}
