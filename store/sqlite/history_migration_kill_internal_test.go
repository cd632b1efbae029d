package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestHistoryMigrationKilled: the process migrating a large history is
// killed at several points; each time the database holds the history of
// before or the migrated one, every row byte for byte, and opens (and
// migrates) again.
func TestHistoryMigrationKilled(t *testing.T) {
	if path := os.Getenv("CTXKIT_MIGRATE_ONLY"); path != "" {
		d, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		return
	}
	if testing.Short() {
		t.Skip("writes a large history")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	raw := func() *sql.DB {
		c, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := raw()
	for _, q := range []string{
		`DROP TABLE history`,
		`CREATE TABLE history (breadcrumb_id TEXT NOT NULL, version INTEGER NOT NULL, record TEXT NOT NULL,
			PRIMARY KEY (breadcrumb_id, version)) STRICT, WITHOUT ROWID`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
			INSERT INTO history SELECT printf('id-%05d', i / 4), i % 4 + 1, '{"x":"' || hex(randomblob(600)) || char(233, 0x1F600) || '"}' FROM n`,
		`DELETE FROM schema_migrations WHERE version = 8`,
	} {
		if _, err := c.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	sum := func(c *sql.DB) (string, int, bool) {
		t.Helper()
		var migrated int
		if err := c.QueryRow(`SELECT COUNT(*) FROM schema_migrations WHERE version = 8`).Scan(&migrated); err != nil {
			t.Fatal(err)
		}
		rows, err := c.Query(`SELECT breadcrumb_id, version, CAST(record AS BLOB) FROM history ORDER BY breadcrumb_id, version`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		h, n := sha256.New(), 0
		for rows.Next() {
			var id string
			var v int64
			var rec []byte
			if err := rows.Scan(&id, &v, &rec); err != nil {
				t.Fatal(err)
			}
			h.Write([]byte(id))
			h.Write([]byte{byte(v), 0})
			h.Write(rec)
			h.Write([]byte{0})
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(h.Sum(nil)), n, migrated == 1
	}
	want, rows, _ := sum(c)
	c.Close()
	if rows != 40000 {
		t.Fatalf("%d rows of history, want 40000", rows)
	}
	killedBefore := false
	for _, after := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHistoryMigrationKilled$")
		cmd.Env = append(os.Environ(), "CTXKIT_MIGRATE_ONLY="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		cmd.Process.Kill()
		cmd.Wait()
		var wal int64 // the log the killed migration wrote (uncommitted pages spill to it)
		if fi, err := os.Stat(path + "-wal"); err == nil {
			wal = fi.Size()
		}
		c := raw()
		got, n, migrated := sum(c)
		c.Close()
		if got != want || n != rows {
			t.Fatalf("killed after %v (migrated %v): %d rows, sum %s; want %d, %s", after, migrated, n, got, rows, want)
		}
		t.Logf("killed after %v (log %d bytes): migrated %v, history intact", after, wal, migrated)
		if migrated {
			break
		}
		killedBefore = true
	}
	if !killedBefore {
		t.Log("the migration ended before the first kill")
	}
	d, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, n, migrated := sum(d.w); got != want || n != rows || !migrated {
		t.Fatalf("after the migration: %d rows, sum %s, migrated %v; want %d, %s", n, got, migrated, rows, want)
	}
}
