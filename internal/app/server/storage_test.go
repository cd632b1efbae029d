package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// smallFS mounts a tmpfs of the given size in a temporary directory, for
// as long as the test runs: a file system that genuinely fills up. It
// needs root; without it the test is skipped with a message, except under
// CI=true, where it runs as root and must not skip.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test mounts a small file system and needs root, which CI runs as")
		}
		t.Skip("skipping: mounting a small file system to fill up needs root (run as root, as CI does)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// tableRows counts the rows of the tables a write touches, through a
// read-only connection of the test's own.
func tableRows(t *testing.T, path string) map[string]int {
	t.Helper()
	c, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := map[string]int{}
	for _, table := range []string{"breadcrumbs", "breadcrumb_tags", "history", "events", "breadcrumb_search"} {
		var n int
		if err := c.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

// TestDiskFullIs507: on a file system that fills up, a write is 507
// insufficient_storage saying the server's storage is full, and leaves
// nothing behind: every table holds one row per acknowledged create, no
// more. Once space is freed, writes succeed again, whole.
func TestDiskFullIs507(t *testing.T) {
	dir := smallFS(t, "6m")
	// Ballast, removed later to give the space back.
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ctxkit.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, db, nil, func(o *server.Options) { o.MaxBodyBytes = 1 << 20 })
	tok := e.token("acme", "w", server.RoleEmitter)
	body := func(i int) string {
		return fmt.Sprintf(`{"title":"fill %d","tags":["fill"],"context":{"blob":%q}}`, i, strings.Repeat(fmt.Sprintf("quokka%d ", i), 3000))
	}
	created := 0
	var full reply
	for i := 0; i < 500; i++ {
		r := e.do("POST", "/breadcrumbs", tok, body(i))
		if r.status == http.StatusCreated {
			created++
			continue
		}
		full = r
		break
	}
	if full.status != http.StatusInsufficientStorage || !strings.Contains(string(full.body), `"code":"insufficient_storage"`) ||
		!strings.Contains(string(full.body), "storage is full") {
		t.Fatalf("after %d creates: %d %s; want 507 insufficient_storage", created, full.status, full.body)
	}
	// More writes on the full disk fail the same way. One may still fit:
	// a checkpoint that finishes lets the log start over in the space it
	// already holds. So each is 507 or an acknowledged create, and the
	// disk stays full: three in a row are refused before long.
	refused := 0
	for i := 0; refused < 3; i++ {
		if i == 100 {
			t.Fatalf("100 writes after the disk filled, %d acknowledged: it never stayed full", created)
		}
		switch r := e.do("POST", "/breadcrumbs", tok, body(1000+i)); r.status {
		case http.StatusInsufficientStorage:
			refused++
		case http.StatusCreated:
			created++
			refused = 0
		default:
			t.Fatalf("write on the full disk: %d %s", r.status, r.body)
		}
	}
	rows := tableRows(t, path)
	for table, n := range rows {
		if n != created {
			t.Errorf("%s holds %d rows after %d acknowledged creates: a failed write was half-kept", table, n, created)
		}
	}
	if r := e.do("GET", "/breadcrumbs?limit=500", tok, nil); r.status != 200 || strings.Count(string(r.body), `"fill `) != created {
		t.Fatalf("list on the full disk: %d, %d records, want %d", r.status, strings.Count(string(r.body), `"fill `), created)
	}

	os.Remove(ballast)
	r := e.do("POST", "/breadcrumbs", tok, body(5000))
	if r.status != http.StatusCreated {
		t.Fatalf("write after space returned: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	want(t, e.do("GET", "/breadcrumbs/"+id+"/history", tok, nil), 200, `"version":1`)
	want(t, e.do("GET", "/breadcrumbs/search?q=quokka5000", tok, nil), 200, id)
	for table, n := range tableRows(t, path) {
		if n != created+1 {
			t.Errorf("%s holds %d rows after the write that followed: want %d", table, n, created+1)
		}
	}
}

// TestDamageAtRunTimeIs500Corrupt: pages of the database damaged while
// the server runs are found by the first request that reads them:
// 500 store_corrupt; from then on writes are refused the same way, and the
// damage is logged once, not once per request.
func TestDamageAtRunTimeIs500Corrupt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	e := newEnvOn(t, db, key)
	tok := e.token("acme", "w", server.RoleEmitter, server.RoleCurator)
	for i := range 300 {
		e.create(tok, fmt.Sprintf(`{"title":"r%d","context":{"text":%q}}`, i, strings.Repeat("lorem ipsum ", 50)))
	}
	db.Close() // the last close moves every page into the file
	pages, size := leafPages(t, path, "breadcrumbs")

	logs := &logSink{}
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	e = newEnvOn(t, db, key, func(o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	want(t, e.do("GET", "/breadcrumbs?limit=1", tok, nil), 200, `"r299"`)

	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xff", int(size)))
	for _, p := range pages[len(pages)/3 : 2*len(pages)/3] {
		f.WriteAt(junk, (p-1)*size)
	}
	f.Close()

	want(t, e.do("GET", "/breadcrumbs?limit=500", tok, nil), 500, `"code":"store_corrupt"`)
	for i := range 3 {
		want(t, e.do("POST", "/breadcrumbs", tok, fmt.Sprintf(`{"title":"after %d","context":{}}`, i)), 500, `"code":"store_corrupt"`)
	}
	want(t, e.do("GET", "/breadcrumbs?limit=500", tok, nil), 500, `"code":"store_corrupt"`)
	if n := strings.Count(logs.String(), "the store is damaged"); n != 1 {
		t.Fatalf("the damage was logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), path) {
		t.Fatalf("the log does not name the file %s:\n%s", path, logs)
	}
}

// leafPages lists the leaf pages of a table and the page size, read by a
// connection of the test's own.
func leafPages(t *testing.T, path, table string) (pages []int64, size int64) {
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

// TestPostgresDiskFullIs507: PostgreSQL's disk_full (53100), from a
// tablespace on a file system that fills up, is 507 insufficient_storage;
// the transaction leaves nothing (the record, its history and its event
// all or nothing), and writes resume once space is freed.
func TestPostgresDiskFullIs507(t *testing.T) {
	dir := smallFS(t, "3m")
	pg := pgtest.Start(t)
	dbURL := pg.NewDatabase(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, strings.Replace(dbURL, mustURL(dbURL).User.String()+"@", "postgres@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// The tablespace's directory belongs to the user the server runs as.
	var dataDir string
	if err := admin.QueryRow(ctx, `SHOW data_directory`).Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	// The server's user must reach it through the test's temporary directories.
	for _, d := range []string{filepath.Dir(dir), dir} {
		os.Chmod(d, 0o711)
	}
	space := filepath.Join(dir, "pg")
	os.Mkdir(space, 0o700)
	os.Chown(space, int(st.Sys().(*syscall.Stat_t).Uid), int(st.Sys().(*syscall.Stat_t).Gid))
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	db := openPostgres(t, dbURL)
	for _, q := range []string{`CREATE TABLESPACE small LOCATION '` + space + `'`, `ALTER TABLE breadcrumbs SET TABLESPACE small`} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, pg.AdminURL)
		if err == nil {
			admin.Exec(ctx, `DROP DATABASE `+strings.TrimPrefix(mustURL(dbURL).Path, "/")+` WITH (FORCE)`)
			admin.Exec(ctx, `DROP TABLESPACE small`)
			admin.Close(ctx)
		}
	})
	e := newEnvOn(t, db, nil, func(o *server.Options) { o.MaxBodyBytes = 1 << 20 })
	tok := e.token("acme", "w", server.RoleEmitter)
	body := func(i int) string {
		// Text that does not compress, so each record takes its size on disk.
		var b strings.Builder
		for j := range 2000 {
			fmt.Fprintf(&b, "%x ", sha256.Sum256(fmt.Appendf(nil, "%d-%d", i, j)))
		}
		return fmt.Sprintf(`{"title":"fill %d","context":{"blob":%q}}`, i, b.String())
	}
	created := 0
	var full reply
	for i := range 200 {
		r := e.do("POST", "/breadcrumbs", tok, body(i))
		if r.status != http.StatusCreated {
			full = r
			break
		}
		created++
	}
	if full.status != http.StatusInsufficientStorage || !strings.Contains(string(full.body), `"code":"insufficient_storage"`) ||
		!strings.Contains(string(full.body), "storage is full") {
		t.Fatalf("after %d creates: %d %s; want 507 insufficient_storage", created, full.status, full.body)
	}
	counts := func() map[string]int {
		out := map[string]int{}
		for _, table := range []string{"breadcrumbs", "history", "events"} {
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[table] = n
		}
		return out
	}
	for table, n := range counts() {
		if n != created {
			t.Errorf("%s holds %d rows after %d acknowledged creates", table, n, created)
		}
	}
	os.Remove(ballast)
	r := e.do("POST", "/breadcrumbs", tok, body(1000))
	if r.status != http.StatusCreated {
		t.Fatalf("write after space returned: %d %s", r.status, r.body)
	}
	for table, n := range counts() {
		if n != created+1 {
			t.Errorf("%s holds %d rows after the write that followed: want %d", table, n, created+1)
		}
	}
}
