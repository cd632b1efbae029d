// Package sqlite is the embedded store backend: one SQLite database file
// (modernc.org/sqlite, no cgo) in WAL mode with synchronous=FULL, so an
// acknowledged write survives a crash of the process or the machine.
//
// Writes go through a single connection and are serialized in Go, so they
// never meet SQLite's busy errors; reads use a pool of their own.
package sqlite

import (
	"bytes"
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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"modernc.org/sqlite" // also the database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/access"
	"github.com/ctxkit/ctxkit/store/internal/feed"
	"github.com/ctxkit/ctxkit/store/internal/query"
)

//go:embed migrations/*.sql
var migrations embed.FS

// EventBacklog is how many events are kept for clients that resume.
const EventBacklog = 100_000

// IdempotencyWindow is how long an idempotency key is remembered.
const IdempotencyWindow = 24 * time.Hour

// DB is a store.Store on one SQLite file.
type DB struct {
	w, r *sql.DB
	feed *feed.Feed // serves Events; woken after every commit
	now  func() time.Time
	path string
	// corrupt is set by the first SQLITE_CORRUPT or SQLITE_NOTADB: from
	// then on every write is refused with it, so nothing more goes into a
	// damaged file.
	corrupt atomic.Pointer[store.Error]
	// batchStmts are the statements of CreateBatch, prepared once on the
	// writing connection and kept across batches (see stmtCache).
	batchStmts stmtSet
	// gate orders the writing connection's users (see writeGate).
	gate writeGate
	// ckpt checkpoints the log off the writing connection.
	ckpt *checkpointer
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database at path, checks that it is
// not damaged (Check, within CheckTime) and runs the migrations it has not
// run yet. A damaged file is refused with a *store.Error of CodeCorrupt
// that names the file and how to recover it.
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
	// The writing connection checkpoints the log itself only past
	// walBackstop: checkpoints are the checkpointer's.
	w, err := sql.Open("sqlite", base+"&_txlock=immediate&_pragma=wal_autocheckpoint("+strconv.Itoa(walBackstop)+")")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	d := &DB{w: w, now: time.Now, path: path}
	if err := d.check(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := d.migrate(ctx); err != nil {
		w.Close()
		return nil, d.openFailed(err)
	}
	if err := d.backfillSearch(ctx); err != nil {
		w.Close()
		return nil, d.openFailed(fmt.Errorf("indexing for search: %w", err))
	}
	if d.r, err = sql.Open("sqlite", base); err != nil {
		w.Close()
		return nil, err
	}
	d.r.SetMaxOpenConns(4)
	d.r.SetMaxIdleConns(4)
	if d.ckpt, err = newCheckpointer(base, &d.gate); err != nil {
		d.r.Close()
		w.Close()
		return nil, err
	}
	d.feed = feed.New(feed.Source{Load: d.loadChanges, Contexts: d.contexts, Backlog: d.backlog, Latest: d.LatestSeq}, feed.Options{})
	return d, nil
}

// CheckTime bounds the integrity check at Open. PRAGMA quick_check reads
// every page of the file (O(N), without the index cross-checks of
// integrity_check), about a second per few hundred MB on an ordinary disk:
// a file it cannot finish within CheckTime is opened with the pages it
// read checked, the rest is left to the run-time detection (every
// SQLITE_CORRUPT a statement meets stops the writes). Checking nothing
// would let a damaged file take writes at start; checking without bound
// would keep a large database from starting.
var CheckTime = 10 * time.Second

// check runs PRAGMA quick_check, bounded by CheckTime.
func (d *DB) check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, CheckTime)
	defer cancel()
	problems, err := d.quickCheck(cctx)
	switch {
	case err != nil && cctx.Err() != nil && ctx.Err() == nil:
		// Out of time on a large file: what was read is sound.
		return nil
	case err != nil:
		return d.openFailed(err)
	case len(problems) > 0:
		return d.damaged("quick_check: " + strings.Join(problems, "; "))
	}
	return nil
}

