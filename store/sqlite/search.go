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
	"github.com/ctxkit/ctxkit/store/internal/query"
	"github.com/ctxkit/ctxkit/store/internal/rank"
)

// ownerWord is the word the owner column of owner's search rows holds: one
// opaque token (letters and digits only) per owner.
func ownerWord(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return "o" + hex.EncodeToString(sum[:16])
}

// indexSearch writes b's search rows for the breadcrumbs row at rowid:
// the full-text index, which finds the matches, and the document, from
// which they are ranked.
func indexSearch(ctx context.Context, tx execer, b *store.Breadcrumb, rowid int64) error {
	d := store.Document(b)
	_, err := tx.ExecContext(ctx, `INSERT INTO breadcrumb_search (rowid, owner, title, tags, description, body) VALUES (?, ?, ?, ?, ?, ?)`,
		rowid, ownerWord(b.OwnerID), strings.Join(d.Title, " "), strings.Join(d.Tags, " "), strings.Join(d.Description, " "), strings.Join(d.Body, " "))
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO search_docs (rowid, doc) VALUES (?, ?)`, rowid, rank.Encode(d))
	return err
}

// unindexSearch removes the search rows of breadcrumb id, if any.
func unindexSearch(ctx context.Context, tx execer, id string) error {
	for _, table := range []string{"breadcrumb_search", "search_docs"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE rowid = (SELECT rowid FROM breadcrumbs WHERE id = ?)`, id); err != nil {
			return err
		}
	}
	return nil
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

// Search implements store.Store. The full-text index does the owner
// filtering (the owner column) and yields matches newest first (rowid
// order); the visibility, expiry, read budget and filters apply to each
// as it comes, so only the newest MaxRanked the caller may list are
// ranked (rank.Rank, from their documents in search_docs),
// and the best are read. FTS5's own ranking is not used: its statistics
// span every row of the index.
func (d *DB) Search(ctx context.Context, a store.Actor, q store.SearchQuery) (store.SearchResult, error) {
	var res store.SearchResult
	limit, err := query.SearchLimit(q)
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
	if tags := query.Tags(q.Tags); len(tags) > 0 {
		where = append(where, `(SELECT count(*) FROM breadcrumb_tags t WHERE t.breadcrumb_id = b.id AND t.tag IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(tags)), ",")+`)) = ?`)
		for _, t := range tags {
			args = append(args, t)
		}
		args = append(args, len(tags))
	}
	args = append(args, bound+1, bound)
	// One snapshot for the candidates and the hits read after ranking.
	tx, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return res, d.fail(fmt.Errorf("search: %w", err))
	}
	defer tx.Rollback()
	// One more than the bound is fetched to tell whether there were more;
	// the row numbered bound+1 (the oldest) is not ranked.
	rows, err := tx.QueryContext(ctx, `WITH matched AS MATERIALIZED (
			SELECT s.rowid, b.id
			FROM breadcrumb_search s CROSS JOIN breadcrumbs b ON b.rowid = s.rowid -- CROSS: the matches drive the join, never the owner's every row
			WHERE breadcrumb_search MATCH ? AND `+strings.Join(where, ` AND `)+`
			ORDER BY s.rowid DESC LIMIT ?
		)
		SELECT m.id, coalesce(d.doc, ''), (SELECT count(*) FROM matched)
		FROM matched m LEFT JOIN search_docs d ON d.rowid = m.rowid
		ORDER BY m.rowid DESC LIMIT ?`, args...)
	if err != nil {
		return res, d.fail(fmt.Errorf("search: %w", err))
	}
	// Each document is counted as it is read and dropped: a search holds
	// one at a time, not every candidate's.
	var (
		cands  []rank.Candidate // ids only
		ranker = rank.New(e)
	)
	for rows.Next() {
		var (
			c     rank.Candidate
			doc   string
			total int
		)
		if err := rows.Scan(&c.ID, &doc, &total); err != nil {
			rows.Close()
			return res, d.fail(err)
		}
		ranker.Add(c.ID, doc)
		cands = append(cands, c)
		res.Bounded = res.Bounded || total > bound
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res, d.fail(fmt.Errorf("search: %w", err))
	}
	ranked := ranker.Best(limit)
	if len(ranked) == 0 {
		return res, nil
	}
	ids := make([]any, len(ranked))
	for i, r := range ranked {
		ids[i] = cands[r.Index].ID
	}
	rows, err = tx.QueryContext(ctx, `SELECT `+columns+` FROM breadcrumbs WHERE id IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+`)`, ids...)
	if err != nil {
		return res, d.fail(fmt.Errorf("search: %w", err))
	}
	defer rows.Close()
	byID := make(map[string]store.Breadcrumb, len(ids))
	for rows.Next() {
		b, err := scan(rows)
		if err != nil {
			return res, d.fail(err)
		}
		byID[b.ID] = b
	}
	if err := rows.Err(); err != nil {
		return res, d.fail(fmt.Errorf("search: %w", err))
	}
	for _, r := range ranked {
		res.Hits = append(res.Hits, store.SearchHit{Breadcrumb: byID[cands[r.Index].ID], Score: r.Score})
	}
	return res, nil
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
