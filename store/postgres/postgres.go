// Package postgres is the store backend for running several ctxkit servers
// on one PostgreSQL database (github.com/jackc/pgx/v5).
//
// Every statement filters on the actor's owner, and row-level security
// checks it again: each transaction names its owner with SET LOCAL (through
// set_config(..., true)), never for the session, so a pooled connection
// carries nothing from one request to the next. Superusers and roles with
// BYPASSRLS skip the policies; connect as an ordinary role that owns the
// schema (Superuser reports it).
//
// Changes are numbered by a database sequence and published with
// LISTEN/NOTIFY, so an event stream on any replica sees writes made through
// every replica, and resumes from the events table after a reconnect.
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// Channel is the LISTEN/NOTIFY channel changes are published on. A
// notification's payload is {"seq","id","owner","version","kind"}, or
// "*" for changes too many to name each; readers load the changes
// themselves from the events table.
const Channel = "ctxkit_events"

// Advisory lock keys (scoped to the database by PostgreSQL).
const (
	migrateLock = 0x63_74_78_6b_01 // "ctxk" 1: migrations
	eventLock   = 0x63_74_78_6b_02 // "ctxk" 2: drawing an event number
	revokeLock  = 0x63_74_78_6b_03 // "ctxk" 3: drawing a revocation number
	// subscriptionLock (with a hash of the owner and agent as the second
	// key) serializes one agent's subscription creates, so that replicas
	// creating at once never pass store.MaxSubscriptions together.
	subscriptionLock = 0x63_74_78_6b // "ctxk"
)

// pollEvery is how often the event feed's reader looks at the events table,
// while streams are open, even without a notification: a safety net, not
// the delivery path.
const pollEvery = 15 * time.Second

// DB is a store.Store on PostgreSQL.
type DB struct {
	pool   *pgxpool.Pool
	feed   *feed.Feed // serves Events; woken by every commit and notification
	now    func() time.Time
	stop   context.CancelFunc
	listen sync.WaitGroup // the listener and the notifier
	// notes are the notifications of committed changes not yet sent;
	// noteKick wakes the notifier.
	noteMu   sync.Mutex
	notes    []string
	noteKick chan struct{}
}

var _ store.Store = (*DB)(nil)

// Open connects to the database at url (a postgres:// URL or key=value
// string; pool_max_conns and the other pgxpool settings apply), runs the
// migrations it has not run yet under an advisory lock, so replicas may
// start together, and starts listening for changes.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = 16
	}
	// Bound every statement and every open transaction, unless the URL
	// says otherwise: a stuck request must not hold locks for long. A
	// transaction left idle (a stalled server) is ended before a statement
	// waiting on its locks gives up.
	for k, v := range map[string]string{"statement_timeout": "30s", "idle_in_transaction_session_timeout": "15s"} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	var enc string
	if err := pool.QueryRow(ctx, `SHOW server_encoding`).Scan(&enc); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if enc != "UTF8" {
		pool.Close()
		return nil, fmt.Errorf("postgres: the database's encoding is %s; ctxkit needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8')", enc)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	lctx, stop := context.WithCancel(context.Background())
	d := &DB{pool: pool, now: time.Now, stop: stop, noteKick: make(chan struct{}, 1)}
	d.feed = feed.New(feed.Source{Load: d.loadChanges, Contexts: d.contexts, Backlog: d.backlog, Latest: d.LatestSeq}, feed.Options{Poll: pollEvery})
	if err := d.backfillSearch(ctx); err != nil {
		stop()
		d.feed.Close()
		pool.Close()
		return nil, fmt.Errorf("postgres: indexing for search: %w", err)
	}
	ready := make(chan error, 1)
	d.listen.Add(2)
	go d.listenLoop(lctx, cfg.ConnConfig, ready)
	go d.notifyLoop(lctx)
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("postgres: listening for changes: %w", err)
	}
	return d, nil
}

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Migrations may take longer than a request may.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			return err
		}
		// One replica migrates; the others wait here, then find it done.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`); err != nil {
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
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, v).Scan(&done); err != nil {
				return err
			}
			if done {
				continue
			}
			body, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			// No arguments: the simple protocol, which runs several statements.
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())`, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close stops listening and closes the pool.
func (d *DB) Close() error {
	d.stop()
	d.listen.Wait()
	d.feed.Close()
	d.pool.Close()
	return nil
}

// Superuser reports whether the connection's role bypasses row-level
// security (a superuser or a BYPASSRLS role): owner isolation then rests on
// the queries alone.
func (d *DB) Superuser(ctx context.Context) (bool, error) {
	var su bool
	err := d.pool.QueryRow(ctx, `SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&su)
	return su, err
}

// scope is what row-level security lets a transaction see, and whether
// its commit waits for the WAL flush.
type scope struct {
	owner  string
	system bool // maintenance across owners
	queue  bool // a webhook queue transaction: see queue
}

const (
	setScope = `SELECT set_config('ctxkit.owner_id', $1, true), set_config('ctxkit.system', $2, true)`
	// Transaction-local, as the scope: the connection goes back to the
	// pool with the server's setting.
	setQueueScope = setScope + `, set_config('synchronous_commit', 'off', true)`
)

// sql is the statement that sets s for the transaction it runs in (with
// args).
func (s scope) sql() string {
	if s.queue {
		return setQueueScope
	}
	return setScope
}

func (s scope) args() []any {
	sys := "off"
	if s.system {
		sys = "on"
	}
	return []any{s.owner, sys}
}

