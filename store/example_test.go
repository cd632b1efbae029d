package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// Agents of one owner share breadcrumbs: one writes, another finds it by
// search and reads it. Every backend (store/sqlite, store/postgres)
// behaves the same way.
func Example() {
	dir, err := os.MkdirTemp("", "ctxkit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "ctxkit.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	planner := store.Actor{OwnerID: "acme", AgentID: "planner"}
	coder := store.Actor{OwnerID: "acme", AgentID: "coder"}
	b, _, err := db.Create(ctx, planner, store.Breadcrumb{
		Title:   "Release plan",
		Tags:    []string{"release"},
		Context: json.RawMessage(`{"version": "1.4", "steps": ["tag", "build", "publish"]}`),
	}, store.Idempotency{})
	if err != nil {
		fmt.Println(err)
		return
	}
	found, err := db.Search(ctx, coder, store.SearchQuery{Text: "publish"})
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := db.Get(ctx, coder, found.Hits[0].ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.ID == b.ID, got.Title, got.Version, got.Visibility)
	fmt.Println(string(got.Context))

	// A write that the store refuses names the field at fault.
	_, _, err = db.Create(ctx, planner, store.Breadcrumb{Title: "empty"}, store.Idempotency{})
	fmt.Println(store.IsCode(err, store.CodeInvalid), err)
	// Output:
	// true Release plan 1 team
	// {"steps":["tag","build","publish"],"version":"1.4"}
	// true context: required: a JSON object
}
