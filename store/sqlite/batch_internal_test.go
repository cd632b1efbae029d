package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

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

// TestCreateBatchKeepsStatements writes batches one after another: the
// first prepares the batch's statements and keeps them, the later ones
// prepare none, and every record of every batch is there to read.
func TestCreateBatchKeepsStatements(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "acme", AgentID: "writer"}
	batch := func(n int) []store.Creation {
		cs := make([]store.Creation, n)
		for i := range cs {
			cs[i] = store.Creation{Actor: a, In: store.Breadcrumb{Title: "kept statements", Context: []byte(`{"n":1}`), Tags: []string{"x", "y"}}}
		}
		return cs
	}
	var ids []string
	firstKept := 0
	for round := range 3 {
		out, err := d.CreateBatch(ctx, batch(4))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range out {
			if r.Err != nil {
				t.Fatalf("round %d, create %d: %v", round, i, r.Err)
			}
			ids = append(ids, r.Breadcrumb.ID)
		}
		d.batchStmts.mu.Lock()
		kept, pending := len(d.batchStmts.stmts), len(d.batchStmts.pending)
		d.batchStmts.mu.Unlock()
		if kept == 0 || pending != 0 {
			t.Fatalf("round %d: %d statements kept, %d waiting; want some kept, none waiting", round, kept, pending)
		}
		if round == 0 {
			firstKept = kept
		} else if kept != firstKept {
			// A later batch prepared a statement anew.
			t.Fatalf("round %d: %d statements kept; the first batch kept %d", round, kept, firstKept)
		}
	}
	for _, id := range ids {
		if _, err := d.Get(ctx, a, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestCreateBatchConcurrent writes batches from several goroutines at
// once, while the first ones keep their statements: none waits on
// another for good (a batch keeping statements waits for the writing
// connection, which another batch's transaction may hold while it asks
// for a kept statement), and every create succeeds.
func TestCreateBatchConcurrent(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "acme", AgentID: "writer"}
	var wg sync.WaitGroup
	errs := make(chan error, 4*8*3)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				cs := make([]store.Creation, 3)
				for i := range cs {
					cs[i] = store.Creation{Actor: a, In: store.Breadcrumb{Title: "concurrent", Context: []byte(`{"n":2}`), Tags: []string{"t"}}}
				}
				out, err := d.CreateBatch(ctx, cs)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range out {
					if r.Err != nil {
						errs <- r.Err
					}
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		// Far longer than 96 small creates take on any machine: the
		// batches wait on each other.
		t.Fatal("the batches are still running after 2 minutes")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHistoryRecord: the history's JSON form of a breadcrumb, its
// context put in as it is, reads back as the breadcrumb json.Marshal
// writes, whatever its text fields hold (the context field's own name
// included).
func TestHistoryRecord(t *testing.T) {
	for _, title := range []string{"plain", `,"context":null,`, `a\",\"context\":null,\"`, "<&> \u2028"} {
		in := store.Breadcrumb{Title: title, Description: `"context":null`, Context: json.RawMessage(`{"a":"<b>&\u2028","c":[1.50,null]}`),
			Tags: []string{"x"}, SchemaName: "s"}
		b, err := store.NewRecord(store.Actor{OwnerID: "o", AgentID: "a"}, in, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got, err := historyRecord(&b)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(&b)
		var g, w store.Breadcrumb
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatalf("%q: %v: %s", title, err, got)
		}
		json.Unmarshal(want, &w)
		gj, _ := json.Marshal(&g)
		wj, _ := json.Marshal(&w)
		if string(gj) != string(wj) || string(g.Context) != string(b.Context) {
			t.Errorf("%q:\n%s\nwant\n%s", title, got, want)
		}
	}
}