// inTx runs a read-committed transaction scoped to sc on one pooled
// connection: BEGIN and the scope in one round trip, then f, which reads
// (locking rows as it needs) and returns the writes; the writes and COMMIT
// go in one pipeline, so the event lock a write takes (queueEvents) is
// held only while its events are inserted and the server commits, never
// across a round trip to this process.
func (d *DB) inTx(ctx context.Context, sc scope, f func(c *pgxpool.Conn) (*pgx.Batch, error)) (err error) {
	return d.writeTx(ctx, sc, func(c *pgxpool.Conn, _ *notices) (*pgx.Batch, error) { return f(c) })
}

// notices collects the notifications of a transaction's events
// (queueEvents), sent once it has committed.
type notices struct{ payloads []string }

// writeTx is inTx for transactions that write events: f queues them with
// n, and once the transaction has committed their notifications go to
// the other replicas (notifyLoop).
func (d *DB) writeTx(ctx context.Context, sc scope, f func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error)) (err error) {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return d.fail(ctx, err)
	}
	// A connection left in a transaction by an error is rolled back here,
	// or closed by the pool on release.
	defer c.Release()
	defer func() {
		if err != nil {
			c.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	begin := &pgx.Batch{}
	begin.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	begin.Queue(sc.sql(), sc.args()...)
	if err := c.SendBatch(ctx, begin).Close(); err != nil {
		return d.fail(ctx, err)
	}
	var n notices
	writes, err := f(c, &n)
	if err != nil {
		return d.fail(ctx, err)
	}
	if writes == nil {
		writes = &pgx.Batch{}
	}
	writes.Queue(`COMMIT`)
	if err := c.SendBatch(ctx, writes).Close(); err != nil {
		return d.fail(ctx, err)
	}
	d.notify(n.payloads)
	return nil
}

// fail turns what PostgreSQL refuses into the caller's error: a data
// exception (SQLSTATE class 22; the input checks leave only the context as
// jsonb, such as a number beyond PostgreSQL's numeric range) is invalid
// input; a program limit is too large; a full disk is insufficient
// storage; a database that is busy, unreachable, restarting or gone
// mid-statement (unreachable), a timeout or a deadlock is unavailable
// (retry). Other errors pass through. The caller's own cancellation is
// never the database's fault: with ctx done, err passes through as it is.
func (d *DB) fail(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		class := pe.Code[:2]
		switch {
		case class == "22":
			return &store.Error{Code: store.CodeInvalid, Path: "context", Msg: "PostgreSQL cannot store it: " + pe.Message, Err: err}
		case class == "54":
			return &store.Error{Code: store.CodeTooLarge, Msg: "PostgreSQL cannot store it: " + pe.Message, Err: err}
		case pe.Code == "53100": // disk_full
			return &store.Error{Code: store.CodeInsufficientStorage, Msg: "the server's storage is full (PostgreSQL: " + pe.Message + "); nothing was written", Err: err}
		}
	}
	if unreachable(err) {
		return &store.Error{Code: store.CodeUnavailable, Msg: "the database is unavailable for now: " + unreachableReason(err), Err: err}
	}
	return err
}

// unreachable reports whether err says the database is away for now
// rather than that a statement is wrong: SQLSTATE classes 08 (connection
// exception), 40 (transaction rollback: serialization failure, deadlock),
// 53 (insufficient resources, except a full disk), 57 (operator
// intervention: admin or crash shutdown, cannot connect now, statement
// timeout) and 55P03 (lock not available); a connection that could not be
// made; and a connection lost mid-statement (reset, closed, EOF, a
// network error).
func unreachable(err error) bool {
	var (
		pe *pgconn.PgError
		ce *pgconn.ConnectError
		ne net.Error
	)
	if errors.As(err, &pe) {
		switch class := pe.Code[:2]; {
		case pe.Code == "53100":
			return false
		case class == "08", class == "40", class == "53", class == "57", pe.Code == "55P03":
			return true
		}
		return false
	}
	return errors.As(err, &ce) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &ne)
}

// unreachableReason is what a client is told: PostgreSQL's message, or
// that the connection was lost (the driver's text names addresses).
func unreachableReason(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return "cannot connect"
	}
	return "the connection was lost"
}

// query runs one read statement in a single round trip: the scope and the
// statement go in one pipeline, which PostgreSQL runs as one implicit
// transaction, so the SET LOCAL ends with it.
func (d *DB) query(ctx context.Context, sc scope, sql string, args []any, each func(pgx.Rows) error) error {
	return d.fail(ctx, d.runQuery(ctx, sc, false, sql, args, each))
}

// queryEvents is query for a read of the events table that must not pass
// a number still to commit: it takes the event lock (lockEvents) first.
func (d *DB) queryEvents(ctx context.Context, sc scope, sql string, args []any, each func(pgx.Rows) error) error {
	return d.fail(ctx, d.runQuery(ctx, sc, true, sql, args, each))
}

func (d *DB) runQuery(ctx context.Context, sc scope, lock bool, sql string, args []any, each func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue(sc.sql(), sc.args()...)
	if lock {
		b.Queue(lockEvents, int64(eventLock))
	}
	b.Queue(sql, args...)
	br := d.pool.SendBatch(ctx, b)
	for range len(b.QueuedQueries) - 1 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return err
	}
	for rows.Next() {
		if err := each(rows); err != nil {
			rows.Close()
			br.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		br.Close()
		return err
	}
	return br.Close()
}

const columns = `id, owner_id, title, description, semantic_version, context_text, tags, schema_name, llm_hints,
	visibility, sensitivity, version, checksum, expires_at, max_reads, reads, created_at, created_by,
	updated_at, updated_by, size_bytes`

// writableBy is the WHERE clause for what an actor may change (and list, and
// receive events for); visibleTo adds other owners' public breadcrumbs, for
// reads by id. Both take the actor's owner, agent and curator flag as
// parameters $n, $n+1, $n+2.
func writableBy(n int) string {
	return fmt.Sprintf(`(owner_id = $%d AND (visibility <> 'private' OR created_by = $%d OR $%d::boolean))`, n, n+1, n+2)
}

