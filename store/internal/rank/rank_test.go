package rank

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

func mustParse(t testing.TB, q string) *store.SearchExpr {
	t.Helper()
	e, err := store.ParseSearch(q)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func doc(title, tags, desc, body string) string {
	return Encode(store.SearchDocument{Title: store.Words(title), Tags: store.Words(tags), Description: store.Words(desc), Body: store.Words(body)})
}

func TestEncodeDocument(t *testing.T) {
	d := store.SearchDocument{Title: []string{"a", "b"}, Description: []string{"c"}, Body: []string{"d", "e"}}
	enc := Encode(d)
	if enc != "a b\n\nc\nd e" {
		t.Fatalf("%q", enc)
	}
	if got := splitFields(enc); got != [numFields]string{"a b", "", "c", "d e"} {
		t.Fatalf("%q", got)
	}
	if got := splitFields("only title"); got != [numFields]string{"only title"} {
		t.Fatalf("%q", got)
	}
}

// TestCountTerm: words count whole, phrases only adjacent within a field,
// prefixes at the start of a word.
func TestCountTerm(t *testing.T) {
	cases := []struct {
		text, pat string
		prefix    bool
		want      int
	}{
		{"deploy deployment redeploy deploy", "deploy", false, 2},
		{"deploy deployment redeploy deploy", "deploy", true, 3},
		{"push image push images image push", "push image", false, 1},
		{"push image push images image push", "push image", true, 2},
		{"a a a", "a a", false, 2},
		{"akia1abc akia1abd xakia1", "akia1ab", true, 2},
		{"", "x", true, 0},
		{"x", "x", false, 1},
	}
	for _, c := range cases {
		if got := countTerm(c.text, c.pat, c.prefix); got != c.want {
			t.Errorf("%q in %q (prefix %v): %d, want %d", c.pat, c.text, c.prefix, got, c.want)
		}
	}
}

// FuzzCountTerm: a term counts in a field exactly as often as it matches
// there (SearchExpr.Match, the matching of a search without an index).
func FuzzCountTerm(f *testing.F) {
	f.Add("push image push images", "push image")
	f.Add("deploy deployment", "dep*")
	f.Add("a a a", `"a a"`)
	f.Add("Zoë zoë ZOË", "zo*")
	f.Fuzz(func(t *testing.T, text, q string) {
		e, err := store.ParseSearch(q)
		if err != nil || len(e.All) != 1 || len(e.All[0]) != 1 || len(e.None) > 0 {
			return
		}
		words := store.Words(text)
		_, want := e.Match(words)
		term := e.All[0][0]
		if got := countTerm(strings.Join(words, " "), strings.Join(term.Words, " "), term.Prefix); got != want {
			t.Fatalf("%q in %q: counted %d, matched %d", q, words, got, want)
		}
	})
}

func TestRank(t *testing.T) {
	cands := []Candidate{
		{"01", doc("notes", "", "", "zebra zebra zebra crossing")},
		{"02", doc("a very long title about many things and a zebra", "", "", "")},
		{"03", doc("other", "", "zebra", "")},
		{"04", doc("other", "", "zebra", "")}, // the same as 03: the newer id first
		{"05", doc("other", "zebra", "", "")},
	}
	got := Rank(mustParse(t, "zebra"), cands, 10)
	var order []string
	for i, r := range got {
		order = append(order, cands[r.Index].ID)
		if i > 0 && r.Score > got[i-1].Score {
			t.Fatalf("not best first: %+v", got)
		}
	}
	// The title holds the term: first. Then tags (weight 5) above the
	// description (2), and the description above three times in a body (1).
	if !slices.Equal(order, []string{"02", "05", "04", "03", "01"}) {
		t.Fatalf("order %q (%+v)", order, got)
	}
	if got[0].Score < 1 || got[1].Score >= 1 || got[4].Score <= 0 {
		t.Fatalf("scores %+v", got)
	}
	if got := Rank(mustParse(t, "zebra"), cands, 2); len(got) != 2 {
		t.Fatalf("limit: %+v", got)
	}
	// One side of an OR that fewer matches hold weighs more.
	or := []Candidate{
		{"1", doc("x", "", "", "common")}, {"2", doc("x", "", "", "common")}, {"3", doc("x", "", "", "common")},
		{"4", doc("x", "", "", "rare")},
	}
	if got := Rank(mustParse(t, "common OR rare"), or, 10); or[got[0].Index].ID != "4" {
		t.Fatalf("rare term not first: %+v", got)
	}
}

// TestRankIsAFunctionOfTheCandidates: the order the backend lists the
// candidates in changes nothing, scores included, and nothing but the
// candidates counts.
func TestRankIsAFunctionOfTheCandidates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"alpha", "beta", "gamma", "alphabet", "delta"}
	words := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	var cands []Candidate
	for i := range 50 {
		cands = append(cands, Candidate{fmt.Sprintf("%03d", i), doc(words(r.IntN(4)), words(r.IntN(2)), words(r.IntN(5)), words(r.IntN(40)))})
	}
	for _, q := range []string{"alpha", "alph*", `"alpha beta"`, "alpha OR gamma", "beta delta*"} {
		e := mustParse(t, q)
		want := Rank(e, cands, len(cands))
		key := func(rs []Ranked, cs []Candidate) []string {
			var out []string
			for _, r := range rs {
				out = append(out, fmt.Sprintf("%s %v", cs[r.Index].ID, r.Score))
			}
			return out
		}
		shuffled := slices.Clone(cands)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if a, b := key(want, cands), key(Rank(e, shuffled, len(shuffled)), shuffled); !slices.Equal(a, b) {
			t.Errorf("%q: order of candidates matters:\n%q\n%q", q, a, b)
		}
	}
}

// BenchmarkRankWorstCase: the most a search ranks at the default bound:
// 1,000 candidates of store.MaxSearchWords words of view text each, and a query
// of store.MaxQueryTerms words, phrases and prefixes.
func BenchmarkRankWorstCase(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	body := make([]string, store.MaxSearchWords)
	cands := make([]Candidate, store.DefaultMaxRanked)
	for i := range cands {
		for j := range body {
			body[j] = fmt.Sprintf("w%d", r.IntN(5000))
		}
		cands[i] = Candidate{fmt.Sprintf("%04d", i), Encode(store.SearchDocument{Title: []string{"t", "w1"}, Body: body})}
	}
	var terms []string
	for i := range store.MaxQueryTerms {
		switch i % 3 {
		case 0:
			terms = append(terms, fmt.Sprintf("w%d", i))
		case 1:
			terms = append(terms, fmt.Sprintf(`"w%d w%d"`, i, i+1))
		default:
			terms = append(terms, fmt.Sprintf("w%d*", i))
		}
	}
	e := mustParse(b, strings.Join(terms, " OR "))
	for b.Loop() {
		Rank(e, cands, store.MaxSearchLimit)
	}
}