// quickCheck returns the problems PRAGMA quick_check reports (at most 20).
func (d *DB) quickCheck(ctx context.Context) ([]string, error) {
	rows, err := d.w.QueryContext(ctx, `PRAGMA quick_check(20)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	return problems, rows.Err()
}

// openFailed is err from opening the file, classified: damage is refused
// with how to recover, anything else names the file.
func (d *DB) openFailed(err error) error {
	switch c := d.fail(err); {
	case store.IsCode(c, store.CodeCorrupt):
		return d.damaged(err.Error())
	case errors.As(c, new(*store.Error)):
		return c
	}
	return fmt.Errorf("sqlite %s: %w", d.path, err)
}

// damaged is the error that refuses to open a damaged file.
func (d *DB) damaged(why string) error {
	return &store.Error{Code: store.CodeCorrupt, Msg: fmt.Sprintf(
		"the SQLite database %s is damaged (%s); ctxkit will not write to it. Restore it from a backup, "+
			"or salvage what is readable: sqlite3 %s .recover | sqlite3 %s.recovered, then move the damaged file aside "+
			"and start ctxkit on the recovered one", d.path, why, d.path, d.path)}
}

// fail turns what SQLite refuses into the caller's error: a full disk
// (SQLITE_FULL, or ENOSPC from the file system) is insufficient storage;
// a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) is corrupt, and stops
// every later write; a busy or locked database, or one out of memory, is
// unavailable (retry). Other errors pass through.
func (d *DB) fail(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, new(*store.Error)) || !errors.As(err, &se) && !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	code := -1
	if se != nil {
		code = se.Code() & 0xff // the primary code of an extended one
	}
	switch {
	case code == sqlite3.SQLITE_FULL, errors.Is(err, syscall.ENOSPC):
		return &store.Error{Code: store.CodeInsufficientStorage, Msg: "the server's storage is full; nothing of this request was written. Retry when the operator has freed space", Err: err}
	case code == sqlite3.SQLITE_CORRUPT, code == sqlite3.SQLITE_NOTADB:
		e := &store.Error{Code: store.CodeCorrupt, Msg: "the server's database is damaged; writes are refused until the operator restores it",
			Err: fmt.Errorf("sqlite %s: %w", d.path, err)}
		if d.corrupt.CompareAndSwap(nil, e) {
			return e
		}
		return d.corrupt.Load()
	case code == sqlite3.SQLITE_BUSY, code == sqlite3.SQLITE_LOCKED, code == sqlite3.SQLITE_NOMEM:
		return &store.Error{Code: store.CodeUnavailable, Msg: "the database is busy for now", Err: err}
	}
	return err
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
	d.feed.Close()
	return errors.Join(d.ckpt.close(), d.r.Close(), d.batchStmts.close(), d.w.Close())
}

// inTx runs f in a write transaction and wakes the event feed after a
// commit. Once the file is known to be damaged, it refuses. A transaction
// that fails (a full disk included) leaves nothing: SQLite rolls back
// every statement of it.
func (d *DB) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	return d.inTxThen(ctx, f, nil)
}

// inTxThen is inTx, and runs then (when not nil) on the writing
// connection after the transaction, before another write may have it,
// whether the transaction committed or not.
func (d *DB) inTxThen(ctx context.Context, f func(*sql.Tx) error, then func()) error {
	if e := d.corrupt.Load(); e != nil {
		return e
	}
	if err := d.gate.enter(ctx, true); err != nil {
		return err
	}
	if err := d.writeTx(ctx, f, then); err != nil {
		return err
	}
	if d.feed != nil { // nil while migrating
		d.feed.Wake()
	}
	d.ckpt.wake()
	return nil
}

// writeTx runs f in a write transaction on the writing connection, which
// the caller has entered the gate for, then then; it leaves the gate.
func (d *DB) writeTx(ctx context.Context, f func(*sql.Tx) error, then func()) error {
	defer d.gate.leave()
	// Damage found while this write waited at the gate stops it too.
	if e := d.corrupt.Load(); e != nil {
		return e
	}
	if then != nil {
		defer then()
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return d.fail(err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return d.fail(err)
	}
	if err := tx.Commit(); err != nil {
		// A COMMIT that fails may leave the transaction open on the
		// one writing connection; end it, or every later write fails.
		d.w.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		return d.fail(err)
	}
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
		out      store.Breadcrumb
		replayed bool
	)
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, replayed, err = create(ctx, tx, a, b, idem, now)
		return err
	})
	if err != nil {
		return store.Breadcrumb{}, false, err
	}
	return out, replayed, nil
}

// create stores b, a new record of a, inside tx; with an idempotency key
// already used it returns the first result instead.
func create(ctx context.Context, tx execer, a store.Actor, b store.Breadcrumb, idem store.Idempotency, now time.Time) (store.Breadcrumb, bool, error) {
	if idem.Key != "" {
		var hash, rec string
		err := tx.QueryRowContext(ctx, `SELECT request_hash, record FROM idempotency WHERE owner_id = ? AND agent_id = ? AND key = ?`, a.OwnerID, a.AgentID, idem.Key).Scan(&hash, &rec)
		switch {
		case err == nil:
			if hash != idem.RequestHash {
				return store.Breadcrumb{}, false, store.ErrIdempotencyConflict
			}
			var out store.Breadcrumb
			if err := json.Unmarshal([]byte(rec), &out); err != nil {
				return store.Breadcrumb{}, false, err
			}
			return out, true, nil
		case !errors.Is(err, sql.ErrNoRows):
			return store.Breadcrumb{}, false, err
		}
	}
	if err := insertVersion(ctx, tx, &b, true); err != nil {
		return store.Breadcrumb{}, false, err
	}
	if err := addEvent(ctx, tx, store.Created, &b, now); err != nil {
		return store.Breadcrumb{}, false, err
	}
	if idem.Key != "" {
		rec, _ := json.Marshal(b)
		if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency (owner_id, agent_id, key, request_hash, record, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			a.OwnerID, a.AgentID, idem.Key, idem.RequestHash, string(rec), now.UnixMicro()); err != nil {
			return store.Breadcrumb{}, false, err
		}
	}
	return b, false, nil
}

// CreateBatch implements store.BatchCreator: one transaction for the
// batch. A savepoint per create would let a refused row roll back alone,
// but each costs a statement journal and a flush of the search index, so
// the batch first goes without them; only when SQLite refuses one row
// (and not the database as a whole) is it made again with a savepoint
// per create, the one at fault failing alone.
func (d *DB) CreateBatch(ctx context.Context, cs []store.Creation) ([]store.CreateResult, error) {
	if err := store.CheckBatch(cs); err != nil {
		return nil, err
	}
	now := d.stamp()
	out := make([]store.CreateResult, len(cs))
	recs := make([]store.Breadcrumb, len(cs))
	todo := 0
	for i, c := range cs {
		if recs[i], out[i].Err = store.NewRecord(c.Actor, c.In, now); out[i].Err == nil {
			todo++
		}
	}
	if todo == 0 {
		return out, nil
	}
	run := func(savepoints bool) error {
		return d.inTxThen(ctx, func(sqlTx *sql.Tx) error {
			tx := &stmtCache{Tx: sqlTx, kept: &d.batchStmts}
			// The statements run on a context that is never done: given
			// one that can be, the driver starts a goroutine to watch it
			// for every statement, which cost a small create a good part
			// of its CPU. ctx still ends the batch: it is checked before
			// each create, and database/sql rolls the transaction back
			// when it is done.
			sctx := context.WithoutCancel(ctx)
			for i, c := range cs {
				if out[i].Err != nil {
					continue
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if !savepoints {
					b, replayed, err := create(sctx, tx, c.Actor, recs[i], c.Idem, now)
					if err != nil {
						return err
					}
					out[i].Breadcrumb, out[i].Replayed = b, replayed
					continue
				}
				if _, err := tx.ExecContext(sctx, `SAVEPOINT batch_create`); err != nil {
					return err
				}
				b, replayed, err := create(sctx, tx, c.Actor, recs[i], c.Idem, now)
				if err != nil {
					if _, rerr := tx.ExecContext(sctx, `ROLLBACK TO batch_create`); rerr != nil {
						return rerr
					}
					if failed := d.fail(err); ctx.Err() != nil || wholeFailure(failed) {
						return failed
					}
					out[i].Err = d.fail(err)
				} else {
					out[i].Breadcrumb, out[i].Replayed = b, replayed
				}
				if _, err := tx.ExecContext(sctx, `RELEASE batch_create`); err != nil {
					return err
				}
			}
			return nil
		}, func() {
			// The statements this batch prepared are kept for the next
			// ones, now that the transaction has given the connection
			// back, before another write takes it.
			d.batchStmts.prepareNew(ctx, d.w)
		})
	}
	err := run(false)
	if err != nil && ctx.Err() == nil && !wholeFailure(err) {
		// One row refused: nothing was kept; again, each create alone.
		for i := range out {
			if out[i].Err == nil {
				out[i] = store.CreateResult{}
			}
		}
		err = run(true)
	}
	if err != nil {
		// Nothing of the transaction was kept.
		for i := range out {
			if out[i].Err == nil {
				out[i] = store.CreateResult{Err: err}
			}
		}
	}
	return out, nil
}

// execer runs a transaction's statements: a *sql.Tx, or a *stmtCache
// that prepares each once.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// stmtCache is a transaction whose statements are prepared once each: a
// batch runs the same few statements for every create, and parsing them
// anew took a good part of a small create's CPU. The statements close
// with the transaction.
type stmtCache struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
	// kept, when not nil, holds statements prepared on the database
	// across transactions: a statement of it serves this transaction
	// without being prepared again (the writing connection is the one
	// it was prepared on), and a statement this transaction has to
	// prepare is named to it, to be kept after the commit.
	kept *stmtSet
}

func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if kept := c.kept.get(query); kept != nil {
		st = c.Tx.StmtContext(ctx, kept)
	} else {
		var err error
		if st, err = c.Tx.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		c.kept.want(query)
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = st
	return st, nil
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, query)
	if err != nil {
		// The transaction's own call reports the error in the Row.
		return c.Tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// wholeFailure says err is the database's, not one create's: the
// creates after it would fail the same way.
func wholeFailure(err error) bool {
	return store.IsCode(err, store.CodeCorrupt) || store.IsCode(err, store.CodeInsufficientStorage) || store.IsCode(err, store.CodeUnavailable)
}

// insertVersion writes b as the current row (insert or replace), its tags
// and its history entry.
func insertVersion(ctx context.Context, tx execer, b *store.Breadcrumb, create bool) error {
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
	rec, err := historyRecord(b)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO history (breadcrumb_id, version, record) VALUES (?, ?, ?)`, b.ID, b.Version, rec)
	return err
}