func visibleTo(n int) string { return `(` + writableBy(n) + ` OR visibility = 'public')` }

func actorArgs(a store.Actor) []any { return []any{a.OwnerID, a.AgentID, a.Curator} }

func scan(row pgx.Row) (store.Breadcrumb, error) {
	var (
		b         store.Breadcrumb
		ctx       string
		hints     *string
		vis, sens string
	)
	err := row.Scan(&b.ID, &b.OwnerID, &b.Title, &b.Description, &b.SemanticVersion, &ctx, &b.Tags, &b.SchemaName, &hints,
		&vis, &sens, &b.Version, &b.Checksum, &b.ExpiresAt, &b.MaxReads, &b.Reads, &b.CreatedAt, &b.CreatedBy,
		&b.UpdatedAt, &b.UpdatedBy, &b.SizeBytes)
	if err != nil {
		return b, err
	}
	b.Context = json.RawMessage(ctx)
	if b.Tags == nil {
		b.Tags = []string{}
	}
	if hints != nil {
		b.LLMHints = json.RawMessage(*hints)
	}
	b.Visibility, b.Sensitivity = store.Visibility(vis), store.Sensitivity(sens)
	if b.ExpiresAt != nil {
		t := b.ExpiresAt.UTC()
		b.ExpiresAt = &t
	}
	b.CreatedAt, b.UpdatedAt = b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	return b, nil
}

// values are the parameters of insertRow and updateRow, in columns order;
// $6, the context text, is also cast to the jsonb column; $22 is the
// search vector.
func values(b *store.Breadcrumb, vector string) []any {
	var hints *string
	if b.LLMHints != nil {
		h := string(b.LLMHints)
		hints = &h
	}
	return []any{b.ID, b.OwnerID, b.Title, b.Description, b.SemanticVersion, string(b.Context), b.Tags,
		b.SchemaName, hints, string(b.Visibility), string(b.Sensitivity), b.Version, b.Checksum, b.ExpiresAt,
		b.MaxReads, b.Reads, b.CreatedAt, b.CreatedBy, b.UpdatedAt, b.UpdatedBy, b.SizeBytes, vector}
}

