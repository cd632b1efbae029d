package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// The search differential: what a search reports (hits, their order and
// exact scores, Bounded) is a function of what the caller may list only.
// Store A holds the caller's visible breadcrumbs and is searched before
// and after each kind of data the caller may not list is added to it;
// store B holds the same visible breadcrumbs, with every kind of
// invisible data written in between them, and words in fields their views
// hide. Every search must report the same in all of them.

// privacyVocab is the words of the generated breadcrumbs: few, so that
// visible and invisible ones share most of them, and key-like words that
// share prefixes (an access key id, as an attacker would probe for).
var privacyVocab = []string{"alpha", "beta", "gamma", "delta", "deploy", "deployment", "key", "keys", "secret", "token",
	"akia1q2w3e4r5t6y7u8i", "akia1abcdefghij", "akia2zzz", "ops", "runbook", "rotate"}

// privacyWords is n words of the vocabulary, skewed to its first words.
func privacyWords(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = privacyVocab[min(r.IntN(len(privacyVocab)), r.IntN(len(privacyVocab)))]
	}
	return strings.Join(ws, " ")
}

// privacyCrumb is a random breadcrumb on the vocabulary; hidden is text in
// a field its view hides (the empty string: none).
func privacyCrumb(r *rand.Rand, title, hidden string) store.Breadcrumb {
	ctx := map[string]any{"text": privacyWords(r, r.IntN(30))}
	if hidden != "" {
		ctx["secret"] = hidden
	}
	raw, _ := json.Marshal(ctx)
	b := store.Breadcrumb{Title: title + " " + privacyWords(r, r.IntN(4)), Description: privacyWords(r, r.IntN(6)),
		Tags: []string{fmt.Sprintf("t%d", r.IntN(3))}, Context: raw, LLMHints: json.RawMessage(`{"exclude":["secret"]}`)}
	if r.IntN(3) == 0 {
		b.SchemaName = "doc.v1"
	}
	return b
}

// privacyQuery is a random search: words, phrases, prefixes, OR,
// exclusions, tag and schema filters, small rank bounds and limits.
func privacyQuery(r *rand.Rand) store.SearchQuery {
	word := func() string { return privacyVocab[r.IntN(len(privacyVocab))] }
	term := func() string {
		switch r.IntN(6) {
		case 0:
			return `"` + word() + " " + word() + `"`
		case 1:
			w := word()
			return w[:1+r.IntN(len(w))] + "*"
		case 2:
			// An attacker's probe: the key id one more character at a time.
			return "akia1" + "abcdefghij"[:r.IntN(6)] + "*"
		default:
			return word()
		}
	}
	var parts []string
	for range 1 + r.IntN(3) {
		switch r.IntN(5) {
		case 0:
			parts = append(parts, term()+" OR "+term())
		case 1:
			parts = append(parts, "-"+word())
		default:
			parts = append(parts, term())
		}
	}
	q := store.SearchQuery{Text: strings.Join(append([]string{term()}, parts...), " ")}
	switch r.IntN(6) {
	case 0:
		q.Tags = []string{fmt.Sprintf("t%d", r.IntN(3))}
	case 1:
		q.SchemaName = "doc.v1"
	}
	q.MaxRanked = []int{0, 0, 3, 8}[r.IntN(4)]
	q.Limit = []int{0, 3, 50}[r.IntN(3)]
	return q
}

// searchReport is what a search tells the caller, with breadcrumbs named
// by title (the same in every store) and scores to the bit.
func searchReport(t *testing.T, s store.Store, a store.Actor, q store.SearchQuery) string {
	t.Helper()
	res, err := s.Search(context.Background(), a, q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "bounded=%v", res.Bounded)
	for _, h := range res.Hits {
		fmt.Fprintf(&sb, " [%s %x]", h.Title, math.Float64bits(h.Score))
	}
	return sb.String()
}

