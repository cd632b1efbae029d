package postgres

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/query"
	"github.com/ctxkit/ctxkit/store/internal/rank"
)

// searchVector renders b's search document as a tsvector literal: each
// word with its positions and weight (A title, B tags, C description, D
// view text), fields one position apart so no phrase spans two; terms are
// its distinct words and doc the document for ranking.
func searchVector(b *store.Breadcrumb) (vector string, terms []string, doc string) {
	d := store.Document(b)
	doc = rank.Encode(d)
	type occ struct{ pos []string }
	words := map[string]*occ{}
	pos := 0
	for _, f := range []struct {
		ws     []string
		weight string
	}{{d.Title, "A"}, {d.Tags, "B"}, {d.Description, "C"}, {d.Body, "D"}} {
		for _, w := range f.ws {
			pos++
			o := words[w]
			if o == nil {
				o = &occ{}
				words[w] = o
			}
			if len(o.pos) < 256 { // PostgreSQL keeps at most 256 positions of a word
				o.pos = append(o.pos, strconv.Itoa(pos)+f.weight)
			}
		}
		pos++
	}
	terms = make([]string, 0, len(words))
	for w := range words {
		terms = append(terms, w)
	}
	sort.Strings(terms)
	var sb strings.Builder
	for i, w := range terms {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(quoteLexeme(w))
		sb.WriteByte(':')
		sb.WriteString(strings.Join(words[w].pos, ","))
	}
	return sb.String(), terms, doc
}

// quoteLexeme quotes a word for tsvector and tsquery input.
func quoteLexeme(w string) string {
	return "'" + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(w) + "'"
}

// tsQuery renders a parsed query as tsquery input. Every word is a quoted
// lexeme, so no user text is read as tsquery syntax.
func tsQuery(e *store.SearchExpr) string {
	groups := positiveGroups(e)
	for _, t := range e.None {
		groups = append(groups, "!"+tsTerm(t))
	}
	return strings.Join(groups, " & ")
}

// positiveGroups is the groups of e that must match.
func positiveGroups(e *store.SearchExpr) []string {
	groups := make([]string, 0, len(e.All)+len(e.None))
	for _, g := range e.All {
		alts := make([]string, len(g))
		for j, t := range g {
			alts[j] = tsTerm(t)
		}
		groups = append(groups, "("+strings.Join(alts, " | ")+")")
	}
	return groups
}

// tsTerm is one term: its lexemes adjacent, the last one a prefix for a
// prefix term.
func tsTerm(t store.SearchTerm) string {
	parts := make([]string, len(t.Words))
	for i, w := range t.Words {
		parts[i] = quoteLexeme(w)
		if t.Prefix && i == len(t.Words)-1 {
			parts[i] += ":*"
		}
	}
	return "(" + strings.Join(parts, " <-> ") + ")"
}

// candidates is SQL selecting, for every group of e, the ids of the
// owner's ($1) breadcrumbs that may match it, from search_terms: those
// holding one word of one of its terms (the longest exact word of a term,
// or its prefix). Each becomes its own "id IN (...)", so the planner can
// start from the most selective and probe the others' index. It appends
// its parameters to args.
func candidates(e *store.SearchExpr, args *[]any) (selects []string) {
	param := func(v any) string {
		*args = append(*args, v)
		return fmt.Sprintf("$%d", len(*args))
	}
	selects = make([]string, len(e.All))
	for i, g := range e.All {
		var exact []string
		var conds []string
		for _, t := range g {
			key, prefix := "", false
			for j, w := range t.Words {
				if t.Prefix && j == len(t.Words)-1 {
					continue
				}
				if len(w) > len(key) {
					key = w
				}
			}
			if key == "" {
				key, prefix = t.Words[len(t.Words)-1], true
			}
			if prefix {
				conds = append(conds, fmt.Sprintf(`(term >= %s AND term < %s)`, param(key), param(key+string(utf8.MaxRune))))
			} else {
				exact = append(exact, key)
			}
		}
		if len(exact) > 0 {
			conds = append(conds, `term = ANY(`+param(exact)+`::text[])`)
		}
		selects[i] = `SELECT breadcrumb_id FROM search_terms WHERE owner_id = $1 AND (` + strings.Join(conds, ` OR `) + `)`
	}
	return selects
}