const (
	insertRow = `INSERT INTO breadcrumbs (` + columns + `, context, search)
	VALUES ($1, $2, $3, $4, $5, $6::text, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $6::text::jsonb, $22::tsvector)`
	updateRow = `UPDATE breadcrumbs SET title = $3, description = $4, semantic_version = $5, context_text = $6::text,
		context = $6::text::jsonb, tags = $7, schema_name = $8, llm_hints = $9, visibility = $10, sensitivity = $11,
		version = $12, checksum = $13, expires_at = $14, max_reads = $15, reads = $16, updated_at = $19, updated_by = $20,
		size_bytes = $21, search = $22::tsvector
	WHERE id = $1 AND owner_id = $2 AND created_at = $17 AND created_by = $18`
)

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
	err = d.writeTx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error) {
		if idem.Key != "" {
			// Two requests with one key wait for each other here.
			if _, err := c.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, a.OwnerID+"\x1f"+a.AgentID+"\x1f"+idem.Key); err != nil {
				return nil, err
			}
			var hash, rec string
			err := c.QueryRow(ctx, `SELECT request_hash, record FROM idempotency WHERE owner_id = $1 AND agent_id = $2 AND key = $3`,
				a.OwnerID, a.AgentID, idem.Key).Scan(&hash, &rec)
			switch {
			case err == nil:
				if hash != idem.RequestHash {
					return nil, store.ErrIdempotencyConflict
				}
				replayed = true
				return nil, json.Unmarshal([]byte(rec), &out)
			case !errors.Is(err, pgx.ErrNoRows):
				return nil, err
			}
		}
		batch := &pgx.Batch{}
		if err := queueVersion(batch, &b, true); err != nil {
			return nil, err
		}
		if idem.Key != "" {
			rec, _ := json.Marshal(b)
			batch.Queue(`INSERT INTO idempotency (owner_id, agent_id, key, request_hash, record, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
				a.OwnerID, a.AgentID, idem.Key, idem.RequestHash, string(rec), now)
		}
		queueEvents(batch, n, store.Created, now, &b)
		return batch, nil
	})
	if err != nil {
		return store.Breadcrumb{}, false, err
	}
	if !replayed {
		d.feed.WakeFor(a.OwnerID)
	}
	return out, replayed, nil
}

// CreateBatch implements store.BatchCreator: one transaction whose reads
// (the idempotency keys) come first and whose writes and COMMIT go in one
// pipeline, the scope set anew wherever the owner changes. A pipeline
// stops at its first failing statement, so when the transaction fails for
// one create (a context PostgreSQL cannot store, say) and not for the
// database as a whole, the creates are made again one by one: the one at
// fault fails alone.
func (d *DB) CreateBatch(ctx context.Context, cs []store.Creation) ([]store.CreateResult, error) {
	if err := store.CheckBatch(cs); err != nil {
		return nil, err
	}
	now := d.stamp()
	out := make([]store.CreateResult, len(cs))
	recs := make([]store.Breadcrumb, len(cs))
	var todo []int
	for i, c := range cs {
		if recs[i], out[i].Err = store.NewRecord(c.Actor, c.In, now); out[i].Err == nil {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	type key struct{ owner, agent, key string }
	first := map[key]int{} // a key's first create in the batch
	dup := map[int]int{}   // a later create with the key: the index of the first
	err := d.writeTx(ctx, scope{owner: cs[todo[0]].Actor.OwnerID}, func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error) {
		owner := cs[todo[0]].Actor.OwnerID
		var stored []int
		for _, i := range todo {
			a, idem := cs[i].Actor, cs[i].Idem
			if idem.Key == "" {
				stored = append(stored, i)
				continue
			}
			k := key{a.OwnerID, a.AgentID, idem.Key}
			if f, ok := first[k]; ok {
				dup[i] = f
				continue
			}
			first[k] = i
			if a.OwnerID != owner {
				if _, err := c.Exec(ctx, setScope, scope{owner: a.OwnerID}.args()...); err != nil {
					return nil, err
				}
				owner = a.OwnerID
			}
			if _, err := c.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, a.OwnerID+"\x1f"+a.AgentID+"\x1f"+idem.Key); err != nil {
				return nil, err
			}
			var hash, rec string
			err := c.QueryRow(ctx, `SELECT request_hash, record FROM idempotency WHERE owner_id = $1 AND agent_id = $2 AND key = $3`,
				a.OwnerID, a.AgentID, idem.Key).Scan(&hash, &rec)
			switch {
			case err == nil:
				if hash != idem.RequestHash {
					out[i].Err = store.ErrIdempotencyConflict
				} else if err := json.Unmarshal([]byte(rec), &out[i].Breadcrumb); err != nil {
					out[i].Err = err
				} else {
					out[i].Replayed = true
				}
			case errors.Is(err, pgx.ErrNoRows):
				stored = append(stored, i)
			default:
				return nil, err
			}
		}
		batch := &pgx.Batch{}
		// Rows first, then the events, each run of one owner's under
		// that owner's scope: the event lock is taken as late as it
		// can be.
		runs := func(each func(i int) error) error {
			for j, i := range stored {
				if j == 0 || cs[i].Actor.OwnerID != cs[stored[j-1]].Actor.OwnerID {
					batch.Queue(setScope, scope{owner: cs[i].Actor.OwnerID}.args()...)
				}
				if err := each(i); err != nil {
					return err
				}
			}
			return nil
		}
		err := runs(func(i int) error {
			b := &recs[i]
			if err := queueVersion(batch, b, true); err != nil {
				return err
			}
			if idem := cs[i].Idem; idem.Key != "" {
				rec, _ := json.Marshal(b)
				batch.Queue(`INSERT INTO idempotency (owner_id, agent_id, key, request_hash, record, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
					b.OwnerID, b.CreatedBy, idem.Key, idem.RequestHash, string(rec), now)
			}
			out[i].Breadcrumb = *b
			return nil
		})
		if err != nil {
			return nil, err
		}
		runs(func(i int) error {
			queueEvents(batch, n, store.Created, now, &recs[i])
			return nil
		})
		return batch, nil
	})
	switch {
	case err == nil:
		for i, f := range dup {
			// A key used again within the batch: a replay of the first
			// create with it, as a second Create would be.
			switch {
			case out[f].Err != nil:
				out[i].Err = out[f].Err
			case cs[i].Idem.RequestHash != cs[f].Idem.RequestHash:
				out[i].Err = store.ErrIdempotencyConflict
			default:
				out[i].Breadcrumb, out[i].Replayed = out[f].Breadcrumb, true
			}
		}
		woken := map[string]bool{}
		for _, i := range todo {
			if o := cs[i].Actor.OwnerID; !woken[o] && !out[i].Replayed && out[i].Err == nil {
				woken[o] = true
				d.feed.WakeFor(o)
			}
		}
	case ctx.Err() != nil || store.IsCode(err, store.CodeUnavailable) || store.IsCode(err, store.CodeInsufficientStorage):
		for _, i := range todo {
			out[i] = store.CreateResult{Err: err}
		}
	default:
		// One create may be at fault: each on its own.
		for _, i := range todo {
			out[i] = store.CreateResult{}
			out[i].Breadcrumb, out[i].Replayed, out[i].Err = d.Create(ctx, cs[i].Actor, cs[i].In, cs[i].Idem)
		}
	}
	return out, nil
}

// queueVersion queues b as the current row (a new one, or an update of
// the version before it), its tags and its history entry.
func queueVersion(batch *pgx.Batch, b *store.Breadcrumb, create bool) error {
	rec, err := json.Marshal(b)
	if err != nil {
		return err
	}
	vector, terms, doc := searchVector(b)
	if create {
		batch.Queue(insertRow, values(b, vector)...)
	} else {
		batch.Queue(updateRow, values(b, vector)...).Exec(func(ct pgconn.CommandTag) error {
			if ct.RowsAffected() != 1 {
				return fmt.Errorf("breadcrumb %s: update changed %d rows", b.ID, ct.RowsAffected())
			}
			return nil
		})
		batch.Queue(`DELETE FROM breadcrumb_tags WHERE breadcrumb_id = $1 AND owner_id = $2`, b.ID, b.OwnerID)
	}
	batch.Queue(`INSERT INTO breadcrumb_tags (owner_id, tag, breadcrumb_id) SELECT $1, t, $2 FROM unnest($3::text[]) AS t`, b.OwnerID, b.ID, b.Tags)
	queueSearch(batch, b, terms, doc, create)
	batch.Queue(`INSERT INTO history (breadcrumb_id, version, owner_id, record) VALUES ($1, $2, $3, $4)`, b.ID, b.Version, b.OwnerID, string(rec))
	return nil
}

