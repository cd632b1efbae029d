package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// TestSearchableText: the text search matches is the view's, computed only
// where the view takes transform rules and can run.
func TestSearchableText(t *testing.T) {
	ctx := context.Background()
	var s store.Searchable
	tmpl := json.RawMessage(`{"transform":{"s":{"type":"template","template":"{{context.name}}"}}}`)
	for _, c := range []struct {
		name  string
		hints json.RawMessage
		want  string
	}{
		{"no hints: the store derives it", nil, ""},
		{"filters alone: the store derives it", json.RawMessage(`{"exclude":["card"]}`), ""},
		{"transform rules", tmpl, "s\nann\n"},
		{"hints that do not compile", json.RawMessage(`{"transform":{"s":{"type":"nope"}}}`), ""},
	} {
		b := store.Breadcrumb{Title: "t", Context: json.RawMessage(`{"name":"ann","card":"4111"}`), LLMHints: c.hints}
		if got := s.Text(ctx, &b, 1); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	busy := store.Searchable{Slot: func(context.Context) (func(), error) { return nil, errors.New("no slot") }}
	b := store.Breadcrumb{Title: "t", Context: json.RawMessage(`{"name":"ann"}`), LLMHints: tmpl}
	if got := busy.Text(ctx, &b, 1); got != "" {
		t.Errorf("without a slot: %q, want no text", got)
	}
}

// TestSearchableUpdate: an update through Searchable stores the new
// version's view text, so search finds what the view shows and not what
// it hides.
func TestSearchableUpdate(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := store.Actor{OwnerID: "acme", AgentID: "planner"}
	b, _, err := db.Create(ctx, a, store.Breadcrumb{Title: "customer", Context: json.RawMessage(`{"name":"ann","card":"4111"}`)}, store.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	hints := json.RawMessage(`{"transform":{"who":{"type":"template","template":"{{context.name}}"}}}`)
	if _, err := (store.Searchable{}).Update(ctx, db, a, b.ID, b.Version, func(x *store.Breadcrumb) error {
		x.Context, x.LLMHints = json.RawMessage(`{"name":"bob","card":"4111"}`), hints
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for word, want := range map[string]int{"bob": 1, "4111": 0, "ann": 0} {
		res, err := db.Search(ctx, a, store.SearchQuery{Text: word})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != want {
			t.Errorf("search %q: %d hits, want %d", word, len(res.Hits), want)
		}
	}
}
