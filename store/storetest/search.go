package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// titles searches and returns the titles found, best first.
func titles(t *testing.T, s store.Store, a store.Actor, q store.SearchQuery) []string {
	t.Helper()
	res, err := s.Search(context.Background(), a, q)
	if err != nil {
		t.Fatalf("search %q: %v", q.Text, err)
	}
	hits := res.Hits
	out := []string{}
	for i, h := range hits {
		out = append(out, h.Title)
		if i > 0 && h.Score > hits[i-1].Score {
			t.Fatalf("search %q: not best first: %v then %v", q.Text, hits[i-1].Score, h.Score)
		}
	}
	return out
}

func sorted(ss []string) []string { ss = slices.Clone(ss); slices.Sort(ss); return ss }

func testSearch(t *testing.T, s store.Store) {
	in := []store.Breadcrumb{
		{Title: "Deploy runbook", Description: "how to ship the API", Context: json.RawMessage(`{"steps":["build","push image","roll out"]}`), Tags: []string{"ops"}, SchemaName: "doc.v1"},
		{Title: "Release notes", Description: "what changed in the deploy pipeline", Context: json.RawMessage(`{"version":"2.1"}`), Tags: []string{"ops", "release"}, SchemaName: "doc.v1"},
		{Title: "Team roster", Description: "who is on call", Context: json.RawMessage(`{"members":["Zoë","Bob"],"note":"deploy freeze on fridays"}`), Tags: []string{"team"}},
		{Title: "Café menu", Description: "lunch", Context: json.RawMessage(`{"dish":"soup of the day","price":4.5}`), Tags: []string{"food"}},
		{Title: "Kubernetes notes", Description: "cluster upgrades", Context: json.RawMessage(`{"text":"kubectl rollout restart; push image to registry"}`), Tags: []string{"ops"}},
	}
	for _, b := range in {
		create(t, s, alice, b)
	}
	q := func(text string) store.SearchQuery { return store.SearchQuery{Text: text} }
	cases := []struct {
		query   store.SearchQuery
		want    []string
		ordered bool
	}{
		// A title match ranks above matches in the description or the body.
		{q("deploy"), []string{"Deploy runbook", "Release notes", "Team roster"}, false},
		{q("DEPLOY runbook"), []string{"Deploy runbook"}, true},
		{q(`"push image"`), []string{"Deploy runbook", "Kubernetes notes"}, false},
		{q(`"image push"`), []string{}, true},
		{q("kube*"), []string{"Kubernetes notes"}, true},
		{q("roll*"), []string{"Deploy runbook", "Kubernetes notes"}, false},
		{q("deploy -freeze"), []string{"Deploy runbook", "Release notes"}, false},
		{q("roster OR menu"), []string{"Café menu", "Team roster"}, false},
		{q("lunch OR dinner soup"), []string{"Café menu"}, true},
		{q("café"), []string{"Café menu"}, true},
		{q("zoë"), []string{"Team roster"}, true},
		{q("ops"), []string{"Deploy runbook", "Kubernetes notes", "Release notes"}, false},
		{q("4"), []string{"Café menu"}, true}, // 4.5 is the words 4 and 5
		{q("nothing-like-this"), []string{}, true},
		{store.SearchQuery{Text: "deploy", Tags: []string{"release"}}, []string{"Release notes"}, true},
		{store.SearchQuery{Text: "deploy", SchemaName: "doc.v1"}, []string{"Deploy runbook", "Release notes"}, false},
		{store.SearchQuery{Text: "deploy", Limit: 1}, []string{"Deploy runbook"}, true},
		{store.SearchQuery{Text: "ops", Tags: []string{"ops", "release"}}, []string{"Release notes"}, true},
	}
	for _, c := range cases {
		got := titles(t, s, alice, c.query)
		want := c.want
		if !c.ordered {
			got, want = sorted(got), sorted(want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("search %+v: got %q, want %q", c.query, got, want)
		}
	}
	if got := titles(t, s, alice, q("deploy")); len(got) == 0 || got[0] != "Deploy runbook" {
		t.Errorf("title match not first: %q", got)
	}
	res, err := s.Search(context.Background(), alice, q("runbook"))
	hits := res.Hits
	if err != nil || len(hits) != 1 || hits[0].Score <= 0 || hits[0].Version != 1 || string(hits[0].Context) == "" {
		t.Fatalf("hit: %v %+v", err, hits)
	}
}

func testSearchVisibility(t *testing.T, s store.Store) {
	create(t, s, alice, store.Breadcrumb{Title: "alpha team", Context: json.RawMessage(`{}`)})
	create(t, s, alice, store.Breadcrumb{Title: "alpha private", Context: json.RawMessage(`{}`), Visibility: store.Private})
	create(t, s, mallory, store.Breadcrumb{Title: "alpha evil public", Context: json.RawMessage(`{}`), Visibility: store.Public})
	create(t, s, mallory, store.Breadcrumb{Title: "alpha evil", Context: json.RawMessage(`{}`)})
	past := time.Now().Add(50 * time.Millisecond)
	create(t, s, alice, store.Breadcrumb{Title: "alpha expiring", Context: json.RawMessage(`{}`), ExpiresAt: &past})
	time.Sleep(100 * time.Millisecond)
	for _, c := range []struct {
		a    store.Actor
		want []string
	}{
		{alice, []string{"alpha private", "alpha team"}},
		{bob, []string{"alpha team"}},
		{curator, []string{"alpha private", "alpha team"}},
		{mallory, []string{"alpha evil", "alpha evil public"}},
	} {
		got := sorted(titles(t, s, c.a, store.SearchQuery{Text: "alpha"}))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s/%s: got %q, want %q", c.a.OwnerID, c.a.AgentID, got, c.want)
		}
		// Search shows what List shows.
		page, err := s.List(context.Background(), c.a, store.Query{})
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, b := range page.Items {
			listed = append(listed, b.Title)
		}
		if !slices.Equal(sorted(listed), c.want) {
			t.Errorf("%s/%s: list %q differs from search %q", c.a.OwnerID, c.a.AgentID, listed, c.want)
		}
	}
}