// queueEvents queues changes: it takes the event lock, shared, draws the
// numbers and stores the events; their notifications go into n, sent to
// every replica once the transaction has committed.
//
// Writers hold the lock shared from the events' insert to the commit, so
// their commits (and the WAL flushes they wait for) overlap, and may end
// in another order than their numbers. Readers of the events table take
// it exclusively (lockEvents): none reads while a writer that drew a
// number has not ended, so a reader never passes a number that commits
// later. The lock is taken after the rows, tags, search terms and history
// are written, so a reader waits only for inserts of events and commits.
// The notifications are not sent in the transaction: NOTIFY makes every
// committing transaction that sends one wait on one lock, held through
// its commit's flush, which would serialize the writers again.
func queueEvents(batch *pgx.Batch, n *notices, kind store.EventKind, at time.Time, bs ...*store.Breadcrumb) {
	batch.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, int64(eventLock))
	for _, b := range bs {
		batch.Queue(`INSERT INTO events (seq, kind, breadcrumb_id, owner_id, version, visibility, created_by, tags, schema_name, at)
			VALUES (nextval('event_seq'), $1, $2, $3, $4, $5, $6, $7, $8, $9)
			RETURNING json_build_object('seq', seq, 'id', breadcrumb_id, 'owner', owner_id, 'version', version, 'kind', kind)::text`,
			string(kind), b.ID, b.OwnerID, b.Version, string(b.Visibility), b.CreatedBy, b.Tags, b.SchemaName, at).QueryRow(func(row pgx.Row) error {
			var p string
			if err := row.Scan(&p); err != nil {
				return err
			}
			n.payloads = append(n.payloads, p)
			return nil
		})
	}
}

// lockEvents is the first statement of a read of the events table that
// must not pass a number still to commit: it waits for the writers that
// hold the event lock (queueEvents) and keeps new ones from taking it
// until the read's transaction ends.
const lockEvents = `SELECT pg_advisory_xact_lock($1)`

// maxNotes bounds the notifications waiting to be sent; past it they are
// replaced by one, wakeAll, that wakes every reader of the other
// replicas.
const maxNotes = 10_000

// wakeAll is the payload of a notification that names no change: every
// reader looks for what it has not read (listenOn wakes all for a
// payload that is not a change's JSON).
const wakeAll = "*"

// notify queues the notifications of committed changes for notifyLoop.
func (d *DB) notify(payloads []string) {
	if len(payloads) == 0 {
		return
	}
	d.noteMu.Lock()
	if len(d.notes)+len(payloads) <= maxNotes {
		d.notes = append(d.notes, payloads...)
	} else {
		// Too many to send each: one that wakes every reader
		// stands for them all.
		d.notes = []string{wakeAll}
	}
	d.noteMu.Unlock()
	select {
	case d.noteKick <- struct{}{}:
	default:
	}
}

// notifyLoop sends the queued notifications, all that are waiting in one
// transaction, until ctx ends. Its commit does not wait for the WAL
// flush: a notification is a wake-up, not data, and is not worth one.
func (d *DB) notifyLoop(ctx context.Context) {
	defer d.listen.Done()
	for {
		stopping := false
		select {
		case <-ctx.Done():
			stopping = true
		case <-d.noteKick:
		}
		d.noteMu.Lock()
		notes := d.notes
		d.notes = nil
		d.noteMu.Unlock()
		if len(notes) > 0 {
			// Sent on Close too: the changes committed before it
			// are the other replicas' to hear of now, not at their
			// poll. Not past noteSend, should the server not answer.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noteSend)
			b := &pgx.Batch{}
			b.Queue(`BEGIN`)
			b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
			b.Queue(`SELECT pg_notify('`+Channel+`', p) FROM unnest($1::text[]) WITH ORDINALITY AS n(p, i) ORDER BY i`, notes)
			b.Queue(`COMMIT`)
			// A notification that cannot be sent is lost: the readers
			// of the other replicas find its change with the next one,
			// or their poll.
			d.pool.SendBatch(sctx, b).Close()
			cancel()
		}
		if stopping {
			return
		}
	}
}

// noteSend bounds how long notifyLoop waits to send notifications.
const noteSend = 5 * time.Second

// get loads a breadcrumb the actor may see (where: writableBy or visibleTo
// at $2): in one round trip, or with c, inside a transaction and locked
// (SELECT ... FOR UPDATE).
func (d *DB) get(ctx context.Context, c *pgxpool.Conn, a store.Actor, id string, where func(int) string) (store.Breadcrumb, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Breadcrumb{}, store.ErrNotFound
	}
	args := append([]any{u.String()}, actorArgs(a)...)
	q := `SELECT ` + columns + ` FROM breadcrumbs WHERE id = $1 AND ` + where(2)
	var (
		b     store.Breadcrumb
		found bool
	)
	if c != nil {
		b, err = scan(c.QueryRow(ctx, q+` FOR UPDATE`, args...))
		found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	} else {
		err = d.query(ctx, scope{owner: a.OwnerID}, q, args, func(rows pgx.Rows) error {
			var err error
			b, err = scan(rows)
			found = err == nil
			return err
		})
	}
	if err != nil {
		return store.Breadcrumb{}, err
	}
	if !found || access.Expired(&b, d.now()) {
		return store.Breadcrumb{}, store.ErrNotFound
	}
	return b, nil
}

// Get implements store.Store.
func (d *DB) Get(ctx context.Context, a store.Actor, id string) (store.Breadcrumb, error) {
	return d.get(ctx, nil, a, id, visibleTo)
}

// Read implements store.Store.
func (d *DB) Read(ctx context.Context, a store.Actor, id string) (store.Breadcrumb, error) {
	// Most breadcrumbs have no read budget, and another owner's read of a
	// public one spends none: one round trip, no row lock.
	b, err := d.get(ctx, nil, a, id, visibleTo)
	if err != nil || !access.SpendsBudget(a, &b) {
		return b, err
	}
	owner := b.OwnerID
	deleted := false
	err = d.writeTx(ctx, scope{owner: owner}, func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error) {
		var err error
		if b, err = d.get(ctx, c, a, id, visibleTo); err != nil {
			return nil, err
		}
		if !access.SpendsBudget(a, &b) {
			return nil, nil
		}
		b.Reads++
		batch := &pgx.Batch{}
		if b.Reads < b.MaxReads {
			batch.Queue(`UPDATE breadcrumbs SET reads = $1 WHERE id = $2 AND owner_id = $3`, b.Reads, b.ID, owner)
			return batch, nil
		}
		// This read uses up the budget: it is served, and the record goes.
		deleted = true
		queueRemove(batch, n, store.Expired, d.stamp(), &b)
		return batch, nil
	})
	if err != nil {
		return store.Breadcrumb{}, err
	}
	if deleted {
		d.feed.WakeFor(owner)
	}
	return b, nil
}

