package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// TestCreateBatch runs the batch conformance tests; the refused row is
// one a trigger on the writing connection aborts.
func TestCreateBatch(t *testing.T) {
	open := func(t *testing.T) store.Store {
		d, err := Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	storetest.RunBatch(t, open, func(t *testing.T, s store.Store) {
		_, err := s.(*DB).w.Exec(`CREATE TEMP TRIGGER refuse_poison BEFORE INSERT ON main.breadcrumbs
			WHEN NEW.title = '` + storetest.PoisonTitle + `' BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END`)
		if err != nil {
			t.Fatal(err)
		}
	})
}
