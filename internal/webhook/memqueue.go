package webhook

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MemQueue is a Queue in memory, with the same lease rules a store's
// has; ctxkit's tests and benchmarks run the dispatcher over it. It holds
// at most MaxPending deliveries.
type MemQueue struct {
	// Lease is how long a claim holds a delivery (default 1 min);
	// MaxPending bounds the deliveries held (default 1,000,000);
	// MaxDeadLetters how many dead letters are kept to inspect (default
	// 10,000; the count goes on).
	Lease          time.Duration
	MaxPending     int
	MaxDeadLetters int
	Now            func() time.Time // default time.Now

	mu        sync.Mutex
	endpoints map[string]*memEndpoint
	leased    map[string]*memItem // by delivery id
	seq       int64
	pending   int
	dead      []DeadLetter
	deadCount int
}

// DeadLetter is a delivery in a dead-letter list.
type DeadLetter struct {
	Delivery Delivery
	Reason   string
	Attempt  Attempt // the last; zero for a delivery trimmed from a backlog
}

type memEndpoint struct {
	due          memHeap // pending, not leased
	paused       string
	failingSince time.Time
}

type memItem struct {
	d     Delivery
	at    time.Time // due
	seq   int64
	until time.Time // lease expiry, when leased
}

type memHeap []*memItem

func (h memHeap) Len() int { return len(h) }
func (h memHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h memHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *memHeap) Push(x any)   { *h = append(*h, x.(*memItem)) }
func (h *memHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// ErrQueueFull is Enqueue's answer when MaxPending deliveries are held.
var ErrQueueFull = errors.New("webhook: in-memory queue full")

func (q *MemQueue) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

func (q *MemQueue) init() {
	if q.endpoints == nil {
		q.endpoints = map[string]*memEndpoint{}
		q.leased = map[string]*memItem{}
	}
}

func (q *MemQueue) endpoint(id string) *memEndpoint {
	e := q.endpoints[id]
	if e == nil {
		e = &memEndpoint{}
		q.endpoints[id] = e
	}
	return e
}

// Enqueue adds a delivery, due at d.FirstDue (zero: now). An empty ID is
// given one.
func (q *MemQueue) Enqueue(d Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	limit := q.MaxPending
	if limit <= 0 {
		limit = 1_000_000
	}
	if q.pending >= limit {
		return ErrQueueFull
	}
	if d.Endpoint == "" {
		return errors.New("webhook: delivery has no endpoint")
	}
	q.seq++
	if d.ID == "" {
		d.ID = "d" + strconv.FormatInt(q.seq, 10)
	}
	if d.FirstDue.IsZero() {
		d.FirstDue = q.now()
	}
	d.Attempts, d.Lease = 0, ""
	heap.Push(&q.endpoint(d.Endpoint).due, &memItem{d: d, at: d.FirstDue, seq: q.seq})
	q.pending++
	return nil
}

// Due implements Queue.
func (q *MemQueue) Due(ctx context.Context, c Claim) ([]Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	now := q.now()
	for id, it := range q.leased {
		if !now.Before(it.until) { // its claimant died or stalled: due again
			delete(q.leased, id)
			it.d.Lease = ""
			heap.Push(&q.endpoint(it.d.Endpoint).due, it)
		}
	}
	lease := q.Lease
	if lease <= 0 {
		lease = time.Minute
	}
	// Oldest due first across endpoints, as an ORDER BY due_at would.
	taken, ownerTaken := map[string]int{}, map[string]int{}
	var out []Delivery
	for len(out) < c.Limit {
		var best *memEndpoint
		var bestID string
		for id, e := range q.endpoints {
			if e.paused != "" || e.due.Len() == 0 || e.due[0].at.After(now) || taken[id] >= c.Room(id, !e.failingSince.IsZero()) {
				continue
			}
			if owner := e.due[0].d.Owner; ownerTaken[owner] >= c.OwnerRoom(owner) {
				continue
			}
			if best == nil || e.due[0].at.Before(best.due[0].at) ||
				(e.due[0].at.Equal(best.due[0].at) && e.due[0].seq < best.due[0].seq) {
				best, bestID = e, id
			}
		}
		if best == nil {
			break
		}
		it := heap.Pop(&best.due).(*memItem)
		q.seq++
		it.d.Lease = "l" + strconv.FormatInt(q.seq, 10)
		it.d.FailingSince = best.failingSince
		it.until = now.Add(lease)
		q.leased[it.d.ID] = it
		taken[bestID]++
		ownerTaken[it.d.Owner]++
		out = append(out, it.d)
	}
	return out, nil
}

// held is the leased item for d, or ErrLeaseLost.
func (q *MemQueue) held(d Delivery) (*memItem, error) {
	q.init()
	it := q.leased[d.ID]
	if it == nil || it.d.Lease != d.Lease || d.Lease == "" {
		return nil, fmt.Errorf("%w: delivery %s", ErrLeaseLost, d.ID)
	}
	return it, nil
}

func (q *MemQueue) failing(endpoint string, at time.Time) {
	e := q.endpoint(endpoint)
	if e.failingSince.IsZero() {
		e.failingSince = at
	}
}

// Done implements Queue.
func (q *MemQueue) Done(_ context.Context, d Delivery, a Attempt) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, err := q.held(d); err != nil {
		return err
	}
	delete(q.leased, d.ID)
	q.pending--
	q.endpoint(d.Endpoint).failingSince = time.Time{}
	return nil
}