// queueDelete queues the deletion of breadcrumbs (their tags go with them)
// and their events.
func queueDelete(batch *pgx.Batch, n *notices, now time.Time, bs ...*store.Breadcrumb) {
	queueRemove(batch, n, store.Deleted, now, bs...)
}

// queueRemove is queueDelete with events of kind: deleted, or expired
// when the breadcrumbs' time or read budget ran out.
func queueRemove(batch *pgx.Batch, n *notices, kind store.EventKind, now time.Time, bs ...*store.Breadcrumb) {
	for _, b := range bs {
		batch.Queue(`DELETE FROM breadcrumbs WHERE id = $1 AND owner_id = $2`, b.ID, b.OwnerID)
	}
	queueEvents(batch, n, kind, now, bs...)
}

// List implements store.Store.
func (d *DB) List(ctx context.Context, a store.Actor, q store.Query) (store.Page, error) {
	limit, err := query.PageSize(q)
	if err != nil {
		return store.Page{}, err
	}
	// Stored text never holds NUL or invalid UTF-8 (PostgreSQL refuses
	// both), so a filter holding them matches nothing.
	for _, t := range append([]string{q.SchemaName}, q.Tags...) {
		if !utf8.ValidString(t) || strings.IndexByte(t, 0) >= 0 {
			return store.Page{}, nil
		}
	}
	args := append(actorArgs(a), d.now())
	where := []string{writableBy(1), `(expires_at IS NULL OR expires_at > $4)`, `(max_reads = 0 OR reads < max_reads)`}
	if q.SchemaName != "" {
		args = append(args, q.SchemaName)
		where = append(where, fmt.Sprintf(`schema_name = $%d`, len(args)))
	}
	if q.Cursor != "" {
		u, err := uuid.Parse(q.Cursor)
		if err != nil {
			return store.Page{}, &store.Error{Code: store.CodeInvalid, Path: "cursor", Msg: "not a cursor this server gave out"}
		}
		args = append(args, u.String())
		where = append(where, fmt.Sprintf(`id < $%d::uuid`, len(args)))
	}
	if tags := query.Tags(q.Tags); len(tags) > 0 {
		args = append(args, tags, len(tags))
		where = append(where, fmt.Sprintf(`id IN (SELECT breadcrumb_id FROM breadcrumb_tags WHERE owner_id = $1 AND tag = ANY($%d::text[])
			GROUP BY breadcrumb_id HAVING count(*) = $%d)`, len(args)-1, len(args)))
	}
	args = append(args, limit+1)
	sql := `SELECT ` + columns + ` FROM breadcrumbs WHERE ` + strings.Join(where, ` AND `) +
		fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, len(args))
	var page store.Page
	err = d.query(ctx, scope{owner: a.OwnerID}, sql, args, func(rows pgx.Rows) error {
		b, err := scan(rows)
		page.Items = append(page.Items, b)
		return err
	})
	if err != nil {
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
	err := d.writeTx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error) {
		cur, err := d.get(ctx, c, a, id, writableBy)
		if err != nil {
			return nil, err
		}
		if b, err = store.Revise(a, cur, expectedVersion, m, d.stamp()); err != nil {
			return nil, err
		}
		batch := &pgx.Batch{}
		if err := queueVersion(batch, &b, false); err != nil {
			return nil, err
		}
		queueEvents(batch, n, store.Updated, b.UpdatedAt, &b)
		return batch, nil
	})
	if err != nil {
		return store.Breadcrumb{}, err
	}
	d.feed.WakeFor(a.OwnerID)
	return b, nil
}

// Delete implements store.Store.
func (d *DB) Delete(ctx context.Context, a store.Actor, id string) error {
	err := d.writeTx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error) {
		b, err := d.get(ctx, c, a, id, writableBy)
		if err != nil {
			return nil, err
		}
		batch := &pgx.Batch{}
		queueDelete(batch, n, d.stamp(), &b)
		return batch, nil
	})
	if err == nil {
		d.feed.WakeFor(a.OwnerID)
	}
	return err
}