func testSearchInvisibleData(t *testing.T, open Open) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const visible = 40
	// The visible breadcrumbs, the same in both stores: the caller's
	// (alice, no curator) team, private and public ones, a team member's
	// (bob) team and public ones, some with a far expiry or an unspent
	// read budget.
	crumbs := func(hidden bool) []store.Breadcrumb {
		r := rand.New(rand.NewPCG(seed, 1))
		hr := rand.New(rand.NewPCG(seed, 2))
		out := make([]store.Breadcrumb, visible)
		for i := range out {
			h := ""
			if hidden {
				h = privacyWords(hr, 1+hr.IntN(20)) + " akia1abcdefghij rotatekey"
			}
			out[i] = privacyCrumb(r, fmt.Sprintf("v%d", i), h)
			switch i % 5 {
			case 1:
				out[i].Visibility = store.Private
			case 2:
				out[i].Visibility = store.Public
			case 3:
				far := time.Now().Add(24 * time.Hour)
				out[i].ExpiresAt = &far
			case 4:
				out[i].MaxReads = 5
			}
		}
		return out
	}
	author := func(i int) store.Actor {
		if i%3 == 2 && i%5 != 1 { // bob's private breadcrumbs would not be visible
			return bob
		}
		return alice
	}
	qr := rand.New(rand.NewPCG(seed, 3))
	queries := make([]store.SearchQuery, 150)
	for i := range queries {
		queries[i] = privacyQuery(qr)
	}
	// A transformed view's hidden fields, besides the excluded ones.
	transformed := func(hidden string) store.Breadcrumb {
		raw, _ := json.Marshal(map[string]any{"name": "deploy", "card": hidden})
		return store.Breadcrumb{Title: "v-transformed alpha", Context: raw, Tags: []string{"t0"},
			LLMHints: json.RawMessage(`{"transform":{"s":{"type":"template","template":"{{context.name}}"}}}`)}
	}
	report := func(s store.Store) []string {
		out := make([]string, len(queries))
		for i, q := range queries {
			out[i] = searchReport(t, s, alice, q)
		}
		return out
	}
	compare := func(what string, want, got []string) {
		t.Helper()
		bad := 0
		for i := range want {
			if want[i] != got[i] {
				if bad < 3 {
					t.Errorf("%s changed search %+v:\n  before: %s\n  after:  %s", what, queries[i], want[i], got[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s changed %d of %d searches", what, bad, len(queries))
		}
	}

	// Store A: the visible breadcrumbs alone, then each kind of invisible
	// data in turn.
	a := open(t)
	defer a.Close()
	for i, b := range crumbs(false) {
		create(t, a, author(i), b)
	}
	create(t, a, alice, transformed(""))
	base := report(a)
	ir := rand.New(rand.NewPCG(seed, 4))
	invisible := []struct {
		what string
		add  func(s store.Store)
	}{
		{"another owner's breadcrumbs", func(s store.Store) {
			for i := range 30 {
				b := privacyCrumb(ir, fmt.Sprintf("x%d", i), "")
				b.Title += " AKIA1ABCDEFGHIJ"
				b.Description += " akia1abcdefghij key " + privacyWords(ir, 10)
				b.Visibility = []store.Visibility{store.Team, store.Public, store.Private}[i%3]
				create(t, s, mallory, b)
			}
		}},
		{"another agent's private breadcrumbs", func(s store.Store) {
			for i := range 20 {
				b := privacyCrumb(ir, fmt.Sprintf("p%d", i), "")
				b.Title += " akia1abcdefghij"
				b.Visibility = store.Private
				create(t, s, bob, b)
			}
		}},
		{"expired breadcrumbs", func(s store.Store) {
			soon := time.Now().Add(100 * time.Millisecond)
			for i := range 15 {
				b := privacyCrumb(ir, fmt.Sprintf("e%d", i), "")
				b.Description += " akia1abcdefghij"
				b.ExpiresAt = &soon
				create(t, s, []store.Actor{alice, bob}[i%2], b)
			}
			time.Sleep(time.Until(soon) + 50*time.Millisecond)
		}},
		{"deleted breadcrumbs", func(s store.Store) {
			for i := range 15 {
				b := privacyCrumb(ir, fmt.Sprintf("d%d", i), "")
				b.Title += " akia1abcdefghij"
				if err := s.Delete(ctx, curator, create(t, s, alice, b).ID); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"read-out breadcrumbs", func(s store.Store) {
			for i := range 15 {
				b := privacyCrumb(ir, fmt.Sprintf("r%d", i), "")
				b.Title += " akia1abcdefghij"
				b.MaxReads = int64(1 + i%2)
				id := create(t, s, bob, b).ID
				for range b.MaxReads {
					if _, err := s.Read(ctx, bob, id); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
	}
	// Each kind is compared with the searches before it was added, so a
	// failure names the kind that showed.
	prev := base
	for _, kind := range invisible {
		kind.add(a)
		cur := report(a)
		compare(kind.what, prev, cur)
		prev = cur
	}

	// Store B: the same visible breadcrumbs with words in the fields their
	// views hide, every kind of invisible data written in between.
	b := open(t)
	defer b.Close()
	ir = rand.New(rand.NewPCG(seed, 4))
	for i, c := range crumbs(true) {
		create(t, b, author(i), c)
		if i%8 == 7 {
			invisible[i/8%len(invisible)].add(b)
		}
	}
	create(t, b, alice, transformed("akia1abcdefghij rotatekey alpha"))
	compare("words in fields hidden by views and interleaved invisible data", base, report(b))
}
