package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx runs a read-committed transaction scoped to sc whose every
// round trip is one of f's batches: the first goes with BEGIN and the
// scope, and the one f sends last goes with COMMIT. The webhook queue's
// transactions run several times a second under load, and each round
// trip costs a wake-up of the server and of this process: a claim is
// two round trips, not four.
func (d *DB) pipeTx(ctx context.Context, sc scope, f func(p *txPipe) error) (err error) {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return d.fail(ctx, err)
	}
	// A connection left in a transaction by an error is rolled back here,
	// or closed by the pool on release.
	defer c.Release()
	p := &txPipe{ctx: ctx, c: c, sc: sc}
	defer func() {
		if err != nil && p.begun {
			c.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	if err := f(p); err != nil {
		return d.fail(ctx, err)
	}
	if p.begun && !p.done {
		// f ended without a batch of its own to commit with (one that
		// sent nothing has no transaction to end).
		br, err := p.send(&pgx.Batch{}, true)
		if err != nil {
			return d.fail(ctx, err)
		}
		if err := br.Close(); err != nil {
			return d.fail(ctx, err)
		}
	}
	return nil
}

// The bounds of a pipeTx transaction's statements: a wait on a row lock
// and a statement. The dispatcher settles a group within 10 s; a lock
// held longer than pipeLockTimeout fails the transaction, which is rolled
// back and retried when its leases run out.
const (
	pipeLockTimeout      = 5 * time.Second
	pipeStatementTimeout = 10 * time.Second
)

// txPipe sends a pipeTx transaction's batches.
type txPipe struct {
	ctx         context.Context
	c           *pgxpool.Conn
	sc          scope
	begun, done bool
}

// send sends b, after BEGIN and the scope if it is the transaction's
// first batch, and followed by COMMIT when commit is set. The caller
// reads b's results in order and closes them; with commit, Close reports
// the commit's error, and results read before it are not durable until
// it returns nil.
func (p *txPipe) send(b *pgx.Batch, commit bool) (pgx.BatchResults, error) {
	out := &pgx.Batch{}
	first := !p.begun
	if first {
		out.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
		out.Queue(p.sc.sql(), p.sc.args()...)
		// Bound the waits, lower than the session's bounds unless those
		// are lower already: the batch with COMMIT is not cut by the
		// caller's context (below), so these bounds are what end a wait
		// on another transaction's row lock.
		out.Queue(`SELECT set_config(name, CASE WHEN setting::bigint BETWEEN 1 AND v.ms THEN setting ELSE v.ms::text END, true)
			FROM pg_settings JOIN (VALUES ('lock_timeout', $1::bigint), ('statement_timeout', $2::bigint)) AS v(n, ms) ON v.n = name`,
			pipeLockTimeout.Milliseconds(), pipeStatementTimeout.Milliseconds())
		p.begun = true
	}
	out.QueuedQueries = append(out.QueuedQueries, b.QueuedQueries...)
	if commit {
		out.Queue(`COMMIT`)
		p.done = true
	}
	ctx := p.ctx
	if commit {
		// Once COMMIT is on the wire the server may commit whatever the
		// caller does: a cut connection does not stop it (pgx closes the
		// socket without a cancel request). So the caller waits for the
		// server's answer, bounded by the transaction's timeouts, and is
		// never told of an error for a transaction that was kept.
		ctx = context.WithoutCancel(ctx)
	}
	br := p.c.SendBatch(ctx, out)
	if first {
		for range 3 {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return nil, err
			}
		}
	}
	return br, nil
}