// History implements store.Store, with the same rules as every backend:
// only the owner's agents, each version only if they could have seen it,
// and after a delete or expiry only the owner's curators.
func (d *DB) History(ctx context.Context, a store.Actor, id string) ([]store.Breadcrumb, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, store.ErrNotFound
	}
	if _, err := d.get(ctx, nil, a, id, writableBy); err != nil {
		if !errors.Is(err, store.ErrNotFound) || !a.Curator {
			return nil, err
		}
	}
	var out []store.Breadcrumb
	err = d.query(ctx, scope{owner: a.OwnerID}, `SELECT record FROM history WHERE breadcrumb_id = $1 AND owner_id = $2 ORDER BY version DESC`,
		[]any{u.String(), a.OwnerID}, func(rows pgx.Rows) error {
			var rec string
			if err := rows.Scan(&rec); err != nil {
				return err
			}
			var b store.Breadcrumb
			if err := json.Unmarshal([]byte(rec), &b); err != nil {
				return err
			}
			if store.Writable(a, &b) {
				out = append(out, b)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, store.ErrNotFound
	}
	return out, nil
}

// Events implements store.Store: the backlog from the events table, then
// what the feed's reader loads after a notification (from any replica) or
// this replica's own commit says there is something new.
func (d *DB) Events(ctx context.Context, a store.Actor, after int64, sel *store.Selector) iter.Seq2[store.Event, error] {
	return d.feed.Events(ctx, a, after, sel)
}

const eventColumns = `e.seq, e.kind, e.breadcrumb_id, e.version, e.tags, e.schema_name, e.at`

// eventsFrom is the FROM clause of an events query (the table as e) and,
// with withContext, the columns that read the breadcrumb's context at
// the event's version from its history (created and updated events only)
// and whether the breadcrumb is still live and unbudgeted
// (store.Change.ContextOpen), which compares expires_at with parameter
// $now, given by the caller as d.now().
func eventsFrom(withContext bool, now int) (cols, from string) {
	if withContext {
		return fmt.Sprintf(`, h.record::json -> 'context',
			b.id IS NOT NULL AND (b.expires_at IS NULL OR b.expires_at > $%d) AND b.max_reads = 0`, now),
			` FROM events e LEFT JOIN history h
			ON e.kind IN ('created', 'updated') AND h.breadcrumb_id = e.breadcrumb_id AND h.version = e.version
			LEFT JOIN breadcrumbs b ON h.record IS NOT NULL AND b.id = e.breadcrumb_id`
	}
	return ``, ` FROM events e`
}

// backlog reads up to limit events a may see after seq after: a stream's
// backlog, and what a stream that fell behind missed. It reads under the
// event lock, so it never passes a number still to commit.
func (d *DB) backlog(ctx context.Context, a store.Actor, after int64, limit int, withContext bool) ([]store.Change, error) {
	return d.actorChanges(ctx, a, after, -1, limit, withContext)
}

// actorChanges reads up to limit events a may see after seq after and,
// when mark >= 0, at or below mark. A read bounded by a mark that
// LatestSeq answered takes no event lock: LatestSeq read it under the
// lock, when every writer that had drawn a number had ended, and a number
// drawn since is above it (the sequence only grows), so every event at or
// below the mark has committed or never will. An unbounded read takes the
// lock, as it may reach numbers still to commit.
func (d *DB) actorChanges(ctx context.Context, a store.Actor, after, mark int64, limit int, withContext bool) ([]store.Change, error) {
	return d.changes(ctx, a, after, mark, limit, withContext, nil)
}

// changes is actorChanges; with pruned (and a mark), the read starts past
// the pruned mark too, read by the same statement, and sets *pruned to
// it (0: none pruned).
func (d *DB) changes(ctx context.Context, a store.Actor, after, mark int64, limit int, withContext bool, pruned *int64) ([]store.Change, error) {
	var out []store.Change
	args := append(append([]any{after}, actorArgs(a)...), limit)
	bound := ``
	if mark >= 0 {
		args = append(args, mark)
		bound = fmt.Sprintf(` AND e.seq <= $%d`, len(args))
	}
	cols, from := eventsFrom(withContext, len(args)+1)
	if withContext {
		args = append(args, d.now())
	}
	past := `$1`
	if pruned != nil {
		past = `GREATEST($1, p.through)`
	}
	sql := `SELECT ` + eventColumns + `, e.owner_id, e.visibility, e.created_by` + cols + from + `
		WHERE e.seq > ` + past + bound + ` AND (e.owner_id = $2 AND (e.visibility <> 'private' OR e.created_by = $3 OR $4::boolean))
		ORDER BY e.seq LIMIT $5`
	each := func(rows pgx.Rows) error {
		c, err := scanEvent(rows, true, withContext)
		out = append(out, c)
		return err
	}
	if pruned != nil {
		// The mark's row stays when no event is past it (LEFT JOIN).
		// Materialized, the mark is a value each lookup of the events'
		// index starts from; inlined, the planner may read them all up
		// to the bound.
		sql = `WITH p AS MATERIALIZED (SELECT COALESCE((SELECT through FROM events_pruned WHERE id = 1), 0) AS through)
			SELECT p.through, c.* FROM p LEFT JOIN LATERAL (` + sql + `) c ON true ORDER BY c.seq`
		each = func(rows pgx.Rows) error {
			if rows.RawValues()[1] == nil {
				skip := make([]any, len(rows.FieldDescriptions()))
				skip[0] = pruned
				return rows.Scan(skip...)
			}
			c, err := scanEvent(rows, true, withContext, pruned)
			out = append(out, c)
			return err
		}
	}
	err := d.fail(ctx, d.runQuery(ctx, scope{owner: a.OwnerID}, mark < 0, sql, args, each))
	return out, err
}

// loadChanges reads up to limit changes of every owner after seq after,
// for the feed's reader, which decides who may see each: it reads across
// owners, as maintenance does, under the event lock.
func (d *DB) loadChanges(ctx context.Context, after int64, limit int, withContext bool) ([]store.Change, error) {
	var out []store.Change
	args := []any{after, limit}
	cols, from := eventsFrom(withContext, 3)
	if withContext {
		args = append(args, d.now())
	}
	err := d.queryEvents(ctx, scope{system: true}, `SELECT `+eventColumns+`, e.owner_id, e.visibility, e.created_by`+cols+from+`
		WHERE e.seq > $1 ORDER BY e.seq LIMIT $2`, args, func(rows pgx.Rows) error {
		c, err := scanEvent(rows, true, withContext)
		out = append(out, c)
		return err
	})
	return out, err
}

// contexts sets the context and ContextOpen of the feed's changes cs (a
// few: the feed asks for at most its ContextPage), found by Seq; it reads
// across owners, as loadChanges does.
func (d *DB) contexts(ctx context.Context, cs []*store.Change) error {
	if len(cs) == 0 {
		return nil
	}
	bySeq := make(map[int64]*store.Change, len(cs))
	seqs := make([]int64, 0, len(cs))
	for _, c := range cs {
		bySeq[c.Seq] = c
		seqs = append(seqs, c.Seq)
	}
	cols, from := eventsFrom(true, 2)
	return d.query(ctx, scope{system: true}, `SELECT `+eventColumns+cols+from+`
		WHERE e.seq = ANY($1)`, []any{seqs, d.now()}, func(rows pgx.Rows) error {
		r, err := scanEvent(rows, false, true)
		if err != nil {
			return err
		}
		if c := bySeq[r.Seq]; c != nil {
			c.Context, c.ContextOpen = r.Context, r.ContextOpen
		}
		return nil
	})
}

// scanEvent reads a row of eventColumns and, with who, owner_id,
// visibility and created_by, and with withContext the context; the row's
// first columns, before these, go to lead.
func scanEvent(rows pgx.Rows, who, withContext bool, lead ...any) (store.Change, error) {
	var (
		c         store.Change
		kind, vis string
		doc       []byte
		open      *bool
	)
	dest := append(lead, &c.Seq, &kind, &c.BreadcrumbID, &c.Version, &c.Tags, &c.SchemaName, &c.At)
	if who {
		dest = append(dest, &c.OwnerID, &vis, &c.CreatedBy)
	}
	if withContext {
		dest = append(dest, &doc, &open)
	}
	if err := rows.Scan(dest...); err != nil {
		return c, err
	}
	if doc != nil {
		c.Context, c.ContextOpen = json.RawMessage(doc), open != nil && *open
	}
	c.Kind, c.At, c.Visibility = store.EventKind(kind), c.At.UTC(), store.Visibility(vis)
	if c.Tags == nil {
		c.Tags = []string{}
	}
	return c, nil
}

// LatestSeq implements store.Store. It reads the newest committed event,
// not the sequence, whose numbers are drawn before a commit, under the
// event lock: no event numbered below it commits later.
func (d *DB) LatestSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := d.queryEvents(ctx, scope{system: true}, `SELECT COALESCE(MAX(seq), 0) FROM events`, nil, func(rows pgx.Rows) error {
		return rows.Scan(&seq)
	})
	return seq, err
}

