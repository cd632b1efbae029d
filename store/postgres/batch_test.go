package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// TestCreateBatch runs the batch conformance tests; the refused row is
// one a trigger of the test's database raises an exception for.
func TestCreateBatch(t *testing.T) {
	var (
		mu   sync.Mutex
		urls = map[store.Store]string{}
	)
	open := func(t *testing.T) store.Store {
		url := pgtest.Shared(t).NewDatabase(t)
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		urls[db] = url
		mu.Unlock()
		return db
	}
	storetest.RunBatch(t, open, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		mu.Lock()
		url := urls[s]
		mu.Unlock()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'refused by the test trigger'; END $$;
			CREATE TRIGGER refuse_poison BEFORE INSERT ON breadcrumbs FOR EACH ROW
			WHEN (NEW.title = '`+storetest.PoisonTitle+`') EXECUTE FUNCTION refuse_poison()`)
		if err != nil {
			t.Fatal(err)
		}
	})
}
