package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// rowCounts is how many rows each table that a write touches holds: a
// write that fails must leave every one of them as it was.
func rowCounts(t *testing.T, d *DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"breadcrumbs", "breadcrumb_tags", "history", "events", "idempotency", "breadcrumb_search"} {
		var n int
		if err := d.w.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

func sameCounts(a, b map[string]int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestDiskFull: with the database at its size limit (PRAGMA max_page_count
// makes SQLite answer SQLITE_FULL exactly as a full disk does), a create,
// an update and a delete are insufficient_storage, and none leaves a row
// behind: not the record, its tags, history, event, idempotency key or
// search row. When space returns, the same writes succeed.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	big := func(i int) store.Breadcrumb {
		return store.Breadcrumb{Title: fmt.Sprintf("filler %d", i), Tags: []string{"fill"},
			Context: json.RawMessage(fmt.Sprintf(`{"blob":%q}`, strings.Repeat(fmt.Sprintf("zebra%d ", i), 2000)))}
	}
	first, _, err := d.Create(ctx, a, big(0), store.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := d.w.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// The writer is one connection, which keeps this limit.
	if _, err := d.w.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+40)); err != nil {
		t.Fatal(err)
	}
	before := rowCounts(t, d)
	full := false
	for i := 1; i < 200 && !full; i++ {
		_, _, err := d.Create(ctx, a, big(i), store.Idempotency{Key: fmt.Sprintf("k%d", i), RequestHash: "h"})
		switch {
		case err == nil:
			before = rowCounts(t, d)
		case store.IsCode(err, store.CodeInsufficientStorage):
			full = true
			if !strings.Contains(err.Error(), "storage is full") {
				t.Errorf("message %q does not say the storage is full", err)
			}
			if after := rowCounts(t, d); !sameCounts(before, after) {
				t.Fatalf("a create that failed left rows: before %v, after %v", before, after)
			}
		default:
			t.Fatalf("create %d: %v, want insufficient_storage", i, err)
		}
	}
	if !full {
		t.Fatal("the database never filled up")
	}
	_, err = d.Update(ctx, a, first.ID, 0, func(b *store.Breadcrumb) error {
		b.Context = big(1000).Context
		return nil
	})
	if !store.IsCode(err, store.CodeInsufficientStorage) {
		t.Fatalf("update on a full disk: %v", err)
	}
	if after := rowCounts(t, d); !sameCounts(before, after) {
		t.Fatalf("an update that failed left rows: before %v, after %v", before, after)
	}
	if got, err := d.Get(ctx, a, first.ID); err != nil || got.Version != 1 {
		t.Fatalf("after a failed update: %v version %d", err, got.Version)
	}

	// Space returns: writes resume, whole.
	if _, err := d.w.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	b, _, err := d.Create(ctx, a, big(5000), store.Idempotency{})
	if err != nil {
		t.Fatalf("create after space returned: %v", err)
	}
	if _, err := d.Update(ctx, a, first.ID, 1, func(b *store.Breadcrumb) error { b.Title = "grown"; return nil }); err != nil {
		t.Fatalf("update after space returned: %v", err)
	}
	after := rowCounts(t, d)
	for table, grew := range map[string]int{"breadcrumbs": 1, "history": 2, "events": 2, "breadcrumb_search": 1, "breadcrumb_tags": 1} {
		if after[table]-before[table] != grew {
			t.Errorf("%s: %d rows, then %d: want %d more", table, before[table], after[table], grew)
		}
	}
	res, err := d.Search(ctx, a, store.SearchQuery{Text: "zebra5000"})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].ID != b.ID {
		t.Fatalf("search for the record written after: %v %+v", err, res.Hits)
	}
}

// fill writes n records of a few KB each and closes the store, so every
// page is in the database file (the last close checkpoints the WAL).
func fill(t *testing.T, path string, n int) {
	t.Helper()
	ctx := context.Background()
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	for i := range n {
		in := store.Breadcrumb{Title: fmt.Sprintf("r%d", i), Context: json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("lorem ipsum ", 100)))}
		if _, _, err := d.Create(ctx, a, in, store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the WAL is still there after the last close: pages may not be in the file")
	}
}

