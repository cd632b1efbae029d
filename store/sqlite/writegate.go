package sqlite

import (
	"context"
	"slices"
	"sync"
	"time"
)

// writeGate orders the users of the single writing connection. Breadcrumb
// writes, which requests wait for, go before the webhook queue's
// transactions (fan-out, claims, settles) and the checkpointer's, which
// nobody waits for; within a class, oldest first. database/sql hands a
// freed connection to a waiter at random, so under a steady flow of
// deliveries a write could wait behind many queue transactions in a row.
// A queue transaction that has waited queueMaxWait goes before writes,
// but then a write goes next: a stream of writes delays deliveries and a
// stream of deliveries delays writes, by one transaction of the other
// kind at a time, and neither stops the other. A write waits at most for
// the transaction holding the connection, one queue transaction and the
// writes before it.
type writeGate struct {
	mu     sync.Mutex
	held   bool
	writes []*gateWaiter
	queue  []*gateWaiter
	now    func() time.Time
	// aged: the last handoff was an aged queue transaction's ahead of writes.
	aged bool
}

type gateWaiter struct {
	ready chan struct{}
	since time.Time
}

// queueMaxWait is how long a queue transaction waits for writes at most
// before it goes first.
const queueMaxWait = 100 * time.Millisecond

// enter waits for the connection: for a write when write is set, else for
// a queue transaction. It fails only when ctx ends first.
func (g *writeGate) enter(ctx context.Context, write bool) error {
	g.mu.Lock()
	if !g.held {
		g.held = true
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{ready: make(chan struct{}), since: g.clock()}
	if write {
		g.writes = append(g.writes, w)
	} else {
		g.queue = append(g.queue, w)
	}
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	for _, list := range []*[]*gateWaiter{&g.writes, &g.queue} {
		if i := slices.Index(*list, w); i >= 0 {
			*list = slices.Delete(*list, i, i+1)
			g.mu.Unlock()
			return ctx.Err()
		}
	}
	g.mu.Unlock()
	// Handed the connection as ctx ended: hand it on.
	g.leave()
	return ctx.Err()
}

// leave hands the connection to the next waiter, if any.
func (g *writeGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var next *gateWaiter
	switch {
	case len(g.queue) > 0 && (len(g.writes) == 0 || !g.aged && g.clock().Sub(g.queue[0].since) >= queueMaxWait):
		g.aged = len(g.writes) > 0
		next = g.queue[0]
		g.queue = slices.Delete(g.queue, 0, 1)
	case len(g.writes) > 0:
		g.aged = false
		next = g.writes[0]
		g.writes = slices.Delete(g.writes, 0, 1)
	default:
		g.held = false
		return
	}
	close(next.ready)
}

func (g *writeGate) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}
