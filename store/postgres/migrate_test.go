package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
)

// TestMigrate0007OnFilledDatabase: a database at 0006 holding
// webhooks and pending, delivered and failed deliveries is opened by two
// replicas at once: 0007 runs once, the rows stay, the pending ones are
// claimed and the settled ones are not, and the claim's ranking and the
// pruning are planned on the new partial indexes.
func TestMigrate0007OnFilledDatabase(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).NewDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v, f := range files {
		if strings.HasPrefix(filepath.Base(f), "0007") {
			break
		}
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, string(body)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, now())`, v+1); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMicro()
	old := time.Now().Add(-store.DeliveryRetention - time.Hour).UnixMicro()
	for _, q := range []string{
		`SELECT set_config('ctxkit.system', 'on', true)`,
		`INSERT INTO webhooks (id, owner_id, agent_id, curator, url, selector, payload, description, secret, cursor, created_at, updated_at)
			SELECT '00000000-0000-0000-0000-' || lpad(i::text, 12, '0'), 'acme', 'alice', false, 'https://example.com/', '{}', 'full', '', 's', 0, $1::bigint, $1::bigint
			FROM generate_series(1, 20) i`,
		`INSERT INTO webhook_deliveries (id, webhook_id, owner_id, seq, kind, body, status, first_due, next_at, created_at, updated_at)
			SELECT 'd' || lpad(i::text, 8, '0'), '00000000-0000-0000-0000-' || lpad((i % 20 + 1)::text, 12, '0'), 'acme', i, 'created', '\x7b7d',
				CASE WHEN i % 100 = 0 THEN 'pending' WHEN i % 2 = 0 THEN 'delivered' ELSE 'failed' END,
				$1::bigint, $1::bigint, $2::bigint, CASE WHEN i % 50 = 1 THEN $2::bigint ELSE $1::bigint END
			FROM generate_series(1, 30000) i`,
	} {
		var args []any
		if strings.Contains(q, "$2") {
			args = []any{now, old}
		} else if strings.Contains(q, "$1") {
			args = []any{now}
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		dbs [2]*postgres.DB
		es  [2]error
	)
	for i := range dbs {
		wg.Add(1)
		go func() { defer wg.Done(); dbs[i], es[i] = postgres.Open(ctx, url) }()
	}
	wg.Wait()
	for i := range dbs {
		if es[i] != nil {
			t.Fatalf("replica %d: %v", i, es[i])
		}
		defer dbs[i].Close()
	}
	var runs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&runs); err != nil || runs != len(files) {
		t.Fatalf("schema_migrations: %d rows (%v), want %d", runs, err, len(files))
	}
	cds, err := dbs[1].ClaimDeliveries(ctx, store.DeliveryClaim{Limit: 1000, PerWebhook: 1000, Lease: time.Hour})
	if err != nil || len(cds) != 300 {
		t.Fatalf("claimed %d (%v), want the 300 pending", len(cds), err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE webhook_deliveries`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ q, index string }{
		{`DELETE FROM webhook_deliveries WHERE status IN ('delivered', 'failed') AND updated_at < ` + itoa(old+1), "webhook_deliveries_done"},
		{`SELECT d.id FROM webhooks w CROSS JOIN LATERAL (SELECT x.id, x.next_at FROM webhook_deliveries x WHERE x.webhook_id = w.id
			AND x.status = 'pending' AND x.next_at <= ` + itoa(now) + ` AND x.lease_until <= ` + itoa(now) + ` ORDER BY x.next_at, x.id LIMIT 4) d
			WHERE w.paused_reason = ''`, "webhook_deliveries_pending"},
	} {
		plan := explain(t, conn, c.q)
		if !strings.Contains(plan, c.index) {
			t.Errorf("plan of %.60s… does not use %s:\n%s", c.q, c.index, plan)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func explain(t *testing.T, conn *pgx.Conn, q string) string {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT set_config('ctxkit.system', 'on', true)`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN `+q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
