package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/store"
)

// Search weights of the columns title, tags, description, body: a match in
// the title outranks one in the other fields.
const bm25Weights = `10.0, 5.0, 2.0, 1.0`

// indexSearch writes b's search row for the breadcrumbs row at rowid.
func indexSearch(ctx context.Context, tx *sql.Tx, b *store.Breadcrumb, rowid int64) error {
	d := store.Document(b)
	_, err := tx.ExecContext(ctx, `INSERT INTO breadcrumb_search (rowid, title, tags, description, body) VALUES (?, ?, ?, ?, ?)`,
		rowid, strings.Join(d.Title, " "), strings.Join(d.Tags, " "), strings.Join(d.Description, " "), strings.Join(d.Body, " "))
	return err
}

// unindexSearch removes the search row of breadcrumb id, if any.
func unindexSearch(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM breadcrumb_search WHERE rowid = (SELECT rowid FROM breadcrumbs WHERE id = ?)`, id)
	return err
}

// backfillSearch indexes the breadcrumbs written before search existed.
func (d *DB) backfillSearch(ctx context.Context) error {
	for {
		var ids []string
		rows, err := d.w.QueryContext(ctx, `SELECT id FROM search_pending LIMIT 500`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		err = d.inTx(ctx, func(tx *sql.Tx) error {
			for _, id := range ids {
				var rowid int64
				b, err := scan(extraScanner{tx.QueryRowContext(ctx, `SELECT `+columns+`, rowid FROM breadcrumbs WHERE id = ?`, id), &rowid})
				switch {
				case errors.Is(err, sql.ErrNoRows):
				case err != nil:
					return err
				default:
					if err := unindexSearch(ctx, tx, id); err != nil {
						return err
					}
					if err := indexSearch(ctx, tx, &b, rowid); err != nil {
						return err
					}
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM search_pending WHERE id = ?`, id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// matchExpr renders a parsed query in FTS5's query syntax. Every word is a
// quoted string, so no user text is read as FTS5 syntax.
func matchExpr(e *store.SearchExpr) string {
	term := func(t store.SearchTerm) string {
		s := `"` + strings.ReplaceAll(strings.Join(t.Words, " "), `"`, `""`) + `"`
		if t.Prefix {
			s += "*"
		}
		return s
	}
	groups := make([]string, len(e.All))
	for i, g := range e.All {
		alts := make([]string, len(g))
		for j, t := range g {
			alts[j] = term(t)
		}
		groups[i] = "(" + strings.Join(alts, " OR ") + ")"
	}
	q := strings.Join(groups, " AND ")
	if len(e.None) > 0 {
		nots := make([]string, len(e.None))
		for i, t := range e.None {
			nots[i] = term(t)
		}
		q = "(" + q + ") NOT (" + strings.Join(nots, " OR ") + ")"
	}
	return q
}

// prefixed is the columns list with each column qualified by table b.
var prefixed = func() string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = "b." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()

// Search implements store.Store.
func (d *DB) Search(ctx context.Context, a store.Actor, q store.SearchQuery) ([]store.SearchHit, error) {
	limit, err := store.SearchLimit(q)
	if err != nil {
		return nil, err
	}
	e, err := store.ParseSearch(q.Text)
	if err != nil {
		return nil, err
	}
	where := []string{`breadcrumb_search MATCH ?`,
		`(b.owner_id = ? AND (b.visibility != 'private' OR b.created_by = ? OR ?))`,
		`(b.expires_at IS NULL OR b.expires_at > ?)`, `(b.max_reads = 0 OR b.reads < b.max_reads)`}
	args := []any{matchExpr(e), a.OwnerID, a.AgentID, a.Curator, d.now().UnixMicro()}
	if q.SchemaName != "" {
		where = append(where, `b.schema_name = ?`)
		args = append(args, q.SchemaName)
	}
	if tags := store.Distinct(q.Tags); len(tags) > 0 {
		where = append(where, `b.id IN (SELECT breadcrumb_id FROM breadcrumb_tags WHERE tag IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(tags)), ",")+`) GROUP BY breadcrumb_id HAVING COUNT(*) = ?)`)
		for _, t := range tags {
			args = append(args, t)
		}
		args = append(args, len(tags))
	}
	args = append(args, limit)
	rows, err := d.r.QueryContext(ctx, `SELECT `+prefixed+`, -bm25(breadcrumb_search, `+bm25Weights+`) AS score
		FROM breadcrumb_search JOIN breadcrumbs b ON b.rowid = breadcrumb_search.rowid
		WHERE `+strings.Join(where, ` AND `)+` ORDER BY score DESC, b.id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	var hits []store.SearchHit
	for rows.Next() {
		var h store.SearchHit
		b, err := scan(extraScanner{rows, &h.Score})
		if err != nil {
			return nil, err
		}
		h.Breadcrumb = b
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// extraScanner scans a row of the columns followed by one more value.
type extraScanner struct {
	s     scanner
	extra any
}

func (s extraScanner) Scan(dest ...any) error { return s.s.Scan(append(dest, s.extra)...) }

// Import creates many breadcrumbs in one transaction, as Create would one
// by one (without idempotency keys): for loading data in bulk.
func (d *DB) Import(ctx context.Context, a store.Actor, in []store.Breadcrumb) ([]store.Breadcrumb, error) {
	now := d.stamp()
	out := make([]store.Breadcrumb, len(in))
	for i := range in {
		b, err := store.NewRecord(a, in[i], now)
		if err != nil {
			return nil, fmt.Errorf("breadcrumb %d: %w", i, err)
		}
		out[i] = b
	}
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		for i := range out {
			if err := insertVersion(ctx, tx, &out[i], true); err != nil {
				return err
			}
			if err := addEvent(ctx, tx, store.Created, &out[i], now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
