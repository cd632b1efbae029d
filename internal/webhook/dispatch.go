package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// DispatcherOptions tune a Dispatcher; the zero value (with a Client) is
// the default.
type DispatcherOptions struct {
	Client   *Client  // nil: NewClient(ClientOptions{})
	Policy   Policy   // retry and pause rules
	Recorder Recorder // nil: attempts are not kept
	Metrics  Metrics  // nil: none
	Logger   *slog.Logger
	// MaxInFlight bounds attempts in flight in all (default 64);
	// PerEndpoint bounds them per endpoint (default 4), so a slow endpoint
	// holds at most PerEndpoint of the MaxInFlight slots.
	MaxInFlight int
	PerEndpoint int
	// PerOwner bounds the attempts in flight for one owner's endpoints
	// together (default a quarter of MaxInFlight, at least 1), so one
	// tenant's many slow endpoints leave the other slots to the rest. Slots
	// no other owner wants are lent past the share, up to MaxInFlight less
	// one share (see claim).
	PerOwner int
	// Backlog caps each endpoint's pending deliveries (default 10,000);
	// the oldest beyond it are dead-lettered, and counted.
	Backlog int
	// Poll is how often the queue is asked for due deliveries when nothing
	// wakes the dispatcher (default 1 s); TrimEvery how often backlogs are
	// trimmed and measured (default 10 s).
	Poll      time.Duration
	TrimEvery time.Duration
	Now       func() time.Time // default time.Now
	Rand      func() float64   // jitter draws in [0, 1); default math/rand/v2
}

// Dispatcher runs deliveries from a Queue.
type Dispatcher struct {
	q    Queue
	o    DispatcherOptions
	wake chan struct{}

	mu       sync.Mutex
	inFlight int
	busy     map[string]int
	owners   map[string]int // in flight by owner
	// lent holds the attempts running in slots lent past their owner's
	// share, each with the cancel that takes the slot back; lendAfter is
	// when lending may start again after slots were taken back.
	lent      map[*lentAttempt]struct{}
	lendAfter time.Time
	returning int // lent attempts cancelled that have not yet ended
}

// lentAttempt is an attempt in a lent slot.
type lentAttempt struct {
	start  time.Time
	cancel context.CancelFunc
	taken  bool // cancelled to take the slot back (under Dispatcher.mu)
}

// lendPause is how long lending stops after lent slots were taken back,
// so a stream of other owners' deliveries does not take back and lend the
// same slots over and over.
const lendPause = time.Second