// historyRecord is b's JSON form, as history keeps it. b's context is
// canonical JSON already (store.Prepare made it so): it goes in as it
// is, where json.Marshal would check and copy it byte by byte once more,
// which cost a large record much of its write.
func historyRecord(b *store.Breadcrumb) (string, error) {
	if len(b.Context) == 0 {
		rec, err := json.Marshal(b)
		return string(rec), err
	}
	rest := *b
	rest.Context = nil
	rec, err := json.Marshal(&rest)
	if err != nil {
		return "", err
	}
	// The first `,"context":null,` is the field's: the fields before it
	// are strings, in which every quote is escaped.
	const hole = `,"context":null,`
	i := bytes.Index(rec, []byte(hole))
	if i < 0 {
		return "", fmt.Errorf("breadcrumb %s: no context field in its JSON form", b.ID)
	}
	var sb strings.Builder
	sb.Grow(len(rec) + len(b.Context))
	sb.Write(rec[:i])
	sb.WriteString(`,"context":`)
	sb.Write(b.Context)
	sb.Write(rec[i+len(hole)-1:])
	return sb.String(), nil
}

func addEvent(ctx context.Context, tx execer, kind store.EventKind, b *store.Breadcrumb, at time.Time) error {
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
		return b, d.fail(err)
	}
	if access.Expired(&b, d.now()) {
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
	if err != nil || !access.SpendsBudget(a, &b) {
		return b, err
	}
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if b, err = d.get(ctx, tx, a, id, visibleTo); err != nil {
			return err
		}
		if !access.SpendsBudget(a, &b) {
			return nil
		}
		b.Reads++
		if b.Reads < b.MaxReads {
			_, err = tx.ExecContext(ctx, `UPDATE breadcrumbs SET reads = ? WHERE id = ?`, b.Reads, b.ID)
			return err
		}
		// This read uses up the budget: it is served, and the record goes.
		return removeRow(ctx, tx, store.Expired, &b, d.stamp())
	})
	return b, err
}

