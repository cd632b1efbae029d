// Package storetest is the conformance suite every store.Store backend must
// pass: call Run from the backend's tests with a function that opens a fresh,
// empty store.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Open returns a new, empty store; the suite closes it.
type Open func(t *testing.T) store.Store

var (
	alice   = store.Actor{OwnerID: "acme", AgentID: "alice"}
	bob     = store.Actor{OwnerID: "acme", AgentID: "bob"}
	curator = store.Actor{OwnerID: "acme", AgentID: "root", Curator: true}
	mallory = store.Actor{OwnerID: "evil", AgentID: "mallory", Curator: true}
)

var yearTenThousand = time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -23*3600-59*60))

// randomText is n bytes of random letters and digits: text a database
// cannot compress below a limit.
func randomText(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// Run runs every conformance test.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"Validation", testValidation},
		{"Update", testUpdate},
		{"ConcurrentConditionalUpdates", testConcurrentConditionalUpdates},
		{"TagsAndMerge", testTagsAndMerge},
		{"DeleteKeepsHistory", testDeleteKeepsHistory},
		{"ListFiltersAndPages", testList},
		{"ListStableUnderInserts", testListStableUnderInserts},
		{"OwnerIsolation", testOwnerIsolation},
		{"PrivateVisibility", testPrivateVisibility},
		{"Idempotency", testIdempotency},
		{"Events", testEvents},
		{"EventsFanOut", testEventsFanOut},
		{"Expiry", testExpiry},
		{"ReadBudget", testReadBudget},
		{"Search", testSearch},
		{"SearchVisibility", testSearchVisibility},
		{"SearchFollowsWrites", testSearchFollowsWrites},
		{"SearchHiddenFields", testSearchHiddenFields},
		{"SearchTransformHidden", testSearchTransformHidden},
		{"SearchTitleFirst", testSearchTitleFirst},
		{"SearchRankBound", testSearchRankBound},
		{"SearchBoundIsNoOracle", testSearchBoundIsNoOracle},
		{"SearchBoundNotBlanked", testSearchBoundNotBlanked},
		{"SearchBadQueries", testSearchBadQueries},
		{"Revocations", testRevocations},
		{"RevocationsInOrder", testRevocationsInOrder},
		{"Subscriptions", testSubscriptions},
		{"SelectorPrivacy", testSelectorPrivacy},
		{"SelectorContextRule", testSelectorContextRule},
		{"Webhooks", testWebhooks},
		{"WebhookQueue", testWebhookQueue},
		{"WebhookBinding", testWebhookBinding},
		{"WebhookLease", testWebhookLease},
		{"WebhookClaimants", testWebhookClaimants},
		{"WebhookClaimFairness", testWebhookClaimFairness},
		{"WebhookSettleGroup", testWebhookSettleGroup},
		{"WebhookAdvanceGroup", testWebhookAdvanceGroup},
		{"WebhookDeliveryOrder", testWebhookDeliveryOrder},
		{"WebhookChangesMark", testWebhookChangesMark},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s)
		})
	}
	// Compares searches across two stores.
	t.Run("SearchInvisibleData", func(t *testing.T) { testSearchInvisibleData(t, open) })
}

func crumb(title string, tags ...string) store.Breadcrumb {
	return store.Breadcrumb{Title: title, Context: json.RawMessage(`{"n":1}`), Tags: tags}
}

func create(t *testing.T, s store.Store, a store.Actor, b store.Breadcrumb) store.Breadcrumb {
	t.Helper()
	out, _, err := s.Create(context.Background(), a, b, store.Idempotency{})
	if err != nil {
		t.Fatalf("create %q: %v", b.Title, err)
	}
	return out
}