// tablePages lists the leaf pages of a table, read by a connection of
// the test's own (the store's connections must not cache them), and the
// page size.
func tablePages(t *testing.T, path, table string) (pages []int64, size int64) {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query(`SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p int64
		rows.Scan(&p)
		pages = append(pages, p)
	}
	if len(pages) < 3 {
		t.Fatalf("%s has %d leaf pages; the test needs more", table, len(pages))
	}
	return pages, size
}

// damage overwrites whole pages of the file with bytes no b-tree page
// starts with, as a failing disk or a stray write would.
func damage(t *testing.T, path string, pages []int64, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := []byte(strings.Repeat("\xff", int(size)))
	for _, p := range pages {
		if _, err := f.WriteAt(junk, (p-1)*size); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDamagedFileRefusedAtOpen: pages damaged in the middle of the file,
// or a header that is not SQLite's, keep Open from opening it, with a
// message that names the file and how to recover it.
func TestDamagedFileRefusedAtOpen(t *testing.T) {
	for name, spoil := range map[string]func(t *testing.T, path string){
		"pages in the middle": func(t *testing.T, path string) {
			pages, size := tablePages(t, path, "breadcrumbs")
			damage(t, path, pages[len(pages)/2:len(pages)/2+1], size)
		},
		"history pages": func(t *testing.T, path string) {
			pages, size := tablePages(t, path, "history")
			damage(t, path, pages[len(pages)/2:len(pages)/2+1], size)
		},
		"header": func(t *testing.T, path string) {
			f, _ := os.OpenFile(path, os.O_WRONLY, 0)
			f.WriteAt([]byte("not a database!!"), 0)
			f.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ctxkit.db")
			fill(t, path, 200)
			spoil(t, path)
			d, err := Open(context.Background(), path)
			if err == nil {
				d.Close()
				t.Fatal("a damaged file was opened")
			}
			if !store.IsCode(err, store.CodeCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), ".recover") ||
				!strings.Contains(err.Error(), "backup") {
				t.Fatalf("error %q: want store_corrupt naming %s and how to recover", err, path)
			}
		})
	}
}

// TestDamageFoundAtRunTime: pages damaged after Open (its check passed)
// are found by the first statement that reads them: store_corrupt, and
// from then on every write is refused, even one that would not touch the
// damaged pages.
func TestDamageFoundAtRunTime(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	fill(t, path, 200)
	pages, size := tablePages(t, path, "breadcrumbs")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	if _, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "before", Context: json.RawMessage(`{}`)}, store.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	damage(t, path, pages[len(pages)/3:2*len(pages)/3], size)

	_, err = d.List(ctx, a, store.Query{Limit: store.MaxLimit})
	if !store.IsCode(err, store.CodeCorrupt) {
		t.Fatalf("list over damaged pages: %v, want store_corrupt", err)
	}
	if !strings.Contains(err.Error(), "damaged") {
		t.Errorf("message %q", err)
	}
	_, _, err = d.Create(ctx, a, store.Breadcrumb{Title: "after", Context: json.RawMessage(`{}`)}, store.Idempotency{})
	if !store.IsCode(err, store.CodeCorrupt) {
		t.Fatalf("a write after the damage was found: %v, want store_corrupt", err)
	}
	if _, err := d.Expire(ctx, d.now()); !store.IsCode(err, store.CodeCorrupt) {
		t.Fatalf("expiry after the damage was found: %v, want store_corrupt", err)
	}
}

// TestCheckIsBounded: the check at Open stops at CheckTime, so a large
// file still opens (what the check did not reach is left to the
// detection at run time); within the time, damage is found.
func TestCheckIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	fill(t, path, 300)
	pages, size := tablePages(t, path, "history")
	damage(t, path, pages[len(pages)-1:], size)
	defer func(was time.Duration) { CheckTime = was }(CheckTime)
	CheckTime = time.Nanosecond
	d, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("a check out of time kept the file from opening: %v", err)
	}
	d.Close()
	CheckTime = time.Minute
	if _, err := Open(context.Background(), path); !store.IsCode(err, store.CodeCorrupt) {
		t.Fatalf("with time to check: %v, want store_corrupt", err)
	}
}

// BenchmarkOpen measures what the integrity check adds to opening a
// database of about 150 MB: "checked" runs quick_check to the end,
// "unchecked" (CheckTime 0) skips it; the ratio is the check's cost, and
// MB/s its speed, from which CheckTime's bound follows.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "ctxkit.db")
	d, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	text := strings.Repeat("lorem ipsum dolor sit amet ", 100)
	for range 8 {
		batch := make([]store.Breadcrumb, 2000)
		for i := range batch {
			batch[i] = store.Breadcrumb{Title: fmt.Sprintf("r%d", i), Context: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))}
		}
		if _, err := d.Import(ctx, a, batch); err != nil {
			b.Fatal(err)
		}
	}
	d.Close()
	st, _ := os.Stat(path)
	defer func(was time.Duration) { CheckTime = was }(CheckTime)
	for _, bc := range []struct {
		name  string
		check time.Duration
	}{{"checked", time.Hour}, {"unchecked", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			CheckTime = bc.check
			b.SetBytes(st.Size())
			for b.Loop() {
				d, err := Open(ctx, path)
				if err != nil {
					b.Fatal(err)
				}
				d.Close()
			}
		})
	}
}
