package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/store"
)

// Search weights of the columns owner, title, tags, description, body: a
// match in the title outranks one in the other fields; the owner column
// only filters.
const bm25Weights = `0.0, 10.0, 5.0, 2.0, 1.0`

// ownerWord is the word the owner column of owner's search rows holds: one
// opaque token (letters and digits only) per owner.
func ownerWord(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return "o" + hex.EncodeToString(sum[:16])
}

// indexSearch writes b's search row for the breadcrumbs row at rowid.
func indexSearch(ctx context.Context, tx *sql.Tx, b *store.Breadcrumb, rowid int64) error {
	d := store.Document(b)
	_, err := tx.ExecContext(ctx, `INSERT INTO breadcrumb_search (rowid, owner, title, tags, description, body) VALUES (?, ?, ?, ?, ?, ?)`,
		rowid, ownerWord(b.OwnerID), strings.Join(d.Title, " "), strings.Join(d.Tags, " "), strings.Join(d.Description, " "), strings.Join(d.Body, " "))
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
				b, err := scan(extraScanner{tx.QueryRowContext(ctx, `SELECT `+columns+`, rowid FROM breadcrumbs WHERE id = ?`, id), []any{&rowid}})
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
	q := positiveExpr(e)
	if len(e.None) > 0 {
		nots := make([]string, len(e.None))
		for i, t := range e.None {
			nots[i] = ftsTerm(t)
		}
		q = "(" + q + ") NOT (" + strings.Join(nots, " OR ") + ")"
	}
	return q
}

// titleExpr matches the breadcrumbs whose title holds every group of e.
func titleExpr(e *store.SearchExpr) string {
	return "title : (" + positiveExpr(e) + ")"
}

// positiveExpr is the groups of e that must match, ANDed.
func positiveExpr(e *store.SearchExpr) string {
	groups := make([]string, len(e.All))
	for i, g := range e.All {
		alts := make([]string, len(g))
		for j, t := range g {
			alts[j] = ftsTerm(t)
		}
		groups[i] = "(" + strings.Join(alts, " OR ") + ")"
	}
	return strings.Join(groups, " AND ")
}

func ftsTerm(t store.SearchTerm) string {
	s := `"` + strings.ReplaceAll(strings.Join(t.Words, " "), `"`, `""`) + `"`
	if t.Prefix {
		s += "*"
	}
	return s
}

// prefixed is the columns list with each column qualified by table b.
var prefixed = func() string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = "b." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()

// Search implements store.Store. The full-text index does the owner
// filtering (the owner column) and yields matches newest first (rowid
// order); the visibility, expiry, read budget and filters apply to each
// as it comes, so only the newest MaxRanked the caller may list are
// scored, and the best by title-match then bm25 are returned.
func (d *DB) Search(ctx context.Context, a store.Actor, q store.SearchQuery) (store.SearchResult, error) {
	var res store.SearchResult
	limit, err := store.SearchLimit(q)
	if err != nil {
		return res, err
	}
	bound, err := store.RankBound(q)
	if err != nil {
		return res, err
	}
	e, err := store.ParseSearch(q.Text)
	if err != nil {
		return res, err
	}
	owner := `owner : "` + ownerWord(a.OwnerID) + `" AND `
	// Every filter applies inside the bound: the bound and Bounded count
	// only the matches the caller may list, so neither tells anything of
	// breadcrumbs the caller may not see.
	where := []string{`(b.owner_id = ? AND (b.visibility != 'private' OR b.created_by = ? OR ?))`,
		`(b.expires_at IS NULL OR b.expires_at > ?)`, `(b.max_reads = 0 OR b.reads < b.max_reads)`}
	args := []any{owner + "(" + matchExpr(e) + ")", a.OwnerID, a.AgentID, a.Curator, d.now().UnixMicro()}
	if q.SchemaName != "" {
		where = append(where, `b.schema_name = ?`)
		args = append(args, q.SchemaName)
	}
	if tags := store.Distinct(q.Tags); len(tags) > 0 {
		where = append(where, `(SELECT count(*) FROM breadcrumb_tags t WHERE t.breadcrumb_id = b.id AND t.tag IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(tags)), ",")+`)) = ?`)
		for _, t := range tags {
			args = append(args, t)
		}
		args = append(args, len(tags))
	}
	args = append(args, bound+1, owner+titleExpr(e), bound, limit)
	// One more than the bound is fetched to tell whether there were more;
	// the row numbered bound+1 (the oldest) is not ranked. A title holding
	// every term ranks first (bm25 alone may rank a long title below a
	// short description), then by score.
	rows, err := d.r.QueryContext(ctx, `WITH matched AS MATERIALIZED (
			SELECT s.rowid, -bm25(breadcrumb_search, `+bm25Weights+`) AS score, b.id
			FROM breadcrumb_search s CROSS JOIN breadcrumbs b ON b.rowid = s.rowid -- CROSS: the matches drive the join, never the owner's every row
			WHERE breadcrumb_search MATCH ? AND `+strings.Join(where, ` AND `)+`
			ORDER BY s.rowid DESC LIMIT ?
		), titled AS MATERIALIZED (
			SELECT rowid FROM breadcrumb_search WHERE breadcrumb_search MATCH ? AND rowid >= (SELECT min(rowid) FROM matched)
		), top AS MATERIALIZED (
			SELECT m.rowid, m.score, m.rowid IN (SELECT rowid FROM titled) AS in_title, m.id
			FROM matched m
			WHERE (SELECT count(*) FROM matched) <= ? OR m.rowid > (SELECT min(rowid) FROM matched)
			ORDER BY in_title DESC, m.score DESC, m.id DESC LIMIT ?
		)
		SELECT `+prefixed+`, top.score, top.in_title, (SELECT count(*) FROM matched)
		FROM top JOIN breadcrumbs b ON b.rowid = top.rowid
		ORDER BY top.in_title DESC, top.score DESC, top.id DESC`, args...)
	if err != nil {
		return res, d.fail(fmt.Errorf("search: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h       store.SearchHit
			inTitle bool
			total   int
		)
		b, err := scan(extraScanner{rows, []any{&h.Score, &inTitle, &total}})
		if err != nil {
			return res, d.fail(err)
		}
		h.Breadcrumb, h.Score = b, store.Score(h.Score, inTitle)
		res.Hits = append(res.Hits, h)
		res.Bounded = res.Bounded || total > bound
	}
	return res, d.fail(rows.Err())
}

// extraScanner scans a row of the columns followed by more values.
type extraScanner struct {
	s     scanner
	extra []any
}

func (s extraScanner) Scan(dest ...any) error { return s.s.Scan(append(dest, s.extra...)...) }

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