func deleteRow(ctx context.Context, tx execer, b *store.Breadcrumb, now time.Time) error {
	return removeRow(ctx, tx, store.Deleted, b, now)
}

// removeRow deletes a breadcrumb with an event of kind: deleted, or
// expired when its time or read budget ran out.
func removeRow(ctx context.Context, tx execer, kind store.EventKind, b *store.Breadcrumb, now time.Time) error {
	if err := unindexSearch(ctx, tx, b.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM breadcrumbs WHERE id = ?`, b.ID); err != nil {
		return err
	}
	return addEvent(ctx, tx, kind, b, now)
}

// List implements store.Store.
func (d *DB) List(ctx context.Context, a store.Actor, q store.Query) (store.Page, error) {
	limit, err := query.PageSize(q)
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
			return store.Page{}, &store.Error{Code: store.CodeInvalid, Path: "cursor", Msg: "not a cursor this server gave out"}
		}
		where = append(where, `id < ?`)
		args = append(args, u.String())
	}
	if tags := query.Tags(q.Tags); len(tags) > 0 {
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
		return store.Page{}, d.fail(err)
	}
	defer rows.Close()
	var page store.Page
	for rows.Next() {
		b, err := scan(rows)
		if err != nil {
			return store.Page{}, d.fail(err)
		}
		page.Items = append(page.Items, b)
	}
	if err := rows.Err(); err != nil {
		return store.Page{}, d.fail(err)
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
		return nil, d.fail(err)
	}
	defer rows.Close()
	var out []store.Breadcrumb
	for rows.Next() {
		var rec string
		if err := rows.Scan(&rec); err != nil {
			return nil, d.fail(err)
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
		return nil, d.fail(err)
	}
	if len(out) == 0 {
		return nil, store.ErrNotFound
	}
	return out, nil
}

// Events implements store.Store.
func (d *DB) Events(ctx context.Context, a store.Actor, after int64, sel *store.Selector) iter.Seq2[store.Event, error] {
	return d.feed.Events(ctx, a, after, sel)
}

const eventColumnsE = `e.seq, e.kind, e.breadcrumb_id, e.version, e.tags, e.schema_name, e.at`

// eventContext is the context columns of an events query: the
// breadcrumb's context at the event's version from its history (created
// and updated events only), and whether the breadcrumb is still live and
// unbudgeted (store.Change.ContextOpen; its parameter is now), with the
// joins they need.
const (
	eventContext     = `, json_extract(h.record, '$.context'), b.id IS NOT NULL AND (b.expires_at IS NULL OR b.expires_at > ?) AND b.max_reads = 0`
	eventContextJoin = ` LEFT JOIN history h ON e.kind IN ('created', 'updated') AND h.breadcrumb_id = e.breadcrumb_id AND h.version = e.version` +
		` LEFT JOIN breadcrumbs b ON h.record IS NOT NULL AND b.id = e.breadcrumb_id`
)

// eventsFrom is the FROM clause of an events query, with the history
// join when it reads contexts, and the arguments of the columns.
func (d *DB) eventsFrom(withContext bool) (cols, from string, args []any) {
	if withContext {
		return eventContext, ` FROM events e` + eventContextJoin, []any{d.now().UnixMicro()}
	}
	return ``, ` FROM events e`, nil
}

// backlog reads up to limit events a may see after seq after: a stream's
// backlog, and what a stream that fell behind missed.
func (d *DB) backlog(ctx context.Context, a store.Actor, after int64, limit int, withContext bool) ([]store.Change, error) {
	var out []store.Change
	cols, from, args := d.eventsFrom(withContext)
	err := d.readEvents(ctx, `SELECT `+eventColumnsE+`, e.owner_id, e.visibility, e.created_by`+cols+from+` WHERE e.seq > ? AND (e.owner_id = ? AND (e.visibility != 'private' OR e.created_by = ? OR ?)) ORDER BY e.seq LIMIT ?`,
		append(append(append(args, after), actorArgs(a)...), limit), true, withContext, func(c *store.Change) { out = append(out, *c) })
	return out, err
}

// loadChanges reads up to limit changes of every owner after seq after,
// for the feed's reader, which decides who may see each.
func (d *DB) loadChanges(ctx context.Context, after int64, limit int, withContext bool) ([]store.Change, error) {
	var out []store.Change
	cols, from, args := d.eventsFrom(withContext)
	err := d.readEvents(ctx, `SELECT `+eventColumnsE+`, e.owner_id, e.visibility, e.created_by`+cols+from+` WHERE e.seq > ? ORDER BY e.seq LIMIT ?`,
		append(args, after, limit), true, withContext, func(c *store.Change) { out = append(out, *c) })
	return out, err
}

// contexts sets the context and ContextOpen of the feed's changes cs (a
// few: the feed asks for at most its ContextPage), found by Seq.
func (d *DB) contexts(ctx context.Context, cs []*store.Change) error {
	if len(cs) == 0 {
		return nil
	}
	bySeq := make(map[int64]*store.Change, len(cs))
	cols, from, args := d.eventsFrom(true)
	marks := strings.Repeat(",?", len(cs))[1:]
	for _, c := range cs {
		bySeq[c.Seq] = c
		args = append(args, c.Seq)
	}
	return d.readEvents(ctx, `SELECT `+eventColumnsE+cols+from+` WHERE e.seq IN (`+marks+`)`, args, false, true,
		func(r *store.Change) {
			if c := bySeq[r.Seq]; c != nil {
				c.Context, c.ContextOpen = r.Context, r.ContextOpen
			}
		})
}

// readEvents runs an events query whose columns are eventColumns and,
// with who, owner_id, visibility and created_by, and with withContext the
// context (eventContext).
func (d *DB) readEvents(ctx context.Context, query string, args []any, who, withContext bool, each func(*store.Change)) error {
	rows, err := d.r.QueryContext(ctx, query, args...)
	if err != nil {
		return d.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c          store.Change
			kind, tags string
			vis        string
			at         int64
		)
		dest := []any{&c.Seq, &kind, &c.BreadcrumbID, &c.Version, &tags, &c.SchemaName, &at}
		if who {
			dest = append(dest, &c.OwnerID, &vis, &c.CreatedBy)
		}
		var (
			context sql.NullString
			open    sql.NullBool
		)
		if withContext {
			dest = append(dest, &context, &open)
		}
		if err := rows.Scan(dest...); err != nil {
			return d.fail(err)
		}
		if context.Valid {
			c.Context, c.ContextOpen = json.RawMessage(context.String), open.Bool
		}
		c.Kind, c.At, c.Visibility = store.EventKind(kind), time.UnixMicro(at).UTC(), store.Visibility(vis)
		if err := json.Unmarshal([]byte(tags), &c.Tags); err != nil {
			return fmt.Errorf("event %d: tags: %w", c.Seq, err)
		}
		each(&c)
	}
	return d.fail(rows.Err())
}

// LatestSeq implements store.Store.
func (d *DB) LatestSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := d.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&seq)
	return seq, d.fail(err)
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
			if err := removeRow(ctx, tx, store.Expired, &due[i], now.UTC()); err != nil {
				return err
			}
		}
		n = len(due)
		if _, err = tx.ExecContext(ctx, `DELETE FROM idempotency WHERE created_at < ?`, now.Add(-IdempotencyWindow).UnixMicro()); err != nil {
			return err
		}
		if err := notePruned(ctx, tx, EventBacklog); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM events WHERE seq <= (SELECT MAX(seq) FROM events) - ?`, EventBacklog)
		if err != nil {
			return err
		}
		return pruneDeliveries(ctx, tx, now)
	})
	return n, err
}
