// Package sqlite is the embedded store backend: one SQLite database file
// (modernc.org/sqlite, no cgo) in WAL mode with synchronous=FULL, so an
// acknowledged write survives a crash of the process or the machine.
//
// Writes go through a single connection and are serialized in Go, so they
// never meet SQLite's busy errors; reads use a pool of their own.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/ctxkit/ctxkit/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// EventBacklog is how many events are kept for clients that resume.
const EventBacklog = 100_000

// IdempotencyWindow is how long an idempotency key is remembered.
const IdempotencyWindow = 24 * time.Hour

// DB is a store.Store on one SQLite file.
type DB struct {
	w, r   *sql.DB
	notify notifier
	now    func() time.Time
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database at path and runs the
// migrations it has not run yet.
func Open(ctx context.Context, path string) (*DB, error) {
	// The database holds every owner's data: readable by this user only.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)"
	base := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + pragmas
	w, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	d := &DB{w: w, now: time.Now}
	if err := d.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	if err := d.backfillSearch(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite %s: indexing for search: %w", path, err)
	}
	if d.r, err = sql.Open("sqlite", base); err != nil {
		w.Close()
		return nil, err
	}
	d.r.SetMaxOpenConns(4)
	d.r.SetMaxIdleConns(4)
	return d, nil
}

func (d *DB) migrate(ctx context.Context) error {
	if _, err := d.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return err
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		v, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, "migrations/"), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with its number", name)
		}
		var done int
		if err := d.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, v).Scan(&done); err != nil {
			return err
		}
		if done > 0 {
			continue
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		err = d.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error {
	d.notify.broadcast()
	return errors.Join(d.r.Close(), d.w.Close())
}

// inTx runs f in a write transaction and wakes event readers after a commit.
func (d *DB) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	d.notify.broadcast()
	return nil
}

const columns = `id, owner_id, title, description, semantic_version, context, tags, schema_name, llm_hints,
	visibility, sensitivity, version, checksum, expires_at, max_reads, reads, created_at, created_by,
	updated_at, updated_by, size_bytes`

// writableBy is the WHERE clause for what an actor may change (and list, and
// receive events for); visibleTo adds other owners' public breadcrumbs, for
// reads by id. Both take actorArgs: owner, agent, curator.
const (
	writableBy = `(owner_id = ? AND (visibility != 'private' OR created_by = ? OR ?))`
	visibleTo  = `(` + writableBy + ` OR visibility = 'public')`
)

func actorArgs(a store.Actor) []any { return []any{a.OwnerID, a.AgentID, a.Curator} }

type scanner interface{ Scan(dest ...any) error }

func scan(s scanner) (store.Breadcrumb, error) {
	var (
		b                    store.Breadcrumb
		ctx, tags            string
		hints                sql.NullString
		expires              sql.NullInt64
		vis, sens            string
		createdAt, updatedAt int64
	)
	err := s.Scan(&b.ID, &b.OwnerID, &b.Title, &b.Description, &b.SemanticVersion, &ctx, &tags, &b.SchemaName, &hints,
		&vis, &sens, &b.Version, &b.Checksum, &expires, &b.MaxReads, &b.Reads, &createdAt, &b.CreatedBy,
		&updatedAt, &b.UpdatedBy, &b.SizeBytes)
	if err != nil {
		return b, err
	}
	b.Context = json.RawMessage(ctx)
	if err := json.Unmarshal([]byte(tags), &b.Tags); err != nil {
		return b, fmt.Errorf("breadcrumb %s: tags: %w", b.ID, err)
	}
	if hints.Valid {
		b.LLMHints = json.RawMessage(hints.String)
	}
	b.Visibility, b.Sensitivity = store.Visibility(vis), store.Sensitivity(sens)
	if expires.Valid {
		t := time.UnixMicro(expires.Int64).UTC()
		b.ExpiresAt = &t
	}
	b.CreatedAt = time.UnixMicro(createdAt).UTC()
	b.UpdatedAt = time.UnixMicro(updatedAt).UTC()
	return b, nil
}