// NewDispatcher is a dispatcher over q.
func NewDispatcher(q Queue, o DispatcherOptions) *Dispatcher {
	if o.Client == nil {
		o.Client = NewClient(ClientOptions{})
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = 4
	}
	if o.PerOwner <= 0 {
		o.PerOwner = max(o.MaxInFlight/4, 1)
	}
	if o.Backlog <= 0 {
		o.Backlog = 10_000
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.TrimEvery <= 0 {
		o.TrimEvery = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{q: q, o: o, wake: make(chan struct{}, 1), busy: map[string]int{}, owners: map[string]int{},
		lent: map[*lentAttempt]struct{}{}}
}

// Wake tells the dispatcher that deliveries may be due (an event just
// committed), so it asks the queue now instead of at the next poll.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then cancels the attempts in flight (their
// deliveries are released, due again at once) and returns ctx's error
// once they have all finished.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	poll := time.NewTimer(0)
	defer poll.Stop()
	nextTrim := time.Time{}
	for {
		if now := d.o.Now(); !now.Before(nextTrim) {
			d.trim(ctx, now)
			nextTrim = now.Add(d.o.TrimEvery)
		}
		full := d.claim(ctx, &wg)
		if full {
			// The batch was as large as asked: more may be due already.
			select {
			case <-ctx.Done():
				return ctx.Err()
			default:
				continue
			}
		}
		poll.Reset(d.o.Poll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.wake:
		case <-poll.C:
		}
	}
}

// claim asks the queue for what fits the free slots and starts it; full
// reports that every slot asked for was filled.
//
// The per-owner share keeps one tenant's slow endpoints from holding every
// slot, but a share that no one else wants is wasted: a server with one
// tenant (the usual self-hosted case) would run its 100 endpoints in a
// quarter of the slots. So when the fair claim leaves slots empty and an
// owner stood at its share, a second claim lends the empty slots past the
// share, all but one share of them. Lent slots are taken back: whenever
// fewer than a share of slots are free while lent attempts run, the
// longest-running lent attempts are cancelled (their deliveries released,
// due again at once, their attempts not counted), so deliveries that come
// due for other owners always find a slot within one attempt's start, and
// an owner never holds lent slots while another waits.
func (d *Dispatcher) claim(ctx context.Context, wg *sync.WaitGroup) (full bool) {
	free, started, capped := d.take(ctx, wg, 0, d.o.PerOwner, false)
	d.keepShareFree()
	if free <= 0 {
		return false
	}
	d.mu.Lock()
	lend := !d.o.Now().Before(d.lendAfter)
	d.mu.Unlock()
	if over := d.o.MaxInFlight - d.o.PerOwner; lend && started < free && capped && over > d.o.PerOwner {
		_, more, _ := d.take(ctx, wg, d.o.PerOwner, over, true)
		started += more
	}
	return started > 0 && started >= free
}

// keepShareFree takes lent slots back while fewer than a share of slots
// are free, counting those already being given back.
func (d *Dispatcher) keepShareFree() {
	d.mu.Lock()
	defer d.mu.Unlock()
	short := d.o.PerOwner - (d.o.MaxInFlight - d.inFlight) - d.returning
	if short <= 0 || len(d.lent) == 0 {
		return
	}
	for ; short > 0 && len(d.lent) > 0; short-- {
		var oldest *lentAttempt
		for la := range d.lent {
			if oldest == nil || la.start.Before(oldest.start) {
				oldest = la
			}
		}
		delete(d.lent, oldest)
		oldest.taken = true
		d.returning++
		oldest.cancel()
	}
	d.lendAfter = d.o.Now().Add(lendPause)
}

// take claims what fits the free slots less reserve, with perOwner as each
// owner's bound, and starts it (in lent slots when lend is set). It
// returns the free slots it asked for, the deliveries started, and whether
// an owner reached perOwner.
func (d *Dispatcher) take(ctx context.Context, wg *sync.WaitGroup, reserve, perOwner int, lend bool) (free, started int, capped bool) {
	d.mu.Lock()
	free = d.o.MaxInFlight - d.inFlight - reserve
	busy := make(map[string]int, len(d.busy))
	for e, n := range d.busy {
		busy[e] = n
	}
	owners := make(map[string]int, len(d.owners))
	for o, n := range d.owners {
		owners[o] = n
	}
	d.mu.Unlock()
	if free <= 0 {
		return free, 0, false
	}
	// A stop does not cut a claim off: cut off, it may have leased
	// deliveries (the database committed, the answer was lost) that no
	// one would give back until their lease ran out. Those a claim makes
	// as the stop comes are given back at once.
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	batch, err := d.q.Due(c, Claim{Limit: free, PerEndpoint: d.o.PerEndpoint, Busy: busy,
		PerOwner: perOwner, OwnerBusy: owners})
	cancel()
	if err != nil {
		d.o.Logger.Error("webhook: asking the queue for due deliveries", "err", err)
		return free, 0, false
	}
	if ctx.Err() != nil {
		for _, dl := range batch {
			d.queueOp(ctx, dl, "release", func(c context.Context) error { return d.q.Release(c, dl) })
		}
		return free, 0, false
	}
	for i, dl := range batch {
		d.mu.Lock()
		limit := d.o.PerEndpoint
		if !dl.FailingSince.IsZero() {
			limit = 1
		}
		ok := i < free && d.inFlight < d.o.MaxInFlight-reserve && d.busy[dl.Endpoint] < limit && d.owners[dl.Owner] < perOwner
		if ok {
			d.inFlight++
			d.busy[dl.Endpoint]++
			d.owners[dl.Owner]++
			capped = capped || d.owners[dl.Owner] >= perOwner
		}
		d.mu.Unlock()
		if !ok {
			// The queue gave more than the claim allowed: give it back.
			d.queueOp(ctx, dl, "release", func(c context.Context) error { return d.q.Release(c, dl) })
			continue
		}
		started++
		wg.Add(1)
		if !lend {
			go func() {
				defer wg.Done()
				d.attempt(ctx, dl)
			}()
			continue
		}
		actx, cancel := context.WithCancel(ctx)
		la := &lentAttempt{start: d.o.Now(), cancel: cancel}
		d.mu.Lock()
		d.lent[la] = struct{}{}
		d.mu.Unlock()
		go func() {
			defer wg.Done()
			defer cancel()
			d.attempt(actx, dl)
			d.mu.Lock()
			delete(d.lent, la)
			if la.taken {
				d.returning--
			}
			d.mu.Unlock()
		}()
	}
	if !capped {
		d.mu.Lock()
		for _, n := range d.owners {
			capped = capped || n >= perOwner
		}
		d.mu.Unlock()
	}
	return free, started, capped
}

// claimTimeout bounds a claim, which a stop does not cut off.
const claimTimeout = 10 * time.Second

// attempt makes one attempt at dl and settles it.
func (d *Dispatcher) attempt(ctx context.Context, dl Delivery) {
	defer func() {
		d.mu.Lock()
		d.inFlight--
		if d.busy[dl.Endpoint]--; d.busy[dl.Endpoint] <= 0 {
			delete(d.busy, dl.Endpoint)
		}
		if d.owners[dl.Owner]--; d.owners[dl.Owner] <= 0 {
			delete(d.owners, dl.Owner)
		}
		d.mu.Unlock()
		d.Wake() // a slot is free
	}()
	a := d.o.Client.Send(ctx, dl.URL, dl.Message)
	if a.Class == ClassCanceled {
		// Stopped mid-attempt: due again at once, attempts unchanged. An
		// attempt that finished as the stop came is settled as usual.
		d.queueOp(ctx, dl, "release", func(c context.Context) error { return d.q.Release(c, dl) })
		return
	}
	now := d.o.Now()
	dec := d.o.Policy.Decide(dl.FirstDue, dl.Attempts+1, a, now, d.o.Rand())
	var err error
	switch dec.Verdict {
	case Delivered:
		d.queueOp(ctx, dl, "done", func(c context.Context) error { err = d.q.Done(c, dl, a); return err })
	case Retrying:
		d.queueOp(ctx, dl, "retry", func(c context.Context) error { err = d.q.Retry(c, dl, a, dec.At); return err })
	case Dead:
		d.queueOp(ctx, dl, "dead", func(c context.Context) error { err = d.q.Dead(c, dl, a, dec.Reason); return err })
	}
	if errors.Is(err, ErrLeaseLost) {
		return // another claimant owns the delivery and records its own attempt
	}
	if d.o.Recorder != nil {
		if err := d.o.Recorder.Record(context.WithoutCancel(ctx), dl, a, dec); err != nil {
			d.o.Logger.Error("webhook: recording an attempt", "endpoint", dl.Endpoint, "delivery", dl.ID, "err", err)
		}
	}
	if d.o.Metrics != nil {
		d.o.Metrics.Attempt(dl.Endpoint, a.Class, dec.Verdict, a.Latency)
	}
	if dec.Verdict != Delivered {
		since := dl.FailingSince
		if since.IsZero() {
			since = a.Start
		}
		if d.o.Policy.ShouldPause(since, now) {
			reason := fmt.Sprintf("failing since %s; last: %s", since.UTC().Format(time.RFC3339), describe(a))
			d.queueOp(ctx, dl, "pause", func(c context.Context) error { return d.q.Pause(c, dl.Endpoint, since, reason) })
			if d.o.Metrics != nil {
				d.o.Metrics.Paused(dl.Endpoint)
			}
		}
	}
}

// queueOp runs op with a context that outlives Run's by a few seconds, so
// an attempt that finished as the dispatcher stopped is still settled.
func (d *Dispatcher) queueOp(ctx context.Context, dl Delivery, what string, op func(context.Context) error) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := op(c); err != nil {
		level := slog.LevelError
		if errors.Is(err, ErrLeaseLost) {
			level = slog.LevelWarn
		}
		d.o.Logger.Log(ctx, level, "webhook: settling a delivery", "op", what, "endpoint", dl.Endpoint, "delivery", dl.ID, "err", err)
	}
}

func (d *Dispatcher) trim(ctx context.Context, now time.Time) {
	bl, err := d.q.Trim(ctx, d.o.Backlog)
	if err != nil {
		if ctx.Err() == nil {
			d.o.Logger.Error("webhook: trimming backlogs", "err", err)
		}
		return
	}
	if d.o.Metrics == nil {
		return
	}
	for _, b := range bl {
		age := time.Duration(0)
		if !b.Oldest.IsZero() {
			age = now.Sub(b.Oldest)
		}
		d.o.Metrics.Backlog(b.Endpoint, b.Pending, age)
		if b.Trimmed > 0 {
			d.o.Metrics.Trimmed(b.Endpoint, b.Trimmed)
		}
	}
}