// driveWord is the word of the first group of e that is one term of one
// exact word (a phrase's longest word counts): the search then walks that
// word's breadcrumbs newest first and stops at the rank bound.
func driveWord(e *store.SearchExpr) (string, bool) {
	for _, g := range e.All {
		if len(g) != 1 || g[0].Prefix && len(g[0].Words) == 1 {
			continue
		}
		key := ""
		for j, w := range g[0].Words {
			if !(g[0].Prefix && j == len(g[0].Words)-1) && len(w) > len(key) {
				key = w
			}
		}
		return key, true
	}
	return "", false
}

// Search implements store.Store. The candidates come from search_terms;
// the newest MaxRanked of the owner's that match and that the caller may
// list (visibility, expiry, read budget, tags and schema apply to each
// candidate; id order: UUIDv7 ids are in creation order) are ranked
// (rank.Rank, from their documents in search_docs), and the
// best are read.
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
	for _, t := range append([]string{q.SchemaName}, q.Tags...) {
		if !utf8.ValidString(t) || strings.IndexByte(t, 0) >= 0 {
			return res, nil
		}
	}
	args := append(actorArgs(a), d.now())
	word, drive := driveWord(e)
	var selects []string
	if drive {
		args = append(args, word)
	} else {
		selects = candidates(e, &args)
	}
	dn := len(args)
	args = append(args, tsQuery(e))
	qn := len(args)
	args = append(args, bound+1)
	kn := len(args)
	// Every filter applies inside the bound: the bound and Bounded count
	// only the breadcrumbs the caller may list, so neither tells anything
	// of breadcrumbs the caller may not see.
	filters := []string{`(b.visibility <> 'private' OR b.created_by = $2 OR $3::boolean)`,
		`(b.expires_at IS NULL OR b.expires_at > $4)`, `(b.max_reads = 0 OR b.reads < b.max_reads)`}
	if q.SchemaName != "" {
		args = append(args, q.SchemaName)
		filters = append(filters, fmt.Sprintf(`b.schema_name = $%d`, len(args)))
	}
	if tags := query.Tags(q.Tags); len(tags) > 0 {
		args = append(args, tags, len(tags))
		filters = append(filters, fmt.Sprintf(`(SELECT count(*) FROM breadcrumb_tags bt WHERE bt.owner_id = $1 AND bt.breadcrumb_id = b.id
			AND bt.tag = ANY($%d::text[])) = $%d`, len(args)-1, len(args)))
	}
	var cand string
	if drive {
		// Newest first along one word's entries (the primary key's order),
		// checking each breadcrumb, until the bound.
		cand = fmt.Sprintf(`SELECT t.breadcrumb_id AS id FROM search_terms t JOIN breadcrumbs b ON b.id = t.breadcrumb_id
			WHERE t.owner_id = $1 AND t.term = $%d AND b.owner_id = $1 AND b.search @@ $%d::tsquery AND %s
			ORDER BY t.breadcrumb_id DESC LIMIT $%d`, dn, qn, strings.Join(filters, ` AND `), kn)
	} else {
		inner := []string{`b.owner_id = $1`}
		for _, c := range selects {
			inner = append(inner, `b.id IN (`+c+`)`)
		}
		inner = append(inner, fmt.Sprintf(`b.search @@ $%d::tsquery`, qn))
		inner = append(inner, filters...)
		cand = `SELECT b.id FROM breadcrumbs b WHERE ` + strings.Join(inner, ` AND `) + fmt.Sprintf(` ORDER BY b.id DESC LIMIT $%d`, kn)
	}
	// One more than the bound is fetched to tell whether there were more;
	// the oldest is not ranked.
	sql := fmt.Sprintf(`WITH cand AS MATERIALIZED (`+cand+`)
		SELECT c.id::text, coalesce(d.doc, ''), (SELECT count(*) FROM cand)
		FROM (SELECT id FROM cand ORDER BY id DESC LIMIT $%d - 1) c LEFT JOIN search_docs d ON d.breadcrumb_id = c.id AND d.owner_id = $1`, kn)
	// Each document is counted as it is read and dropped: a search holds
	// one at a time, not every candidate's.
	var (
		cands  []rank.Candidate // ids only
		ranker = rank.New(e)
	)
	err = d.query(ctx, scope{owner: a.OwnerID}, sql, args, func(rows pgx.Rows) error {
		var (
			c     rank.Candidate
			doc   string
			total int64
		)
		if err := rows.Scan(&c.ID, &doc, &total); err != nil {
			return err
		}
		ranker.Add(c.ID, doc)
		cands = append(cands, c)
		res.Bounded = res.Bounded || total > int64(bound)
		return nil
	})
	if err != nil {
		return store.SearchResult{}, err
	}
	ranked := ranker.Best(limit)
	if len(ranked) == 0 {
		return res, nil
	}
	ids := make([]string, len(ranked))
	for i, r := range ranked {
		ids[i] = cands[r.Index].ID
	}
	// The best are read with the same filters, so a breadcrumb that
	// changed since (made private, expired, deleted) is left out.
	byID := make(map[string]store.Breadcrumb, len(ids))
	err = d.query(ctx, scope{owner: a.OwnerID}, `SELECT `+columns+` FROM breadcrumbs b WHERE b.owner_id = $1 AND b.id = ANY($5::uuid[]) AND `+
		strings.Join(filters[:3], ` AND `), append(args[:4:4], ids), func(rows pgx.Rows) error {
		b, err := scan(rows)
		byID[b.ID] = b
		return err
	})
	if err != nil {
		return store.SearchResult{}, err
	}
	for _, r := range ranked {
		if b, ok := byID[cands[r.Index].ID]; ok {
			res.Hits = append(res.Hits, store.SearchHit{Breadcrumb: b, Score: r.Score})
		}
	}
	return res, nil
}