func testSearchFollowsWrites(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := create(t, s, alice, store.Breadcrumb{Title: "first title", Context: json.RawMessage(`{"k":"oldbody"}`)})
	if got := titles(t, s, alice, store.SearchQuery{Text: "oldbody"}); len(got) != 1 {
		t.Fatalf("before update: %q", got)
	}
	_, err := s.Update(ctx, alice, b.ID, 1, func(x *store.Breadcrumb) error {
		x.Title, x.Context = "second title", json.RawMessage(`{"k":"newbody"}`)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for text, n := range map[string]int{"first": 0, "oldbody": 0, "second": 1, "newbody": 1} {
		if got := titles(t, s, alice, store.SearchQuery{Text: text}); len(got) != n {
			t.Errorf("after update, %q: %q", text, got)
		}
	}
	// An update supplying the view text searches on it.
	_, err = s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error {
		x.SearchText = "suppliedtext"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := titles(t, s, alice, store.SearchQuery{Text: "suppliedtext"}); len(got) != 1 {
		t.Errorf("supplied text: %q", got)
	}
	if got := titles(t, s, alice, store.SearchQuery{Text: "newbody"}); len(got) != 0 {
		t.Errorf("supplied text replaces the context's: %q", got)
	}
	// The next update without one derives it again.
	if _, err := s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error { x.Tags = []string{"t"}; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := titles(t, s, alice, store.SearchQuery{Text: "newbody"}); len(got) != 1 {
		t.Errorf("derived again: %q", got)
	}
	if err := s.Delete(ctx, curator, b.ID); err != nil {
		t.Fatal(err)
	}
	if got := titles(t, s, alice, store.SearchQuery{Text: "second"}); len(got) != 0 {
		t.Errorf("after delete: %q", got)
	}
}

func testSearchHiddenFields(t *testing.T, s store.Store) {
	create(t, s, alice, store.Breadcrumb{Title: "hinted", Context: json.RawMessage(`{"public":"shownword","secret":{"key":"hiddenword"}}`),
		LLMHints: json.RawMessage(`{"exclude":["secret"]}`)})
	create(t, s, alice, store.Breadcrumb{Title: "supplied", Context: json.RawMessage(`{"raw":"rawword"}`), SearchText: "viewword"})
	for text, n := range map[string]int{"shownword": 1, "hiddenword": 0, "secret": 0, "viewword": 1, "rawword": 0} {
		if got := titles(t, s, alice, store.SearchQuery{Text: text}); len(got) != n {
			t.Errorf("%q: %q, want %d hits", text, got, n)
		}
	}
}

// testSearchTitleFirst: a breadcrumb whose title holds every query term
// ranks above one that holds them only in its description or body, however
// long the title and however short the other.
func testSearchTitleFirst(t *testing.T, s store.Store) {
	filler := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = "fil" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		}
		return strings.Join(ws, " ")
	}
	create(t, s, alice, store.Breadcrumb{Title: "short body", Context: json.RawMessage(`{"t":"zebra"}`)})
	create(t, s, alice, store.Breadcrumb{Title: "short desc", Description: "zebra", Context: json.RawMessage(`{}`)})
	create(t, s, alice, store.Breadcrumb{Title: "body twice", Description: "zebra crossing zebra", Context: json.RawMessage(`{"t":"zebra crossing zebra zebra"}`)})
	create(t, s, alice, store.Breadcrumb{Title: filler(11) + " zebra", Context: json.RawMessage(`{}`)})
	create(t, s, alice, store.Breadcrumb{Title: filler(30) + " zebra crossing " + filler(28), Context: json.RawMessage(`{}`)})
	for _, q := range []string{"zebra", "zebra crossing", `"zebra crossing"`, "zeb*", "zebra OR nothing"} {
		got := titles(t, s, alice, store.SearchQuery{Text: q})
		inTitle := 0
		for _, title := range got {
			if strings.HasPrefix(title, "filaa") {
				inTitle++
			}
		}
		for i, title := range got {
			if strings.HasPrefix(title, "filaa") != (i < inTitle) {
				t.Errorf("%q: a title match ranks below a match elsewhere: %q", q, got)
				break
			}
		}
		if inTitle == 0 {
			t.Errorf("%q: no title match found: %q", q, got)
		}
	}
}

// testSearchRankBound: search ranks at most the MaxRanked newest matches
// of the caller's owner, says when there were more, and another owner's
// matches do not count.
func testSearchRankBound(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i := range 5 {
		create(t, s, mallory, store.Breadcrumb{Title: fmt.Sprintf("boundword mallory %d", i), Context: json.RawMessage(`{}`)})
	}
	for i := range 5 {
		create(t, s, alice, store.Breadcrumb{Title: fmt.Sprintf("boundword n%d", i), Context: json.RawMessage(`{}`)})
		time.Sleep(2 * time.Millisecond) // UUIDv7 order is creation order
	}
	res, err := s.Search(ctx, alice, store.SearchQuery{Text: "boundword", MaxRanked: 3})
	if err != nil || !res.Bounded || len(res.Hits) != 3 {
		t.Fatalf("bound 3: %v bounded=%v %d hits", err, res.Bounded, len(res.Hits))
	}
	var got []string
	for _, h := range res.Hits {
		got = append(got, h.Title)
	}
	if !slices.Equal(sorted(got), []string{"boundword n2", "boundword n3", "boundword n4"}) {
		t.Errorf("not the newest: %q", got)
	}
	res, err = s.Search(ctx, alice, store.SearchQuery{Text: "boundword", MaxRanked: 5})
	if err != nil || res.Bounded || len(res.Hits) != 5 {
		t.Fatalf("bound 5: %v bounded=%v %d hits", err, res.Bounded, len(res.Hits))
	}
	if _, err := s.Search(ctx, alice, store.SearchQuery{Text: "boundword", MaxRanked: -1}); !store.IsCode(err, store.CodeInvalid) {
		t.Errorf("negative bound: %v", err)
	}
}

// testSearchBoundIsNoOracle: whether another agent's private breadcrumb
// holds a word changes nothing a search reports, Bounded included: the
// bound counts only the breadcrumbs the caller may list. A spy plants
// MaxRanked breadcrumbs with a filler word and probes "guess OR filler".
func testSearchBoundIsNoOracle(t *testing.T, s store.Store) {
	ctx := context.Background()
	probe := func() store.SearchResult {
		t.Helper()
		res, err := s.Search(ctx, bob, store.SearchQuery{Text: "secretguess* OR fillerword", MaxRanked: 3})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range 3 {
		create(t, s, bob, store.Breadcrumb{Title: fmt.Sprintf("fillerword %d", i), Context: json.RawMessage(`{}`)})
		time.Sleep(2 * time.Millisecond)
	}
	before := probe()
	time.Sleep(2 * time.Millisecond)
	create(t, s, alice, store.Breadcrumb{Title: "secretguessed plan", Context: json.RawMessage(`{}`), Visibility: store.Private})
	after := probe()
	if before.Bounded != after.Bounded || len(before.Hits) != len(after.Hits) {
		t.Errorf("another agent's private breadcrumb shows: bounded %v then %v, %d hits then %d",
			before.Bounded, after.Bounded, len(before.Hits), len(after.Hits))
	}
	if after.Bounded {
		t.Errorf("bounded with only 3 listable matches and a bound of 3")
	}
	// Expired, read-out and filtered-out matches do not count either.
	past := time.Now().Add(30 * time.Millisecond)
	create(t, s, bob, store.Breadcrumb{Title: "fillerword expiring", Context: json.RawMessage(`{}`), ExpiresAt: &past})
	create(t, s, bob, store.Breadcrumb{Title: "fillerword other schema", Context: json.RawMessage(`{}`), SchemaName: "other.v1"})
	time.Sleep(60 * time.Millisecond)
	res, err := s.Search(ctx, bob, store.SearchQuery{Text: "fillerword -schema", MaxRanked: 3})
	if err != nil || res.Bounded || len(res.Hits) != 3 {
		t.Errorf("expired match counted: %v bounded=%v %d hits", err, res.Bounded, len(res.Hits))
	}
	res, err = s.Search(ctx, bob, store.SearchQuery{Text: "fillerword", SchemaName: "other.v1", MaxRanked: 1})
	if err != nil || res.Bounded || len(res.Hits) != 1 {
		t.Errorf("schema filter outside the bound: %v bounded=%v %d hits", err, res.Bounded, len(res.Hits))
	}
}

// testSearchBoundNotBlanked: other agents' private matches beyond the
// bound do not hide a match the caller may see, and when the bound does
// cut the matches Bounded says so even if no hit is returned.
func testSearchBoundNotBlanked(t *testing.T, s store.Store) {
	ctx := context.Background()
	create(t, s, alice, store.Breadcrumb{Title: "blankword visible", Tags: []string{"repo:app"}, Context: json.RawMessage(`{}`)})
	time.Sleep(2 * time.Millisecond)
	for i := range 5 {
		create(t, s, bob, store.Breadcrumb{Title: fmt.Sprintf("blankword hidden %d", i), Tags: []string{"repo:app"},
			Context: json.RawMessage(`{}`), Visibility: store.Private})
	}
	for _, q := range []store.SearchQuery{{Text: "blankword", MaxRanked: 3}, {Text: "blankword", Tags: []string{"repo:app"}, MaxRanked: 3}} {
		res, err := s.Search(ctx, alice, q)
		if err != nil || len(res.Hits) != 1 || res.Hits[0].Title != "blankword visible" || res.Bounded {
			t.Errorf("%+v: %v bounded=%v %d hits", q, err, res.Bounded, len(res.Hits))
		}
	}
	// Bob sees all six; with a bound of 3 the oldest (alice's) is not
	// ranked, and Bounded says so.
	res, err := s.Search(ctx, bob, store.SearchQuery{Text: "blankword", MaxRanked: 3})
	if err != nil || len(res.Hits) != 3 || !res.Bounded {
		t.Errorf("bob: %v bounded=%v %d hits", err, res.Bounded, len(res.Hits))
	}
	// Bounded with a tag filter and a limit below the bound.
	res, err = s.Search(ctx, bob, store.SearchQuery{Text: "blankword", Tags: []string{"repo:app"}, MaxRanked: 1, Limit: 1})
	if err != nil || len(res.Hits) != 1 || !res.Bounded {
		t.Errorf("bob, tag, bound 1: %v bounded=%v %d hits", err, res.Bounded, len(res.Hits))
	}
}

// testSearchTransformHidden: without a supplied search text, a breadcrumb
// whose hints transform its context is searchable on its title,
// description and tags only: the filtered context is not its view, and a
// field the rules drop must not become searchable.
func testSearchTransformHidden(t *testing.T, s store.Store) {
	hints := json.RawMessage(`{"transform":{"summary":{"type":"template","template":"Card of {{context.name}}"}}}`)
	create(t, s, alice, store.Breadcrumb{Title: "profile titleword", Description: "descword", Tags: []string{"tagword"},
		Context: json.RawMessage(`{"name":"Alice","card":"hiddencard4111"}`), LLMHints: hints})
	create(t, s, alice, store.Breadcrumb{Title: "filtered", Context: json.RawMessage(`{"shown":"shownfiltered","gone":"hiddenexcluded"}`),
		LLMHints: json.RawMessage(`{"exclude":["gone"]}`)})
	for text, n := range map[string]int{"hiddencard4111": 0, "hiddencard*": 0, "card": 0, "alice": 0, "titleword": 1, "descword": 1,
		"tagword": 1, "shownfiltered": 1, "hiddenexcluded": 0} {
		if got := titles(t, s, alice, store.SearchQuery{Text: text}); len(got) != n {
			t.Errorf("%q: %q, want %d hits", text, got, n)
		}
	}
	// The same after an update that supplies no search text.
	res, err := s.Search(context.Background(), alice, store.SearchQuery{Text: "titleword"})
	hits := res.Hits
	if err != nil || len(hits) != 1 {
		t.Fatal(err, hits)
	}
	if _, err := s.Update(context.Background(), alice, hits[0].ID, 0, func(b *store.Breadcrumb) error {
		b.Context = json.RawMessage(`{"name":"Bob","card":"hiddencard5222"}`)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for text, n := range map[string]int{"hiddencard5222": 0, "hiddencard*": 0, "bob": 0, "titleword": 1} {
		if got := titles(t, s, alice, store.SearchQuery{Text: text}); len(got) != n {
			t.Errorf("after update, %q: %q, want %d hits", text, got, n)
		}
	}
}

func testSearchBadQueries(t *testing.T, s store.Store) {
	create(t, s, alice, store.Breadcrumb{Title: "target words", Context: json.RawMessage(`{}`)})
	ctx := context.Background()
	for _, text := range []string{"", "   ", strings.Repeat("a", store.MaxQueryBytes+1), "-target", "!!! ???", "\xff", strings.Repeat("w ", 40)} {
		_, err := s.Search(ctx, alice, store.SearchQuery{Text: text})
		var se *store.Error
		if !errors.As(err, &se) || se.Code != store.CodeInvalid || se.Path != "q" {
			t.Errorf("query %.20q: %v, want invalid q", text, err)
		}
	}
	if _, err := s.Search(ctx, alice, store.SearchQuery{Text: "x", Limit: store.MaxSearchLimit + 1}); !store.IsCode(err, store.CodeInvalid) {
		t.Errorf("limit: %v", err)
	}
	// More tag filters than a breadcrumb can have tags: refused up front.
	many := make([]string, store.MaxTags+1)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	if _, err := s.Search(ctx, alice, store.SearchQuery{Text: "target", Tags: many}); !store.IsCode(err, store.CodeInvalid) {
		t.Errorf("search with %d tags: %v", len(many), err)
	}
	if _, err := s.List(ctx, alice, store.Query{Tags: many}); !store.IsCode(err, store.CodeInvalid) {
		t.Errorf("list with %d tags: %v", len(many), err)
	}
	if got := titles(t, s, alice, store.SearchQuery{Text: "target", Tags: many[:store.MaxTags]}); len(got) != 0 {
		t.Errorf("%d tags: %q", store.MaxTags, got)
	}
	// Syntax of the backends' own query languages is only text here.
	for _, text := range []string{`target"`, `"target`, `target*`, `target:*`, `'target'`, `target & !x`, `target NEAR(x)`,
		`target) OR (`, `\target\`, `target OR`, `OR target`, `target -`, `title:target`, `target AND`, `tar* OR OR x`, `-"" target`} {
		got := titles(t, s, alice, store.SearchQuery{Text: text})
		if len(got) > 1 {
			t.Errorf("%q: %q", text, got)
		}
	}
	if got := titles(t, s, alice, store.SearchQuery{Text: `target"`}); len(got) != 1 {
		t.Errorf("quote: %q", got)
	}
	if got := titles(t, s, alice, store.SearchQuery{Text: "target", Tags: []string{"\x00"}}); len(got) != 0 {
		t.Errorf("NUL tag: %q", got)
	}
}