func wantCode(t *testing.T, err error, code store.Code) {
	t.Helper()
	if !store.IsCode(err, code) {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

func testCreateAndGet(t *testing.T, s store.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	in := store.Breadcrumb{
		Title: "Roster", Description: "who is on the team", SemanticVersion: "1.2.0",
		Context: json.RawMessage(`{ "b": 1, "a": {"y": [1, 2.50, 12345678901234567890], "x": "<&>"} }`),
		Tags:    []string{"team", "alpha", "team"}, SchemaName: "roster.v1",
		LLMHints: json.RawMessage(`{"exclude": ["b"]}`), Sensitivity: store.PII, ExpiresAt: &exp,
		// Fields a caller cannot set:
		ID: "chosen", OwnerID: "someone-else", Version: 9, Reads: 4, CreatedBy: "x",
	}
	b := create(t, s, alice, in)
	if b.ID == "chosen" || len(b.ID) != 36 || b.ID[14] != '7' {
		t.Fatalf("id %q is not a fresh UUIDv7", b.ID)
	}
	if b.OwnerID != "acme" || b.Version != 1 || b.Reads != 0 || b.CreatedBy != "alice" || b.UpdatedBy != "alice" {
		t.Fatalf("identity fields: %+v", b)
	}
	if string(b.Context) != `{"a":{"x":"<&>","y":[1,2.50,12345678901234567890]},"b":1}` {
		t.Fatalf("context not canonical: %s", b.Context)
	}
	if !strings.HasPrefix(b.Checksum, "sha256:") || len(b.Checksum) != 71 {
		t.Fatalf("checksum %q", b.Checksum)
	}
	if !slices.Equal(b.Tags, []string{"alpha", "team"}) || b.Visibility != store.Team || b.Sensitivity != store.PII {
		t.Fatalf("tags/visibility/sensitivity: %+v", b)
	}
	if b.SizeBytes <= int64(len(b.Context)) || b.CreatedAt.IsZero() || !b.CreatedAt.Equal(b.UpdatedAt) {
		t.Fatalf("size/timestamps: %+v", b)
	}
	got, err := s.Get(ctx, bob, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(got)
	bj, _ := json.Marshal(b)
	if string(gj) != string(bj) {
		t.Fatalf("get differs from create:\n%s\n%s", gj, bj)
	}
	// Every spelling of a UUID names the same breadcrumb.
	for _, spelling := range []string{strings.ToUpper(b.ID), "{" + b.ID + "}", "urn:uuid:" + b.ID, strings.ReplaceAll(b.ID, "-", "")} {
		if got, err := s.Get(ctx, bob, spelling); err != nil || got.ID != b.ID {
			t.Fatalf("get %q: %v %q", spelling, err, got.ID)
		}
	}
	if _, err := s.Get(ctx, alice, "not-a-uuid"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bad id: %v", err)
	}
	if _, err := s.Get(ctx, alice, "01900000-0000-7000-8000-000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func testValidation(t *testing.T, s store.Store) {
	ctx := context.Background()
	long := strings.Repeat("x", 513)
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	cases := []struct {
		b     store.Breadcrumb
		field string
	}{
		{store.Breadcrumb{Context: json.RawMessage(`{}`)}, "title"},
		{store.Breadcrumb{Title: long, Context: json.RawMessage(`{}`)}, "title"},
		{store.Breadcrumb{Title: "t"}, "context"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`[1]`)}, "context"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{"a":}`)}, "context"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage("{\"a\":\"\xff\"}")}, "context"},
		{store.Breadcrumb{Title: "t\xff", Context: json.RawMessage(`{}`)}, "title"},
		{store.Breadcrumb{Title: "t\x00", Context: json.RawMessage(`{}`)}, "title"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{"a":"x\u0000y"}`)}, "context"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{"a\u0000":1}`)}, "context"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), Tags: []string{"a\x00"}}, "tags"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), SchemaName: "s\x00"}, "schema_name"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), Tags: many}, "tags"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), Tags: []string{strings.Repeat("y", 129)}}, "tags"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), Tags: []string{""}}, "tags"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), Visibility: "world"}, "visibility"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), Sensitivity: "meh"}, "sensitivity"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), LLMHints: json.RawMessage(`{"transform":{"x":{"type":"jq","query":"]"}}}`)}, "llm_hints.transform.x.query"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), LLMHints: json.RawMessage(`{"mode":"wat"}`)}, "llm_hints.mode"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), MaxReads: -1}, "max_reads"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), SchemaName: randomText(513)}, "schema_name"},
		{store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`), ExpiresAt: &yearTenThousand}, "expires_at"},
	}
	for _, c := range cases {
		_, _, err := s.Create(ctx, alice, c.b, store.Idempotency{})
		var se *store.Error
		if !errors.As(err, &se) || se.Code != store.CodeInvalid || se.Path != c.field {
			t.Errorf("%+v: got %v, want an invalid %s", c.b, err, c.field)
		}
	}
	page, err := s.List(ctx, curator, store.Query{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("rejected input was stored: %v %d", err, len(page.Items))
	}
	// The limits themselves are accepted, with text that does not compress.
	longest := create(t, s, alice, store.Breadcrumb{Title: randomText(store.MaxTitleBytes), Context: json.RawMessage(`{}`),
		SchemaName: randomText(store.MaxSchemaBytes), Tags: []string{randomText(store.MaxTagBytes)}})
	if page, err := s.List(ctx, alice, store.Query{SchemaName: longest.SchemaName, Tags: longest.Tags}); err != nil || len(page.Items) != 1 {
		t.Fatalf("list by the longest schema name and tag: %v %d", err, len(page.Items))
	}
	if err := s.Delete(ctx, alice, longest.ID); err != nil {
		t.Fatal(err)
	}
	// A bad update changes nothing.
	b := create(t, s, alice, crumb("ok"))
	_, err = s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error { x.Title = ""; return nil })
	wantCode(t, err, store.CodeInvalid)
	if got, _ := s.Get(ctx, alice, b.ID); got.Version != 1 || got.Title != "ok" {
		t.Fatalf("failed update changed the record: %+v", got)
	}
}

func testUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := create(t, s, alice, crumb("v1"))
	time.Sleep(2 * time.Millisecond)
	u, err := s.Update(ctx, bob, b.ID, 1, func(x *store.Breadcrumb) error {
		x.Title = "v2"
		x.ID, x.OwnerID, x.Version, x.CreatedBy = "hijack", "evil", 99, "evil" // ignored
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Title != "v2" || u.Version != 2 || u.ID != b.ID || u.OwnerID != "acme" || u.CreatedBy != "alice" || u.UpdatedBy != "bob" || !u.UpdatedAt.After(b.UpdatedAt) || !u.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("update: %+v", u)
	}
	_, err = s.Update(ctx, alice, b.ID, 1, func(x *store.Breadcrumb) error { x.Title = "stale"; return nil })
	wantCode(t, err, store.CodeVersionMismatch)
	if !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatal("errors.Is(ErrVersionMismatch) failed")
	}
	boom := errors.New("boom")
	if _, err := s.Update(ctx, alice, b.ID, 0, func(*store.Breadcrumb) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("mutation error: %v", err)
	}
	u, err = s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error { x.Title = "v3"; return nil })
	if err != nil || u.Version != 3 {
		t.Fatalf("unconditional update: %v %+v", err, u)
	}
	if _, err := s.Update(ctx, alice, "01900000-0000-7000-8000-000000000000", 0, func(*store.Breadcrumb) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func testConcurrentConditionalUpdates(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := create(t, s, alice, store.Breadcrumb{Title: "counter", Context: json.RawMessage(`{"n":0}`)})
	const workers, tries = 8, 10
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		successes int
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < tries; i++ {
				cur, err := s.Get(ctx, alice, b.ID)
				if err != nil {
					t.Error(err)
					return
				}
				var c struct{ N int }
				json.Unmarshal(cur.Context, &c)
				_, err = s.Update(ctx, alice, b.ID, cur.Version, func(x *store.Breadcrumb) error {
					x.Context = json.RawMessage(fmt.Sprintf(`{"n":%d}`, c.N+1))
					return nil
				})
				switch {
				case err == nil:
					mu.Lock()
					successes++
					mu.Unlock()
				case !store.IsCode(err, store.CodeVersionMismatch):
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	final, err := s.Get(ctx, alice, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ N int }
	json.Unmarshal(final.Context, &c)
	if successes == 0 || c.N != successes || final.Version != int64(successes)+1 {
		t.Fatalf("lost updates: %d successes, n=%d, version=%d", successes, c.N, final.Version)
	}
}

func testTagsAndMerge(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := create(t, s, alice, store.Breadcrumb{Title: "t", Context: json.RawMessage(`{"a":{"x":1,"y":2},"l":[1]}`), Tags: []string{"a"}})
	u, err := s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error {
		x.Tags = append(x.Tags, "c", "b", "a")
		merged, err := store.MergeContext(x.Context, json.RawMessage(`{"a":{"y":3,"z":4},"l":[2],"new":true}`))
		x.Context = merged
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.Tags, []string{"a", "b", "c"}) || string(u.Context) != `{"a":{"x":1,"y":3,"z":4},"l":[2],"new":true}` {
		t.Fatalf("tags %v context %s", u.Tags, u.Context)
	}
	u, err = s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error {
		x.Tags = slices.DeleteFunc(x.Tags, func(t string) bool { return t == "b" })
		return nil
	})
	if err != nil || !slices.Equal(u.Tags, []string{"a", "c"}) {
		t.Fatalf("remove: %v %v", err, u.Tags)
	}
	if page, _ := s.List(ctx, alice, store.Query{Tags: []string{"b"}}); len(page.Items) != 0 {
		t.Fatal("removed tag still matches")
	}
	if page, _ := s.List(ctx, alice, store.Query{Tags: []string{"c", "a"}}); len(page.Items) != 1 {
		t.Fatal("added tags do not match")
	}
}

func testDeleteKeepsHistory(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := create(t, s, alice, crumb("v1"))
	for _, title := range []string{"v2", "v3"} {
		if _, err := s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error { x.Title = title; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, mallory, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another owner deleted: %v", err)
	}
	if err := s.Delete(ctx, alice, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, alice, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := s.Delete(ctx, alice, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.History(ctx, bob, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a non-curator read a deleted record's history: %v", err)
	}
	h, err := s.History(ctx, curator, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, v := range h {
		titles = append(titles, fmt.Sprint(v.Title, "@", v.Version))
	}
	if strings.Join(titles, " ") != "v3@3 v2@2 v1@1" {
		t.Fatalf("history %v", titles)
	}
	if _, err := s.History(ctx, mallory, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another owner read history: %v", err)
	}

	// A record made public later: other owners see none of its history, and
	// a teammate none of its private versions.
	p := create(t, s, alice, store.Breadcrumb{Title: "once private", Context: json.RawMessage(`{"secret":"hunter2"}`), Visibility: store.Private})
	if _, err := s.Update(ctx, alice, p.ID, 0, func(x *store.Breadcrumb) error {
		x.Visibility, x.Context = store.Public, json.RawMessage(`{}`)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(ctx, mallory, p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another owner read the history of a public record: %v", err)
	}
	h, err = s.History(ctx, bob, p.ID)
	if err != nil || len(h) != 1 || h[0].Version != 2 {
		t.Fatalf("teammate history %v %+v", err, h)
	}
	if h, _ := s.History(ctx, alice, p.ID); len(h) != 2 {
		t.Fatalf("creator sees %d versions, want 2", len(h))
	}
}

func testList(t *testing.T, s store.Store) {
	ctx := context.Background()
	var ids []string
	for i := 0; i < 7; i++ {
		b := crumb(fmt.Sprint("b", i), "all")
		if i%2 == 0 {
			b.Tags = append(b.Tags, "even")
		}
		if i == 3 {
			b.SchemaName = "three.v1"
		}
		ids = append(ids, create(t, s, alice, b).ID)
	}
	create(t, s, mallory, crumb("theirs", "all"))
	slices.Reverse(ids) // newest first
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := s.List(ctx, alice, store.Query{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 3 || pages > 3 {
			t.Fatalf("page of %d / %d pages", len(p.Items), pages)
		}
		for _, b := range p.Items {
			got = append(got, b.ID)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("pages gave %v, want %v", got, ids)
	}
	count := func(q store.Query) int {
		p, err := s.List(ctx, alice, q)
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Items)
	}
	if n := count(store.Query{Tags: []string{"even"}}); n != 4 {
		t.Errorf("tag even: %d", n)
	}
	if n := count(store.Query{Tags: []string{"even", "all"}}); n != 4 {
		t.Errorf("tags even+all: %d", n)
	}
	if n := count(store.Query{Tags: []string{"even", "nope"}}); n != 0 {
		t.Errorf("tags even+nope: %d", n)
	}
	if n := count(store.Query{SchemaName: "three.v1"}); n != 1 {
		t.Errorf("schema: %d", n)
	}
	if n := count(store.Query{Limit: store.MaxLimit}); n != 7 {
		t.Errorf("max limit: %d", n)
	}
	for _, q := range []store.Query{{Limit: -1}, {Limit: store.MaxLimit + 1}, {Cursor: "garbage"}} {
		if _, err := s.List(ctx, alice, q); !store.IsCode(err, store.CodeInvalid) {
			t.Errorf("%+v: %v", q, err)
		}
	}
}

func testListStableUnderInserts(t *testing.T, s store.Store) {
	ctx := context.Background()
	var want []string
	for i := 0; i < 6; i++ {
		want = append(want, create(t, s, alice, crumb(fmt.Sprint(i))).ID)
	}
	slices.Reverse(want)
	p, err := s.List(ctx, alice, store.Query{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{p.Items[0].ID, p.Items[1].ID}
	for p.NextCursor != "" {
		create(t, s, alice, crumb("inserted while paging"))
		if p, err = s.List(ctx, alice, store.Query{Limit: 2, Cursor: p.NextCursor}); err != nil {
			t.Fatal(err)
		}
		for _, b := range p.Items {
			got = append(got, b.ID)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paging under inserts gave %v, want %v", got, want)
	}
}

func testOwnerIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	team := create(t, s, alice, crumb("team"))
	pub := create(t, s, alice, store.Breadcrumb{Title: "public", Context: json.RawMessage(`{}`), Visibility: store.Public})
	if _, err := s.Get(ctx, mallory, team.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other owner read a team record: %v", err)
	}
	if _, err := s.Read(ctx, mallory, team.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other owner read a team record: %v", err)
	}
	if got, err := s.Get(ctx, mallory, pub.ID); err != nil || got.ID != pub.ID {
		t.Fatalf("other owner could not read a public record: %v", err)
	}
	for _, id := range []string{team.ID, pub.ID} {
		if _, err := s.Update(ctx, mallory, id, 0, func(x *store.Breadcrumb) error { x.Title = "pwned"; return nil }); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other owner updated %s: %v", id, err)
		}
		if err := s.Delete(ctx, mallory, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other owner deleted %s: %v", id, err)
		}
	}
	if p, _ := s.List(ctx, mallory, store.Query{}); len(p.Items) != 0 {
		t.Fatalf("other owner listed %d records", len(p.Items))
	}
	if p, _ := s.List(ctx, bob, store.Query{}); len(p.Items) != 2 {
		t.Fatalf("same owner listed %d records, want 2", len(p.Items))
	}
}

func testPrivateVisibility(t *testing.T, s store.Store) {
	ctx := context.Background()
	priv := create(t, s, alice, store.Breadcrumb{Title: "diary", Context: json.RawMessage(`{}`), Visibility: store.Private})
	for _, a := range []store.Actor{alice, curator} {
		if _, err := s.Get(ctx, a, priv.ID); err != nil {
			t.Fatalf("%s cannot read: %v", a.AgentID, err)
		}
		if p, _ := s.List(ctx, a, store.Query{}); len(p.Items) != 1 {
			t.Fatalf("%s does not list it", a.AgentID)
		}
	}
	if _, err := s.Get(ctx, bob, priv.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("teammate read a private record: %v", err)
	}
	if p, _ := s.List(ctx, bob, store.Query{}); len(p.Items) != 0 {
		t.Fatal("teammate listed a private record")
	}
	if _, err := s.Update(ctx, bob, priv.ID, 0, func(x *store.Breadcrumb) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("teammate updated a private record: %v", err)
	}
	if _, err := s.History(ctx, bob, priv.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("teammate read a private history: %v", err)
	}
	if _, err := s.Update(ctx, curator, priv.ID, 0, func(x *store.Breadcrumb) error { x.Title = "curated"; return nil }); err != nil {
		t.Fatalf("curator cannot update: %v", err)
	}
}

func testIdempotency(t *testing.T, s store.Store) {
	ctx := context.Background()
	key := store.Idempotency{Key: "k1", RequestHash: "h1"}
	first, replayed, err := s.Create(ctx, alice, crumb("once"), key)
	if err != nil || replayed {
		t.Fatalf("first: %v %v", err, replayed)
	}
	s.Update(ctx, alice, first.ID, 0, func(x *store.Breadcrumb) error { x.Title = "changed"; return nil })
	again, replayed, err := s.Create(ctx, alice, crumb("once"), key)
	if err != nil || !replayed || again.ID != first.ID || again.Version != 1 || again.Title != "once" {
		t.Fatalf("replay: %v %v %+v", err, replayed, again)
	}
	// Keys are per agent: a teammate's same key is a new create, and reveals nothing.
	teammate, replayed, err := s.Create(ctx, bob, crumb("once"), key)
	if err != nil || replayed || teammate.ID == first.ID {
		t.Fatalf("teammate's key: %v %v", err, replayed)
	}
	_, _, err = s.Create(ctx, alice, crumb("other body"), store.Idempotency{Key: "k1", RequestHash: "h2"})
	if !errors.Is(err, store.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	theirs, replayed, err := s.Create(ctx, mallory, crumb("once"), key)
	if err != nil || replayed || theirs.ID == first.ID {
		t.Fatalf("keys must be per owner: %v %v", err, replayed)
	}
	if p, _ := s.List(ctx, alice, store.Query{}); len(p.Items) != 2 {
		t.Fatalf("replay created a duplicate: %d records, want alice's and bob's", len(p.Items))
	}
}

func collect(t *testing.T, s store.Store, a store.Actor, after int64, n int) []store.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []store.Event
	for e, err := range s.Events(ctx, a, after, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		if len(out) == n {
			break
		}
	}
	if len(out) != n {
		t.Fatalf("got %d events, want %d", len(out), n)
	}
	return out
}

func testEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := create(t, s, alice, crumb("e", "x"))
	create(t, s, mallory, crumb("theirs"))
	create(t, s, bob, store.Breadcrumb{Title: "bob's diary", Context: json.RawMessage(`{}`), Visibility: store.Private})
	s.Update(ctx, alice, b.ID, 0, func(x *store.Breadcrumb) error { x.Title = "e2"; return nil })
	s.Delete(ctx, alice, b.ID)

	ev := collect(t, s, alice, 0, 3) // bob's private record and mallory's are not alice's to see
	kinds := fmt.Sprint(ev[0].Kind, ev[1].Kind, ev[2].Kind)
	if kinds != "createdupdateddeleted" || ev[0].BreadcrumbID != b.ID || ev[1].Version != 2 || !slices.Equal(ev[0].Tags, []string{"x"}) {
		t.Fatalf("events %+v", ev)
	}
	if !(ev[0].Seq < ev[1].Seq && ev[1].Seq < ev[2].Seq) {
		t.Fatalf("sequence not increasing: %+v", ev)
	}
	if rest := collect(t, s, alice, ev[0].Seq, 2); rest[0].Seq != ev[1].Seq {
		t.Fatalf("resume after %d gave %+v", ev[0].Seq, rest)
	}
	if got := collect(t, s, curator, 0, 4); got[1].Kind != store.Created {
		t.Fatalf("curator events %+v", got)
	}
	if latest, err := s.LatestSeq(ctx); err != nil || latest < ev[2].Seq {
		t.Fatalf("LatestSeq %d %v, but event %d exists", latest, err, ev[2].Seq)
	}

	// Live: a change made while the stream waits arrives.
	latest, err := s.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan store.Event, 1)
	go func() {
		ev := collect(t, s, alice, latest, 1)
		done <- ev[0]
	}()
	time.Sleep(50 * time.Millisecond) // usually waiting by now; either way nothing is missed
	live := create(t, s, alice, crumb("live"))
	select {
	case e := <-done:
		if e.BreadcrumbID != live.ID || e.Kind != store.Created {
			t.Fatalf("live event %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("live event did not arrive")
	}
}

func testExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()
	past := time.Now().Add(-time.Second)
	future := time.Now().Add(time.Hour)
	gone := create(t, s, alice, store.Breadcrumb{Title: "gone", Context: json.RawMessage(`{}`), ExpiresAt: &past})
	kept := create(t, s, alice, store.Breadcrumb{Title: "kept", Context: json.RawMessage(`{}`), ExpiresAt: &future})
	if _, err := s.Get(ctx, alice, gone.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired record still readable: %v", err)
	}
	if p, _ := s.List(ctx, alice, store.Query{}); len(p.Items) != 1 || p.Items[0].ID != kept.ID {
		t.Fatalf("list shows expired records: %d", len(p.Items))
	}
	n, err := s.Expire(ctx, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	ev := collect(t, s, alice, 0, 3)
	if ev[2].Kind != store.Expired || ev[2].BreadcrumbID != gone.ID {
		t.Fatalf("no expired event for the expired record: %+v", ev)
	}
	if n, _ := s.Expire(ctx, time.Now()); n != 0 {
		t.Fatalf("expired twice: %d", n)
	}
}

func testReadBudget(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := create(t, s, alice, store.Breadcrumb{Title: "3 reads", Context: json.RawMessage(`{}`), MaxReads: 3})
	for i := 1; i <= 3; i++ {
		got, err := s.Read(ctx, bob, b.ID)
		if err != nil || got.Reads != int64(i) {
			t.Fatalf("read %d: %v reads=%d", i, err, got.Reads)
		}
	}
	if _, err := s.Read(ctx, alice, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read past the budget: %v", err)
	}
	// Another owner's reads of a public breadcrumb spend none of its
	// budget, so they cannot use it up and delete what its owner shared.
	after, err := s.LatestSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := create(t, s, alice, store.Breadcrumb{Title: "public, 2 reads", Context: json.RawMessage(`{}`), Visibility: store.Public, MaxReads: 2})
	for i := 1; i <= 5; i++ {
		if got, err := s.Read(ctx, mallory, p.ID); err != nil || got.Reads != 0 {
			t.Fatalf("other owner's read %d: %v reads=%d", i, err, got.Reads)
		}
	}
	// Its owner's agents spend it, and the last read deletes it (with an
	// event for its owner).
	for i := 1; i <= 2; i++ {
		if got, err := s.Read(ctx, bob, p.ID); err != nil || got.Reads != int64(i) {
			t.Fatalf("owner's read %d: %v reads=%d", i, err, got.Reads)
		}
	}
	if _, err := s.Get(ctx, alice, p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("public breadcrumb outlived its read budget: %v", err)
	}
	if _, err := s.Read(ctx, mallory, p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other owner read a used-up breadcrumb: %v", err)
	}
	evs := collect(t, s, alice, after, 2)
	if evs[1].Kind != store.Expired || evs[1].BreadcrumbID != p.ID {
		t.Fatalf("no expired event for the owner: %+v", evs)
	}
	// Get (the raw record) does not count reads.
	c := create(t, s, alice, store.Breadcrumb{Title: "1 read", Context: json.RawMessage(`{}`), MaxReads: 1})
	for i := 0; i < 3; i++ {
		if _, err := s.Get(ctx, alice, c.ID); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
	}
}