// expireBatch is how many expired breadcrumbs one transaction deletes.
const expireBatch = 500

// Expire implements store.Store: expired breadcrumbs go in transactions of
// at most 500 rows, each row locked with SKIP LOCKED so replicas expiring
// at once share the work instead of waiting on (or deadlocking with) each
// other. Then, in a transaction of its own, it forgets idempotency keys
// older than a day and trims the event backlog.
func (d *DB) Expire(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		var due []store.Breadcrumb
		err := d.writeTx(ctx, scope{system: true}, func(c *pgxpool.Conn, n *notices) (*pgx.Batch, error) {
			rows, err := c.Query(ctx, `SELECT `+columns+` FROM breadcrumbs WHERE expires_at <= $1
				ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, now, expireBatch)
			if err != nil {
				return nil, err
			}
			if due, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Breadcrumb, error) { return scan(r) }); err != nil {
				return nil, err
			}
			if len(due) == 0 {
				return nil, nil
			}
			batch := &pgx.Batch{}
			ptrs := make([]*store.Breadcrumb, len(due))
			for i := range due {
				ptrs[i] = &due[i]
			}
			queueRemove(batch, n, store.Expired, now.UTC(), ptrs...)
			return batch, nil
		})
		if err != nil {
			return total, err
		}
		total += len(due)
		for i := range due {
			d.feed.WakeFor(due[i].OwnerID)
		}
		if len(due) < expireBatch {
			break
		}
	}
	err := d.inTx(ctx, scope{system: true}, func(*pgxpool.Conn) (*pgx.Batch, error) {
		batch := &pgx.Batch{}
		batch.Queue(`DELETE FROM idempotency WHERE created_at < $1`, now.Add(-IdempotencyWindow))
		queuePrune(batch, now, EventBacklog)
		// What the note says, not MAX(seq) again: each statement reads
		// its own snapshot, and an event committed since the note would
		// move the bound past it, pruning events no webhook counts.
		batch.Queue(`DELETE FROM events WHERE seq <= (SELECT through FROM events_pruned WHERE id = 1)`)
		return batch, nil
	})
	return total, err
}

// listenPing is how long the listening connection may stay silent before
// it is pinged; a connection that does not answer is replaced.
var listenPing = 30 * time.Second

// listenLoop holds one connection that LISTENs for changes from every
// replica and wakes the event readers of the owner each one names. When the
// connection drops it reconnects and wakes every reader, which then reads
// whatever it missed from the events table. The first attempt's result
// goes to ready.
func (d *DB) listenLoop(ctx context.Context, cfg *pgx.ConnConfig, ready chan<- error) {
	defer d.listen.Done()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			if _, err = conn.Exec(ctx, `LISTEN `+Channel); err != nil {
				conn.Close(context.WithoutCancel(ctx))
			}
		}
		if ready != nil {
			ready <- err
			ready = nil
			if err != nil {
				return
			}
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			d.feed.Wake() // anything committed while not listening
			d.listenOn(ctx, conn)
			conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return
		}
		d.feed.Wake()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenOn waits for notifications on conn until it fails.
func (d *DB) listenOn(ctx context.Context, conn *pgx.Conn) {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			var p struct {
				Owner string `json:"owner"`
			}
			if json.Unmarshal([]byte(n.Payload), &p) == nil {
				d.feed.WakeFor(p.Owner)
			} else {
				d.feed.Wake()
			}
		case ctx.Err() != nil || conn.IsClosed():
			return
		default:
			// Silence: make sure the connection is still there.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
		}
	}
}