func values(b *store.Breadcrumb) []any {
	tags, _ := json.Marshal(b.Tags)
	var hints, expires any
	if b.LLMHints != nil {
		hints = string(b.LLMHints)
	}
	if b.ExpiresAt != nil {
		expires = b.ExpiresAt.UnixMicro()
	}
	return []any{b.ID, b.OwnerID, b.Title, b.Description, b.SemanticVersion, string(b.Context), string(tags),
		b.SchemaName, hints, string(b.Visibility), string(b.Sensitivity), b.Version, b.Checksum, expires,
		b.MaxReads, b.Reads, b.CreatedAt.UnixMicro(), b.CreatedBy, b.UpdatedAt.UnixMicro(), b.UpdatedBy, b.SizeBytes}
}

// stamp is the current time at the precision the database keeps.
func (d *DB) stamp() time.Time { return d.now().UTC().Truncate(time.Microsecond) }

// Create implements store.Store.
func (d *DB) Create(ctx context.Context, a store.Actor, in store.Breadcrumb, idem store.Idempotency) (store.Breadcrumb, bool, error) {
	now := d.stamp()
	b, err := store.NewRecord(a, in, now)
	if err != nil {
		return store.Breadcrumb{}, false, err
	}
	var (
		out      = b
		replayed bool
	)
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		if idem.Key != "" {
			var hash, rec string
			err := tx.QueryRowContext(ctx, `SELECT request_hash, record FROM idempotency WHERE owner_id = ? AND agent_id = ? AND key = ?`, a.OwnerID, a.AgentID, idem.Key).Scan(&hash, &rec)
			switch {
			case err == nil:
				if hash != idem.RequestHash {
					return store.ErrIdempotencyConflict
				}
				replayed = true
				return json.Unmarshal([]byte(rec), &out)
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		if err := insertVersion(ctx, tx, &b, true); err != nil {
			return err
		}
		if err := addEvent(ctx, tx, store.Created, &b, now); err != nil {
			return err
		}
		if idem.Key != "" {
			rec, _ := json.Marshal(b)
			if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency (owner_id, agent_id, key, request_hash, record, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
				a.OwnerID, a.AgentID, idem.Key, idem.RequestHash, string(rec), now.UnixMicro()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.Breadcrumb{}, false, err
	}
	return out, replayed, nil
}

// insertVersion writes b as the current row (insert or replace), its tags
// and its history entry.
func insertVersion(ctx context.Context, tx *sql.Tx, b *store.Breadcrumb, create bool) error {
	q := `INSERT INTO breadcrumbs (` + columns + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	if !create {
		q = `REPLACE INTO breadcrumbs (` + columns + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	}
	if !create {
		if err := unindexSearch(ctx, tx, b.ID); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, q, values(b)...)
	if err != nil {
		return err
	}
	rowid, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if err := indexSearch(ctx, tx, b, rowid); err != nil {
		return err
	}
	if !create {
		if _, err := tx.ExecContext(ctx, `DELETE FROM breadcrumb_tags WHERE breadcrumb_id = ?`, b.ID); err != nil {
			return err
		}
	}
	for _, t := range b.Tags {
		if _, err := tx.ExecContext(ctx, `INSERT INTO breadcrumb_tags (tag, breadcrumb_id) VALUES (?, ?)`, t, b.ID); err != nil {
			return err
		}
	}
	rec, err := json.Marshal(b)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO history (breadcrumb_id, version, record) VALUES (?, ?, ?)`, b.ID, b.Version, string(rec))
	return err
}

func addEvent(ctx context.Context, tx *sql.Tx, kind store.EventKind, b *store.Breadcrumb, at time.Time) error {
	tags, _ := json.Marshal(b.Tags)
	_, err := tx.ExecContext(ctx, `INSERT INTO events (kind, breadcrumb_id, owner_id, version, visibility, created_by, tags, schema_name, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, string(kind), b.ID, b.OwnerID, b.Version, string(b.Visibility), b.CreatedBy, string(tags), b.SchemaName, at.UnixMicro())
	return err
}

func (d *DB) get(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, a store.Actor, id, where string) (store.Breadcrumb, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Breadcrumb{}, store.ErrNotFound
	}
	args := append([]any{u.String()}, actorArgs(a)...)
	b, err := scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM breadcrumbs WHERE id = ? AND `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return b, store.ErrNotFound
	}
	if err != nil {
		return b, err
	}
	if store.Expired(&b, d.now()) {
		return store.Breadcrumb{}, store.ErrNotFound
	}
	return b, nil
}

// Get implements store.Store.
func (d *DB) Get(ctx context.Context, a store.Actor, id string) (store.Breadcrumb, error) {
	return d.get(ctx, d.r, a, id, visibleTo)
}

// Read implements store.Store.
func (d *DB) Read(ctx context.Context, a store.Actor, id string) (store.Breadcrumb, error) {
	// Most breadcrumbs have no read budget, and another owner's read of a
	// public one spends none: read them without taking the write lock.
	b, err := d.get(ctx, d.r, a, id, visibleTo)
	if err != nil || !store.SpendsBudget(a, &b) {
		return b, err
	}
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if b, err = d.get(ctx, tx, a, id, visibleTo); err != nil {
			return err
		}
		if !store.SpendsBudget(a, &b) {
			return nil
		}
		b.Reads++
		if b.Reads < b.MaxReads {
			_, err = tx.ExecContext(ctx, `UPDATE breadcrumbs SET reads = ? WHERE id = ?`, b.Reads, b.ID)
			return err
		}
		// This read uses up the budget: it is served, and the record goes.
		return deleteRow(ctx, tx, &b, d.stamp())
	})
	return b, err
}

func deleteRow(ctx context.Context, tx *sql.Tx, b *store.Breadcrumb, now time.Time) error {
	if err := unindexSearch(ctx, tx, b.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM breadcrumbs WHERE id = ?`, b.ID); err != nil {
		return err
	}
	return addEvent(ctx, tx, store.Deleted, b, now)
}

// List implements store.Store.
func (d *DB) List(ctx context.Context, a store.Actor, q store.Query) (store.Page, error) {
	limit, err := store.PageSize(q)
	if err != nil {
		return store.Page{}, err
	}
	where := []string{writableBy, `(expires_at IS NULL OR expires_at > ?)`, `(max_reads = 0 OR reads < max_reads)`}
	args := append(actorArgs(a), d.now().UnixMicro())
	if q.SchemaName != "" {
		where = append(where, `schema_name = ?`)
		args = append(args, q.SchemaName)
	}
	if q.Cursor != "" {
		u, err := uuid.Parse(q.Cursor)
		if err != nil {
			return store.Page{}, &store.Error{Code: store.CodeInvalid, Field: "cursor", Msg: "not a cursor this server gave out"}
		}
		where = append(where, `id < ?`)
		args = append(args, u.String())
	}
	if tags := store.Distinct(q.Tags); len(tags) > 0 {
		where = append(where, `id IN (SELECT breadcrumb_id FROM breadcrumb_tags WHERE tag IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(tags)), ",")+`) GROUP BY breadcrumb_id HAVING COUNT(*) = ?)`)
		for _, t := range tags {
			args = append(args, t)
		}
		args = append(args, len(tags))
	}
	args = append(args, limit+1)
	rows, err := d.r.QueryContext(ctx, `SELECT `+columns+` FROM breadcrumbs WHERE `+strings.Join(where, ` AND `)+
		` ORDER BY id DESC LIMIT ?`, args...)
	if err != nil {
		return store.Page{}, err
	}
	defer rows.Close()
	var page store.Page
	for rows.Next() {
		b, err := scan(rows)
		if err != nil {
			return store.Page{}, err
		}
		page.Items = append(page.Items, b)
	}
	if err := rows.Err(); err != nil {
		return store.Page{}, err
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		page.NextCursor = page.Items[limit-1].ID
	}
	return page, nil
}

// Update implements store.Store.
func (d *DB) Update(ctx context.Context, a store.Actor, id string, expectedVersion int64, m store.Mutation) (store.Breadcrumb, error) {
	var b store.Breadcrumb
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := d.get(ctx, tx, a, id, writableBy)
		if err != nil {
			return err
		}
		if b, err = store.Revise(a, cur, expectedVersion, m, d.stamp()); err != nil {
			return err
		}
		if err := insertVersion(ctx, tx, &b, false); err != nil {
			return err
		}
		return addEvent(ctx, tx, store.Updated, &b, b.UpdatedAt)
	})
	if err != nil {
		return store.Breadcrumb{}, err
	}
	return b, nil
}

// Delete implements store.Store.
func (d *DB) Delete(ctx context.Context, a store.Actor, id string) error {
	return d.inTx(ctx, func(tx *sql.Tx) error {
		b, err := d.get(ctx, tx, a, id, writableBy)
		if err != nil {
			return err
		}
		return deleteRow(ctx, tx, &b, d.stamp())
	})
}

// History implements store.Store. Only the owner's agents see a history,
// and each version only if they could have seen it (a private version only
// its creator and curators). Once the breadcrumb is deleted or expired, only
// the owner's curators see its history.
func (d *DB) History(ctx context.Context, a store.Actor, id string) ([]store.Breadcrumb, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, store.ErrNotFound
	}
	id = u.String()
	if _, err := d.get(ctx, d.r, a, id, writableBy); err != nil {
		if !errors.Is(err, store.ErrNotFound) || !a.Curator {
			return nil, err
		}
	}
	rows, err := d.r.QueryContext(ctx, `SELECT record FROM history WHERE breadcrumb_id = ? ORDER BY version DESC`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Breadcrumb
	for rows.Next() {
		var rec string
		if err := rows.Scan(&rec); err != nil {
			return nil, err
		}
		var b store.Breadcrumb
		if err := json.Unmarshal([]byte(rec), &b); err != nil {
			return nil, err
		}
		if store.Writable(a, &b) {
			out = append(out, b)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, store.ErrNotFound
	}
	return out, nil
}

// Events implements store.Store.
func (d *DB) Events(ctx context.Context, a store.Actor, after int64) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		if after < 0 {
			var err error
			if after, err = d.LatestSeq(ctx); err != nil {
				yield(store.Event{}, err)
				return
			}
		}
		for {
			wake := d.notify.wait() // taken before the query, so no commit is missed
			n := 0
			rows, err := d.r.QueryContext(ctx, `SELECT seq, kind, breadcrumb_id, version, tags, schema_name, at FROM events
				WHERE seq > ? AND `+writableBy+` ORDER BY seq LIMIT 256`, append([]any{after}, actorArgs(a)...)...)
			if err != nil {
				if ctx.Err() == nil {
					yield(store.Event{}, err)
				}
				return
			}
			var batch []store.Event
			for rows.Next() {
				var (
					e    store.Event
					kind string
					tags string
					at   int64
				)
				if err = rows.Scan(&e.Seq, &kind, &e.BreadcrumbID, &e.Version, &tags, &e.SchemaName, &at); err != nil {
					break
				}
				e.Kind, e.At = store.EventKind(kind), time.UnixMicro(at).UTC()
				if err = json.Unmarshal([]byte(tags), &e.Tags); err != nil {
					break
				}
				batch = append(batch, e)
			}
			if err == nil {
				err = rows.Err()
			}
			rows.Close()
			if err != nil {
				if ctx.Err() == nil {
					yield(store.Event{}, err)
				}
				return
			}
			for _, e := range batch {
				n++
				after = e.Seq
				if !yield(e, nil) {
					return
				}
			}
			if n == 0 {
				select {
				case <-ctx.Done():
					return
				case <-wake:
				}
			}
		}
	}
}

// LatestSeq implements store.Store.
func (d *DB) LatestSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := d.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&seq)
	return seq, err
}

// Expire implements store.Store. It also trims the event backlog.
func (d *DB) Expire(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+columns+` FROM breadcrumbs WHERE expires_at IS NOT NULL AND expires_at <= ?`, now.UnixMicro())
		if err != nil {
			return err
		}
		var due []store.Breadcrumb
		for rows.Next() {
			b, err := scan(rows)
			if err != nil {
				rows.Close()
				return err
			}
			due = append(due, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range due {
			if err := deleteRow(ctx, tx, &due[i], now.UTC()); err != nil {
				return err
			}
		}
		n = len(due)
		if _, err = tx.ExecContext(ctx, `DELETE FROM idempotency WHERE created_at < ?`, now.Add(-IdempotencyWindow).UnixMicro()); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM events WHERE seq <= (SELECT MAX(seq) FROM events) - ?`, EventBacklog)
		return err
	})
	return n, err
}

// notifier wakes event readers after every commit.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) broadcast() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
