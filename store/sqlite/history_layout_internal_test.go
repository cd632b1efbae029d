package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// historyPages counts the pages of the history table and its index by
// their type, read by a connection of the test's own from the file at
// path (the store closed: its log checkpointed into the file).
func historyPages(t *testing.T, path string) map[string]int {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Query(`SELECT pagetype, count(*) FROM dbstat WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name = 'history') GROUP BY pagetype`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	pages := map[string]int{}
	for rows.Next() {
		var kind string
		var n int
		if err := rows.Scan(&kind, &n); err != nil {
			t.Fatal(err)
		}
		pages[kind] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pages
}

// TestHistoryRecordsInPlace: the history of breadcrumbs of a couple of
// KiB (a gateway traffic record's size) takes no overflow pages, one
// per version, and about as many pages as its records fill: each page
// written once to the log and once to the file per version would
// otherwise double what a create writes of the history.
func TestHistoryRecordsInPlace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	const n, textBytes = 64, 1500
	cs := make([]store.Creation, n)
	for i := range cs {
		text := strings.Repeat(fmt.Sprintf("word%d ", i%10), textBytes/6)
		cs[i] = store.Creation{Actor: store.Actor{OwnerID: "o", AgentID: "a"},
			In: store.Breadcrumb{Title: fmt.Sprintf("r%d", i), Context: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))}}
	}
	out, err := d.CreateBatch(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	pages := historyPages(t, path)
	if pages["overflow"] != 0 {
		t.Errorf("%d overflow pages for %d versions of about %d bytes: %v", pages["overflow"], n, textBytes, pages)
	}
	// Two records of some 2 KiB fit a 4 KiB page; the index is small.
	total := 0
	for _, c := range pages {
		total += c
	}
	if limit := n/2 + n/4; total > limit {
		t.Errorf("history takes %d pages for %d versions, want at most %d: %v", total, n, limit, pages)
	}
}

// TestHistoryMigration: a database whose history is the WITHOUT ROWID
// table of before keeps every version through the migration (the same
// records, newest first), the key still refuses a second row of a
// version, and new versions go on being kept.
func TestHistoryMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	var ids []string
	for i := range 3 {
		b, _, err := d.Create(ctx, a, store.Breadcrumb{Title: fmt.Sprintf("r%d", i), Context: json.RawMessage(fmt.Sprintf(`{"n":%d,"text":%q}`, i, strings.Repeat("x", 3000*i)))}, store.Idempotency{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	for v := range 2 {
		if _, err := d.Update(ctx, a, ids[1], 0, func(b *store.Breadcrumb) error {
			b.Context = json.RawMessage(fmt.Sprintf(`{"v":%d}`, v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	histories := func(d *DB) [][]store.Breadcrumb {
		var hs [][]store.Breadcrumb
		for _, id := range ids {
			h, err := d.History(ctx, a, id)
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		return hs
	}
	want := histories(d)
	if len(want[1]) != 3 {
		t.Fatalf("%d versions of the updated breadcrumb, want 3", len(want[1]))
	}
	d.Close()

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE history_before (breadcrumb_id TEXT NOT NULL, version INTEGER NOT NULL, record TEXT NOT NULL,
			PRIMARY KEY (breadcrumb_id, version)) STRICT, WITHOUT ROWID`,
		`INSERT INTO history_before SELECT breadcrumb_id, version, record FROM history`,
		`DROP TABLE history`,
		`ALTER TABLE history_before RENAME TO history`,
		`DELETE FROM schema_migrations WHERE version = 8`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()

	d, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := histories(d)
	for i := range want {
		if !slices.EqualFunc(got[i], want[i], func(g, w store.Breadcrumb) bool {
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			return string(gj) == string(wj)
		}) {
			t.Errorf("history of %s after the migration:\n%+v\nbefore:\n%+v", ids[i], got[i], want[i])
		}
	}
	var schema string
	if err := d.w.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'history'`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(schema), "WITHOUT ROWID") {
		t.Errorf("history is still a WITHOUT ROWID table: %s", schema)
	}
	if _, err := d.w.ExecContext(ctx, `INSERT INTO history (breadcrumb_id, version, record) VALUES (?, 1, '{}')`, ids[0]); err == nil {
		t.Error("a second row of a version was kept")
	}
	if _, err := d.Update(ctx, a, ids[0], 1, func(b *store.Breadcrumb) error {
		b.Title = "after"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if h, err := d.History(ctx, a, ids[0]); err != nil || len(h) != 2 || h[0].Title != "after" || h[1].Version != 1 {
		t.Fatalf("history after an update: %+v, %v", h, err)
	}
}