// queueSearch queues b's words for candidate search and its document for
// ranking (after its row).
func queueSearch(batch *pgx.Batch, b *store.Breadcrumb, terms []string, doc string, create bool) {
	if !create {
		batch.Queue(`DELETE FROM search_terms WHERE breadcrumb_id = $1 AND owner_id = $2`, b.ID, b.OwnerID)
	}
	batch.Queue(`INSERT INTO search_terms (owner_id, term, breadcrumb_id) SELECT $1, t, $2 FROM unnest($3::text[]) AS t`, b.OwnerID, b.ID, terms)
	batch.Queue(`INSERT INTO search_docs (breadcrumb_id, owner_id, doc) VALUES ($1, $2, $3)
		ON CONFLICT (breadcrumb_id) DO UPDATE SET owner_id = excluded.owner_id, doc = excluded.doc`, b.ID, b.OwnerID, doc)
}

// backfillSearch indexes the breadcrumbs written before search existed.
func (d *DB) backfillSearch(ctx context.Context) error {
	for {
		var todo []store.Breadcrumb
		err := d.inTx(ctx, scope{system: true}, func(c *pgxpool.Conn) (*pgx.Batch, error) {
			rows, err := c.Query(ctx, `SELECT `+columns+` FROM breadcrumbs WHERE search IS NULL ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED`)
			if err != nil {
				return nil, err
			}
			if todo, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Breadcrumb, error) { return scan(r) }); err != nil {
				return nil, err
			}
			batch := &pgx.Batch{}
			for i := range todo {
				vec, terms, doc := searchVector(&todo[i])
				batch.Queue(`UPDATE breadcrumbs SET search = $1::tsvector WHERE id = $2`, vec, todo[i].ID)
				queueSearch(batch, &todo[i], terms, doc, false)
			}
			return batch, nil
		})
		if err != nil || len(todo) < 500 {
			return err
		}
	}
}

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
	err := d.writeTx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error) {
		const chunk = 500
		for start := 0; start < len(out); start += chunk {
			batch := &pgx.Batch{}
			for i := start; i < min(start+chunk, len(out)); i++ {
				if err := queueVersion(batch, &out[i], true); err != nil {
					return nil, err
				}
			}
			if err := c.SendBatch(ctx, batch).Close(); err != nil {
				return nil, err
			}
		}
		// Fresh statistics, so searches plan well right after a bulk load.
		batch := &pgx.Batch{}
		batch.Queue(`ANALYZE breadcrumbs, search_terms`)
		// The events last, in the pipeline of the commit: the event lock
		// is held neither across the chunks' round trips nor while
		// ANALYZE runs, which the readers of every replica would wait
		// for, and the writers behind them.
		ptrs := make([]*store.Breadcrumb, len(out))
		for i := range out {
			ptrs[i] = &out[i]
		}
		queueEvents(batch, n, store.Created, now, ptrs...)
		return batch, nil
	})
	if err != nil {
		return nil, err
	}
	d.feed.WakeFor(a.OwnerID)
	return out, nil
}
