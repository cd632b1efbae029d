package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
)

// TestPruneDeletesWhatItNotes: an event that commits while Expire prunes
// is not deleted past the mark Expire notes (events_pruned), which
// webhooks count as missed: an event pruned above it would be skipped in
// silence. Expire's note waits on the mark's row, held here, while an
// event commits; its delete then runs with a newer snapshot.
func TestPruneDeletesWhatItNotes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	d, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	raw, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	system := func(c *pgx.Conn) {
		t.Helper()
		if _, err := c.Exec(ctx, `SELECT set_config('ctxkit.system', 'on', false)`); err != nil {
			t.Fatal(err)
		}
	}
	system(raw)
	insert := func(c *pgx.Conn, n int) {
		t.Helper()
		if _, err := c.Exec(ctx, `INSERT INTO events (seq, kind, breadcrumb_id, owner_id, version, visibility, created_by, tags, schema_name, at)
			SELECT nextval('event_seq'), 'created', gen_random_uuid(), 'acme', 1, 'team', 'alice', '{}', '', now() FROM generate_series(1, $1)`, n); err != nil {
			t.Fatal(err)
		}
	}
	insert(raw, EventBacklog+1)
	if _, err := raw.Exec(ctx, `INSERT INTO events_pruned (id, through) VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	hold, err := raw.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `UPDATE events_pruned SET through = through WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Expire(ctx, time.Now())
		done <- err
	}()
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	system(other)
	for waited := 0; ; waited++ { // until Expire's note waits on the row
		var n int
		if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%events_pruned%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if waited > 500 {
			t.Fatal("Expire never waited on the pruned mark")
		}
		time.Sleep(10 * time.Millisecond)
	}
	insert(other, 5)
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var through, oldest int64
	if err := other.QueryRow(ctx, `SELECT (SELECT through FROM events_pruned WHERE id = 1), (SELECT MIN(seq) FROM events)`).Scan(&through, &oldest); err != nil {
		t.Fatal(err)
	}
	if oldest != through+1 {
		t.Fatalf("pruned through %d noted, but the oldest event left is %d", through, oldest)
	}
}