// Retry implements Queue.
func (q *MemQueue) Retry(_ context.Context, d Delivery, a Attempt, at time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, err := q.held(d)
	if err != nil {
		return err
	}
	delete(q.leased, d.ID)
	it.d.Attempts++
	it.d.Lease = ""
	it.at = at
	heap.Push(&q.endpoint(d.Endpoint).due, it)
	q.failing(d.Endpoint, a.Start)
	return nil
}

// Dead implements Queue.
func (q *MemQueue) Dead(_ context.Context, d Delivery, a Attempt, reason string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, err := q.held(d)
	if err != nil {
		return err
	}
	delete(q.leased, d.ID)
	q.pending--
	it.d.Attempts++
	it.d.Lease = ""
	q.bury(DeadLetter{Delivery: it.d, Reason: reason, Attempt: a})
	q.failing(d.Endpoint, a.Start)
	return nil
}

func (q *MemQueue) bury(dl DeadLetter) {
	q.deadCount++
	limit := q.MaxDeadLetters
	if limit <= 0 {
		limit = 10_000
	}
	if len(q.dead) >= limit {
		q.dead = slices.Delete(q.dead, 0, 1)
	}
	q.dead = append(q.dead, dl)
}

// Release implements Queue.
func (q *MemQueue) Release(_ context.Context, d Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, err := q.held(d)
	if err != nil {
		return err
	}
	delete(q.leased, d.ID)
	it.d.Lease = ""
	it.at = q.now()
	heap.Push(&q.endpoint(d.Endpoint).due, it)
	return nil
}

// Pause implements Queue.
func (q *MemQueue) Pause(_ context.Context, endpoint string, since time.Time, reason string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	if reason == "" {
		reason = "paused"
	}
	e := q.endpoint(endpoint)
	if e.failingSince.IsZero() || e.failingSince.After(since) {
		return nil
	}
	e.paused = reason
	return nil
}

// Resume undoes Pause; the endpoint starts afresh, not failing.
func (q *MemQueue) Resume(endpoint string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	e := q.endpoint(endpoint)
	e.paused, e.failingSince = "", time.Time{}
}

// Paused is the reason the endpoint is paused, or "".
func (q *MemQueue) Paused(endpoint string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	return q.endpoint(endpoint).paused
}

// Trim implements Queue. Leased deliveries count toward the backlog but
// are not trimmed (an attempt is under way).
func (q *MemQueue) Trim(_ context.Context, perEndpoint int) ([]Backlog, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.init()
	leased := map[string][]*memItem{}
	for _, it := range q.leased {
		leased[it.d.Endpoint] = append(leased[it.d.Endpoint], it)
	}
	var out []Backlog
	for id, e := range q.endpoints {
		b := Backlog{Endpoint: id, Pending: e.due.Len() + len(leased[id])}
		if over := b.Pending - perEndpoint; perEndpoint > 0 && over > 0 {
			byAge := slices.Clone(e.due)
			slices.SortFunc(byAge, func(x, y *memItem) int { return x.d.FirstDue.Compare(y.d.FirstDue) })
			over = min(over, len(byAge))
			gone := map[*memItem]bool{}
			for _, it := range byAge[:over] {
				gone[it] = true
				q.bury(DeadLetter{Delivery: it.d, Reason: fmt.Sprintf("backlog over %d pending deliveries", perEndpoint)})
			}
			e.due = slices.DeleteFunc(e.due, func(it *memItem) bool { return gone[it] })
			heap.Init(&e.due)
			q.pending -= over
			b.Pending -= over
			b.Trimmed = over
		}
		for _, it := range e.due {
			if b.Oldest.IsZero() || it.d.FirstDue.Before(b.Oldest) {
				b.Oldest = it.d.FirstDue
			}
		}
		for _, it := range leased[id] {
			if b.Oldest.IsZero() || it.d.FirstDue.Before(b.Oldest) {
				b.Oldest = it.d.FirstDue
			}
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(x, y Backlog) int { return strings.Compare(x.Endpoint, y.Endpoint) })
	return out, nil
}

// DeadLetters is the kept dead letters, oldest first, and how many there
// have been in all.
func (q *MemQueue) DeadLetters() ([]DeadLetter, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.dead), q.deadCount
}

// Pending is how many deliveries the queue holds, leased or not.
func (q *MemQueue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending
}

var _ Queue = (*MemQueue)(nil)
