package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// checkpointer copies the log's committed pages back into the database
// file (a passive checkpoint) from a connection of its own, after commits
// and at most every checkpointGap. SQLite's default is for the commit that
// takes the log past 1,000 pages to checkpoint it: that transaction then
// held the single writing connection for the copy and its flushes
// (10–20 ms here), and every write behind it waited. A checkpoint of
// another connection runs beside the writer; but under a steady flow of
// writes it never catches up (the writer adds pages while it copies), and
// the log starts over only once every page of it is copied. So when the
// log has grown past restartPages, the checkpointer takes the gate (as
// the queue does: writes go first) and copies the few pages written
// since, which lets the next write start the log over. Should it fall
// behind (a reader holding an old snapshot keeps any checkpoint from
// finishing), the writer still checkpoints past walBackstop pages.
type checkpointer struct {
	db     *sql.DB
	gate   *writeGate
	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// ran counts the checkpoints made, restarts those made under the
	// gate (for tests).
	ran, restarts atomic.Int64
}

// checkpointGap is the least time between two checkpoints: a stream of
// commits is checkpointed in steps of this much writing, not once each.
const checkpointGap = 50 * time.Millisecond

// restartPages is the log size, in pages, past which a checkpoint is
// finished under the gate (16 MiB of 4 KiB pages). Each such checkpoint
// holds the writer for its two flushes and the pages since the last one,
// ~9 ms under BenchmarkWebhookLoad whatever the size: at SQLite's default
// of 1,000 pages that was 170 holds in 20 s, the longest waits a
// breadcrumb write met.
const restartPages = 4000

// walBackstop is the log size, in pages, past which the writing
// connection checkpoints by itself.
const walBackstop = 10_000

func newCheckpointer(dsn string, gate *writeGate) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, gate: gate, kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go c.run()
	return c, nil
}

// wake tells the checkpointer of a commit.
func (c *checkpointer) wake() {
	if c == nil { // while opening
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.kick:
		}
		// A checkpoint that fails or cannot finish leaves its pages in
		// the log, for the next one (or the writer's, past walBackstop).
		if pages := c.checkpoint(); pages >= restartPages && c.gate.enter(c.ctx, false) == nil {
			c.checkpoint()
			c.gate.leave()
			c.restarts.Add(1)
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(checkpointGap):
		}
	}
}

// checkpoint makes a passive checkpoint and returns the log's size in
// pages (0 when it failed).
func (c *checkpointer) checkpoint() int {
	var busy, pages, copied int
	if err := c.db.QueryRowContext(c.ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &pages, &copied); err != nil {
		return 0
	}
	c.ran.Add(1)
	return pages
}

// close stops the checkpointer; the last connection to the database
// closing checkpoints what is left.
func (c *checkpointer) close() error {
	c.cancel()
	<-c.done
	return c.db.Close()
}
