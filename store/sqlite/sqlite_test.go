package sqlite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func open(t *testing.T) store.Store {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

// TestReopen: what was committed is there after closing and opening the file
// again, and migrations do not run twice.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	b, _, err := db.Create(ctx, a, store.Breadcrumb{Title: "kept", Context: json.RawMessage(`{"x":1}`)}, store.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, a, b.ID, 1, func(x *store.Breadcrumb) error { x.Title = "kept v2"; return nil }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("database file mode %v (%v): want 0600, it holds every owner's data", st.Mode().Perm(), err)
	}
	os.Chmod(path, 0o644)
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Get(ctx, a, b.ID)
	if err != nil || got.Title != "kept v2" || got.Version != 2 {
		t.Fatalf("after reopen: %v %+v", err, got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("reopening did not tighten the database file: %v", st.Mode().Perm())
	}
}
