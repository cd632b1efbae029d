package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	metric "github.com/ctxkit/ctxkit/internal/metrics"
	"github.com/ctxkit/ctxkit/internal/webhook"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// WebhookOptions tune webhook delivery; the zero value is the default:
// https targets on public addresses, 10 s per attempt, retries for 24 h.
type WebhookOptions struct {
	// AllowPrivate lifts the address rule (loopback, private, link-local
	// and metadata addresses are refused by default) and lets plain http
	// targets in: for tests and internal networks.
	AllowPrivate bool
	Timeout      time.Duration  // per attempt; default 10 s
	Policy       webhook.Policy // retry horizon, backoff, pause after failing (24 h)
	// MaxInFlight bounds attempts in flight on this replica (default 64),
	// PerEndpoint those for one webhook (default 4; 1 while it is
	// failing), PerOwner those for one owner's webhooks together (default
	// a quarter of MaxInFlight), so one tenant's slow receivers leave
	// the other slots to the rest.
	MaxInFlight int
	PerEndpoint int
	PerOwner    int
	// Backlog caps each webhook's pending deliveries (default 10,000): the
	// oldest beyond it are dead-lettered, and counted.
	Backlog int
	// Lease is how long a claimed delivery is held before another replica
	// may take it (default 1 min; above Timeout).
	Lease time.Duration
	// Poll is how often the fan-out looks for new events, and the
	// dispatcher for due deliveries, when nothing wakes them (default
	// 250 ms and 1 s).
	Poll time.Duration
	Rand func() float64 // jitter draws; default math/rand/v2
}

// fanOutPage is how many events one step takes of a webhook's backlog.
const fanOutPage = 256

// fanOutContextBytes bounds the contexts one read of a webhook's events
// holds: a selector with context conditions reads each event's context
// (up to store.MaxContextBytes each), so such a webhook's step reads its
// events contextPage at a time. The contexts read count in the round's
// budget too.
const (
	fanOutContextBytes = 8 << 20
	contextPage        = max(1, fanOutContextBytes/store.MaxContextBytes)
)

// Label values of the delivery metrics are bounded per owner, so one
// tenant cannot take every series: an owner's first maxHookSeriesPerOwner
// webhooks get a series of their own, the rest are summed under the
// owner's "other" (which its curators read as theirs); owners beyond
// maxHookOwners are summed under owner "other", which nobody reads. A
// deleted webhook gives its slot back and its series are dropped.
const (
	maxHookSeriesPerOwner = 10
	maxHookOwners         = 100
)

// hookRunner fans events out to webhooks and runs their deliveries.
type hookRunner struct {
	s      *Server
	o      WebhookOptions
	client *webhook.Client
	fanout chan struct{}
	// commits wakes the fan-out when the store says changes committed
	// (store.CommitWatcher); capacity 1, so a burst of commits wakes it
	// once, and it then reads whatever committed meanwhile.
	commits chan struct{}
	// settles carries the dispatcher's settles to commitSettles.
	settles chan settleReq

	mu   sync.Mutex
	disp *webhook.Dispatcher // while RunWebhooks runs

	labelsMu sync.Mutex
	labels   map[string][2]string // webhook id → owner, webhook labels; only webhooks with a series of their own
	labelled map[string]int       // owner → its webhooks in labels
	owners   sync.Map             // webhook id → owner, of the webhooks that exist

	attempts *metric.CounterVec
	latency  *metric.HistogramVec
	backlog  *metric.GaugeVec
	oldest   *metric.GaugeVec
	trimmed  *metric.CounterVec
	paused   *metric.CounterVec
	missed   *metric.CounterVec
}

func newHookRunner(s *Server, o WebhookOptions) *hookRunner {
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	h := &hookRunner{
		s: s, o: o, fanout: make(chan struct{}, 1), commits: make(chan struct{}, 1), labels: map[string][2]string{}, labelled: map[string]int{}, settles: make(chan settleReq, maxSettleGroup),
		client: webhook.NewClient(webhook.ClientOptions{AllowPrivate: o.AllowPrivate, AllowHTTP: o.AllowPrivate, Timeout: o.Timeout}),
		attempts: metric.NewCounterVec(metric.CounterOpts{Name: "ctxkit_webhook_attempts_total",
			Help: "Webhook delivery attempts by owner, webhook (10 per owner; the rest as other), class and outcome (delivered, retry, dead)."},
			[]string{"owner", "webhook", "class", "outcome"}),
		latency: metric.NewHistogramVec(metric.HistogramOpts{Name: "ctxkit_webhook_attempt_duration_seconds",
			Help: "Webhook delivery attempt latency by owner and webhook.", Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
			[]string{"owner", "webhook"}),
		backlog: metric.NewGaugeVec(metric.GaugeOpts{Name: "ctxkit_webhook_backlog",
			Help: "Pending deliveries by owner and webhook."}, []string{"owner", "webhook"}),
		oldest: metric.NewGaugeVec(metric.GaugeOpts{Name: "ctxkit_webhook_oldest_pending_seconds",
			Help: "Age of the oldest pending delivery by owner and webhook."}, []string{"owner", "webhook"}),
		trimmed: metric.NewCounterVec(metric.CounterOpts{Name: "ctxkit_webhook_trimmed_total",
			Help: "Deliveries dead-lettered because a webhook's backlog passed its cap."}, []string{"owner", "webhook"}),
		paused: metric.NewCounterVec(metric.CounterOpts{Name: "ctxkit_webhook_paused_total",
			Help: "Webhooks paused after failing for the pause horizon."}, []string{"owner", "webhook"}),
		missed: metric.NewCounterVec(metric.CounterOpts{Name: "ctxkit_webhook_missed_events_total",
			Help: "Events pruned before the fan-out reached them, by owner and webhook: never delivered."}, []string{"owner", "webhook"}),
	}
	s.metrics.reg.MustRegister(h.attempts, h.latency, h.backlog, h.oldest, h.trimmed, h.paused, h.missed)
	return h
}

// label is the owner and webhook label values of a webhook's series: its
// own while its owner has a slot free, else its owner's "other"; a
// webhook not known to exist (deleted since) is summed under "other".
func (h *hookRunner) label(id string) (owner, hook string) {
	h.labelsMu.Lock()
	defer h.labelsMu.Unlock()
	if l, ok := h.labels[id]; ok {
		return l[0], l[1]
	}
	o, _ := h.owners.Load(id)
	owner, _ = o.(string)
	n, present := h.labelled[owner]
	switch {
	case owner == "" || owner == "other" || (!present && len(h.labelled) >= maxHookOwners):
		return "other", "other"
	case n >= maxHookSeriesPerOwner:
		return owner, "other"
	}
	h.labels[id] = [2]string{owner, id}
	h.labelled[owner]++
	return owner, id
}

// retain notes the webhooks that exist (hooks is all of them) and forgets
// those deleted, here or on another replica: their label slots are given
// back and their series dropped, and an owner left without webhooks
// loses its "other" series too.
func (h *hookRunner) retain(hooks []store.Webhook) {
	live, liveOwners := make(map[string]bool, len(hooks)), map[string]bool{}
	for _, w := range hooks {
		h.owners.Store(w.ID, w.OwnerID)
		live[w.ID], liveOwners[w.OwnerID] = true, true
	}
	h.owners.Range(func(k, _ any) bool {
		if !live[k.(string)] {
			h.owners.Delete(k)
		}
		return true
	})
	h.labelsMu.Lock()
	defer h.labelsMu.Unlock()
	for id, l := range h.labels {
		if live[id] {
			continue
		}
		delete(h.labels, id)
		if h.labelled[l[0]]--; h.labelled[l[0]] <= 0 {
			delete(h.labelled, l[0])
		}
		h.dropSeries("webhook", id)
		if !liveOwners[l[0]] {
			h.dropSeries("owner", l[0])
		}
	}
}

// dropSeries drops every webhook series whose label has value.
func (h *hookRunner) dropSeries(label, value string) {
	h.attempts.DeleteMatch(label, value)
	h.latency.DeleteMatch(label, value)
	h.backlog.DeleteMatch(label, value)
	h.oldest.DeleteMatch(label, value)
	h.trimmed.DeleteMatch(label, value)
	h.paused.DeleteMatch(label, value)
	h.missed.DeleteMatch(label, value)
}

func (h *hookRunner) wakeFanOut() {
	select {
	case h.fanout <- struct{}{}:
	default:
	}
}

func (h *hookRunner) wakeDispatcher() {
	h.mu.Lock()
	d := h.disp
	h.mu.Unlock()
	if d != nil {
		d.Wake()
	}
}

// RunWebhooks fans new events out to the webhooks that select them and
// delivers them, until ctx ends; then it releases the deliveries in
// flight (due again at once, on this replica or another) and returns.
// Several replicas may run it over one PostgreSQL database: each event is
// made ready once per webhook, and each delivery is attempted by one
// replica at a time.
func (s *Server) RunWebhooks(ctx context.Context) error {
	h := s.hooks
	d := webhook.NewDispatcher(storeQueue{h}, webhook.DispatcherOptions{
		Client: h.client, Policy: h.o.Policy, Metrics: hookMetrics{h}, Logger: s.opts.Logger,
		MaxInFlight: h.o.MaxInFlight, PerEndpoint: h.o.PerEndpoint, PerOwner: h.o.PerOwner, Backlog: h.o.Backlog, Now: s.opts.Now, Rand: h.o.Rand,
		// Retries come due without a wake: look for them as often as for events.
		Poll: h.o.Poll,
	})
	h.mu.Lock()
	h.disp = d
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.disp = nil
		h.mu.Unlock()
	}()
	if cw, ok := s.opts.Store.(store.CommitWatcher); ok {
		stop := cw.WatchCommits(func() {
			select {
			case h.commits <- struct{}{}:
			default:
			}
		})
		defer stop()
	}
	stopSettles := make(chan struct{})
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		h.commitSettles(stopSettles)
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.fanOutLoop(ctx, d)
	}()
	err := d.Run(ctx) // returns once its attempts are settled or released
	wg.Wait()
	close(stopSettles)
	<-settled
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// fanOutLoop makes deliveries of new events when a commit wakes it, when
// a webhook is created or resumed, or every Poll (events of another
// replica whose notification was lost). It asks only for the newest
// sequence number while nothing changed, so the commits of the queue
// itself cost one cheap read each round.
func (h *hookRunner) fanOutLoop(ctx context.Context, d *webhook.Dispatcher) {
	t := time.NewTicker(h.o.Poll)
	defer t.Stop()
	var seen int64 = -1
	force := false
	var last time.Time
	for {
		last = time.Now()
		latest, err := h.s.opts.Store.LatestSeq(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				h.s.opts.Logger.Error("webhook fan-out: newest event", "err", err)
			}
		case latest != seen || force:
			n, err := h.fanOutAll(ctx, latest)
			if err != nil {
				if ctx.Err() == nil {
					h.s.opts.Logger.Error("webhook fan-out", "err", err)
				}
				break
			}
			seen = latest
			if n > 0 {
				d.Wake()
			}
		}
		force = false
		select {
		case <-ctx.Done():
			return
		case <-h.fanout:
			force = true
		case <-h.commits:
			// Under a stream of writes every commit wakes the loop; rounds
			// at least commitGap apart group them, so the queue's
			// transactions do not take the single writer once per write.
			if wait := commitGap - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		case <-t.C:
		}
	}
}

// commitGap is the least time between fan-out rounds that commits woke.
// Each round reads every webhook and moves each one's cursor, whether or
// not the events matched it: under BenchmarkWebhookLoad (167 events/s)
// rounds 50 ms apart instead of 20 made a breadcrumb write's p50 with
// webhooks 4.75 -> 3.76 ms, for ~15 ms more delivery lag (p50 ~50 ms).
const commitGap = 50 * time.Millisecond

// maxRoundBytes bounds the events one fan-out round holds in memory; a
// round that reaches it stores what it has and goes on in the next.
const maxRoundBytes = 32 << 20

// hookRevoked reports whether a revocation names the token w acts by:
// the rule a request's token is held to.
func (h *hookRunner) hookRevoked(ctx context.Context, w store.Webhook) (bool, error) {
	set, err := h.s.revoked.current(ctx)
	if err != nil {
		return false, err
	}
	return set.names(w), nil
}

// names reports whether a revocation in set names the token w acts by.
func (set *revocationSet) names(w store.Webhook) bool {
	_, ok := set.revoked(verified{p: Principal{OwnerID: w.OwnerID, AgentID: w.AgentID}, id: w.TokenID, issued: w.TokenIssued})
	return ok
}

// fanOutAll makes, in rounds, the deliveries of the events up to latest
// for every webhook: each round reads the webhooks afresh (a selector
// changed by PATCH applies from the next round on, a revocation at
// once) and a page of each one's events, and stores every webhook's
// deliveries and cursor in one transaction. A webhook whose token was
// revoked is paused and its cursor moved on without deliveries. It says
// how many deliveries it made.
func (h *hookRunner) fanOutAll(ctx context.Context, latest int64) (int, error) {
	made := 0
	for {
		hooks, err := h.s.opts.Store.AllWebhooks(ctx)
		if err != nil {
			return made, err
		}
		h.retain(hooks)
		cache, size := map[int64][]byte{}, 0
		reads := map[changesKey]changesRead{}
		var (
			advs []store.Advance
			errs []error
		)
		for _, w := range hooks {
			if w.Cursor >= latest || size >= maxRoundBytes {
				continue
			}
			revoked, err := h.hookRevoked(ctx, w)
			if err != nil {
				return made, err
			}
			if revoked {
				if w.PausedReason != store.RevokedReason {
					if err := h.s.opts.Store.PauseRevoked(ctx, w.ID, w.TokenID, w.TokenIssued); err != nil {
						errs = append(errs, fmt.Errorf("webhook %s: %w", w.ID, err))
						continue
					}
				}
				advs = append(advs, store.Advance{Webhook: w, Upto: latest})
				continue
			}
			a, err := h.step(ctx, w, latest, cache, reads, &size)
			if err != nil {
				errs = append(errs, fmt.Errorf("webhook %s: %w", w.ID, err))
				continue
			}
			advs = append(advs, a)
		}
		if len(advs) == 0 {
			return made, errors.Join(errs...)
		}
		res, err := h.s.opts.Store.AdvanceWebhooks(ctx, advs)
		if err != nil {
			return made, errors.Join(append(errs, err)...)
		}
		moved := 0
		for i, a := range advs {
			if res[i] == nil {
				made += len(a.Deliveries)
			} else {
				moved++
			}
		}
		if moved == len(advs) {
			// Another replica fans out every one of them: it goes on.
			return made, errors.Join(errs...)
		}
		if len(errs) > 0 {
			return made, errors.Join(errs...)
		}
	}
}

// changesKey is what a read of a webhook's events depends on: webhooks
// of one agent (the same actor) at the same cursor read the same events,
// so a round reads them once and each webhook matches its selector on
// them in memory. With many webhooks per agent, as an agent that routes
// kinds of change to different receivers has, this is most of the
// fan-out's reads.
type changesKey struct {
	actor       store.Actor
	after       int64
	limit       int
	withContext bool
}

type changesRead struct {
	cs     []store.Change
	missed int64
}

// changeCost is what a change read counts in a round's budget besides its
// context: a generous size of the event's fields.
const changeCost = 512

// step reads up to fanOutPage of w's events after its cursor and at or
// below latest (in pages of contextPage when its selector reads
// contexts) and makes the deliveries its selector passes, as its agent
// sees them. Bounded by latest, the reads wait for no writer: the
// round's LatestSeq is its one read that does.
// cache holds the events (JSON) read this round, by seq, and reads the
// pages of events read this round: webhooks share them.
func (h *hookRunner) step(ctx context.Context, w store.Webhook, latest int64, cache map[int64][]byte, reads map[changesKey]changesRead, size *int) (store.Advance, error) {
	withContext := w.Selector.NeedsContext()
	page := fanOutPage
	if withContext {
		page = contextPage
	}
	adv := store.Advance{Webhook: w, Upto: w.Cursor}
	for read := 0; read < fanOutPage; {
		at := w
		at.Cursor = adv.Upto
		n := min(page, fanOutPage-read)
		key := changesKey{actor: w.Actor(), after: at.Cursor, limit: n, withContext: withContext}
		r, ok := reads[key]
		if !ok {
			cs, missed, err := h.s.opts.Store.WebhookChanges(ctx, at, latest, n, withContext)
			if err != nil {
				return store.Advance{}, err
			}
			r = changesRead{cs: cs, missed: missed}
			reads[key] = r
			for i := range cs {
				// Read, whether or not the agent may match on it.
				*size += changeCost + len(cs[i].Context)
			}
		}
		cs, missed := r.cs, r.missed
		if missed > at.Cursor {
			owner, hook := h.label(w.ID)
			h.missed.WithLabelValues(owner, hook).Add(float64(missed - at.Cursor))
			h.s.opts.Logger.Warn("webhook: events were pruned before they were fanned out; the webhook missed them",
				"webhook", w.ID, "after", at.Cursor, "through", missed)
			adv.Upto = missed
		}
		adv.Missed = max(adv.Missed, missed)
		done, err := h.stepPage(ctx, w, cs, cache, size, &adv)
		if err != nil {
			return store.Advance{}, err
		}
		if done {
			return adv, nil
		}
		read += len(cs)
		if len(cs) < n {
			// The read is bounded by latest, a LatestSeq answer: none the
			// webhook may see is still to come at or below it.
			adv.Upto = max(adv.Upto, latest)
			return adv, nil
		}
	}
	return adv, nil
}

// stepPage makes the deliveries of one page of w's events into adv;
// done reports that the round's budget ran out before the page did.
func (h *hookRunner) stepPage(ctx context.Context, w store.Webhook, cs []store.Change, cache map[int64][]byte, size *int, adv *store.Advance) (done bool, err error) {
	a := w.Actor()
	withContext := w.Selector.NeedsContext()
	for i := range cs {
		c := &cs[i]
		if *size >= maxRoundBytes {
			return true, nil // the rest in the next round
		}
		adv.Upto = c.Seq
		var doc any
		if withContext {
			if raw := c.ContextFor(a); raw != nil {
				if doc, err = view.DecodeJSON(raw); err != nil {
					doc = nil
				}
			}
		}
		if !w.Selector.Match(&c.Event, doc) {
			continue
		}
		ev, ok := cache[c.Seq]
		if !ok {
			if ev, err = json.Marshal(c.Event); err != nil {
				return true, err
			}
			cache[c.Seq] = ev
			*size += len(ev)
		}
		adv.Deliveries = append(adv.Deliveries, store.NewDelivery{Seq: c.Seq, Kind: string(c.Kind), At: c.At, Event: ev})
	}
	return false, nil
}

// deliveryBody is the JSON body of a delivery.
type deliveryBody struct {
	Type      string      `json:"type"` // breadcrumb.created, .updated, .deleted, .expired
	Timestamp time.Time   `json:"timestamp"`
	Seq       int64       `json:"seq"`
	Kind      string      `json:"kind"`
	Event     store.Event `json:"event"`
	// Payload is the record (its view, or the whole record) as the
	// webhook's agent may read it when the delivery is sent, for created
	// and updated events; absent for deleted and expired ones, and when
	// withheld or truncated.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Withheld says why a created or updated event's payload is absent:
	// not_readable (deleted since, or no longer readable by the agent),
	// read_budget (a record with max_reads is never sent: a delivery is
	// no counted read), view_failed.
	Withheld  string `json:"withheld,omitempty"`
	Truncated bool   `json:"truncated,omitempty"` // the payload passed store.MaxDeliveryBody
}

// payloadKey is what a payload depends on: the record (as read now,
// at its current version), the reader and the payload kind.
type payloadKey struct {
	id      string
	actor   store.Actor
	payload store.WebhookPayload
}

// renderedPayload is a record's payload, or why it is withheld.
type renderedPayload struct {
	payload  json.RawMessage
	withheld string
}

// payloadCache shares payloads between the deliveries of one claim: a
// record read once per reader and payload kind.
type payloadCache map[payloadKey]renderedPayload

// body is the JSON body of d for w as it is sent now: a test message as
// stored; an event with its record read as w's agent at this moment
// (the visibility of its reads, the view of GET /breadcrumbs/{id}), so
// a record the agent may no longer read is withheld.
func (h *hookRunner) body(ctx context.Context, w store.Webhook, d store.Delivery, cache payloadCache) ([]byte, error) {
	if d.Seq == 0 {
		return d.Body, nil
	}
	var ev store.Event
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, fmt.Errorf("delivery %s: %w: %v", d.ID, errStoredEvent, err)
	}
	body := deliveryBody{Type: "breadcrumb." + string(ev.Kind), Timestamp: ev.At, Seq: ev.Seq, Kind: string(ev.Kind), Event: ev}
	if ev.Kind == store.Created || ev.Kind == store.Updated {
		key := payloadKey{id: ev.BreadcrumbID, actor: w.Actor(), payload: w.Payload}
		p, ok := cache[key]
		if !ok {
			var err error
			if p, err = h.payload(ctx, w, ev.BreadcrumbID); err != nil {
				return nil, err
			}
			cache[key] = p
		}
		body.Payload, body.Withheld = p.payload, p.withheld
	}
	out, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	if len(out) > store.MaxDeliveryBody {
		body.Payload, body.Truncated = nil, true
		return json.Marshal(body)
	}
	return out, nil
}

// errStoredEvent: a delivery's stored event does not parse; retrying
// cannot help.
var errStoredEvent = errors.New("its stored event is unreadable")

// payload reads record id as w's agent may now.
func (h *hookRunner) payload(ctx context.Context, w store.Webhook, id string) (renderedPayload, error) {
	b, err := h.s.opts.Store.Get(ctx, w.Actor(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Deleted, or no longer readable by the agent: the same answer,
		// so a delivery tells no more than a read would.
		return renderedPayload{withheld: "not_readable"}, nil
	case err != nil:
		return renderedPayload{}, err
	case b.MaxReads > 0:
		return renderedPayload{withheld: "read_budget"}, nil
	case w.Payload == store.PayloadFull:
		raw, err := json.Marshal(b)
		return renderedPayload{payload: raw}, err
	}
	v, err := h.s.applyView(ctx, &b)
	if err != nil {
		return renderedPayload{withheld: "view_failed"}, nil
	}
	raw, err := json.Marshal(viewReply{ID: b.ID, Title: b.Title, Description: b.Description, Tags: b.Tags,
		SchemaName: b.SchemaName, Version: b.Version, UpdatedAt: b.UpdatedAt, Context: v.value,
		Meta: viewMeta{Status: viewStatus(v.status), ErrorCode: v.code, Message: v.reason, Source: envelope.SourceStore,
			FreshnessState: envelope.Fresh, Warnings: v.warnings}})
	return renderedPayload{payload: raw}, err
}

// storeQueue is webhook.Queue over the store's delivery tables; each
// attempt is kept with its settle (no separate Recorder).
type storeQueue struct{ h *hookRunner }

func leaseLost(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		return fmt.Errorf("%w: %v", webhook.ErrLeaseLost, err)
	}
	return err
}

// Due implements webhook.Queue.
func (q storeQueue) Due(ctx context.Context, c webhook.Claim) ([]webhook.Delivery, error) {
	cds, err := q.h.s.opts.Store.ClaimDeliveries(ctx, store.DeliveryClaim{Limit: c.Limit, PerWebhook: c.PerEndpoint, Busy: c.Busy,
		PerOwner: c.PerOwner, OwnerBusy: c.OwnerBusy, Lease: q.h.o.Lease})
	if err != nil {
		return nil, err
	}
	now := q.h.s.opts.Now()
	out := make([]webhook.Delivery, 0, len(cds))
	cache := payloadCache{}
	var held []store.Settle
	defer func() {
		// Held, not sent: due again at once, and claimed again only if
		// their webhook is not paused.
		if len(held) > 0 {
			if _, err := q.h.s.opts.Store.SettleDeliveries(context.WithoutCancel(ctx), held); err != nil {
				q.h.s.opts.Logger.Error("webhook: releasing held deliveries", "err", err)
			}
		}
	}()
	set, err := q.h.s.revoked.current(ctx)
	if err != nil {
		// Revocations unknown: send nothing of this claim.
		for _, cd := range cds {
			held = append(held, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryPending})
		}
		return nil, err
	}
	paused := map[string]bool{}
	for _, cd := range cds {
		if set.names(cd.Hook) {
			if !paused[cd.WebhookID] {
				paused[cd.WebhookID] = true
				if err := q.h.s.opts.Store.PauseRevoked(ctx, cd.WebhookID, cd.Hook.TokenID, cd.Hook.TokenIssued); err != nil {
					q.h.s.opts.Logger.Error("webhook: pausing a webhook whose token was revoked", "webhook", cd.WebhookID, "err", err)
				}
			}
			held = append(held, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryPending, NextAt: now.Add(time.Second)})
			continue
		}
		body, err := q.h.body(ctx, cd.Hook, cd.Delivery, cache)
		if errors.Is(err, errStoredEvent) {
			held = append(held, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryFailed,
				Reason: "the delivery's stored event is unreadable"})
			continue
		}
		if err != nil {
			q.h.s.opts.Logger.Error("webhook: reading a delivery's record", "webhook", cd.WebhookID, "delivery", cd.ID, "err", err)
			held = append(held, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryPending,
				NextAt: now.Add(time.Second)})
			continue
		}
		ring, err := keyring(cd.Keys)
		if err != nil {
			// Never send unsigned: the delivery goes to the dead-letter
			// list, saying why.
			q.h.s.opts.Logger.Error("webhook: stored secret unreadable", "webhook", cd.WebhookID, "err", err)
			held = append(held, store.Settle{DeliveryID: cd.ID, Lease: cd.Lease, Status: store.DeliveryFailed,
				Reason: "the webhook's stored secret is unreadable: rotate it"})
			continue
		}
		out = append(out, webhook.Delivery{ID: cd.ID, Endpoint: cd.WebhookID, Owner: cd.OwnerID, URL: cd.URL,
			Message:  webhook.Message{ID: cd.ID, Body: body, Secrets: ring.Active(now)},
			FirstDue: cd.FirstDue, Attempts: cd.Attempts, FailingSince: cd.FailingSince, Lease: cd.Lease})
	}
	return out, nil
}

func keyring(k store.WebhookKeys) (webhook.Keyring, error) {
	cur, err := webhook.ParseSecret(k.Current)
	if err != nil {
		return webhook.Keyring{}, err
	}
	ring := webhook.Keyring{Current: cur}
	if k.Previous != "" {
		if prev, err := webhook.ParseSecret(k.Previous); err == nil {
			ring.Previous, ring.PreviousUntil = prev, k.PreviousUntil
		}
	}
	return ring, nil
}

func failingSince(d webhook.Delivery, a webhook.Attempt) time.Time {
	if !d.FailingSince.IsZero() {
		return d.FailingSince
	}
	return a.Start
}

// attempt is a's record, kept with its settle.
func attempt(d webhook.Delivery, a webhook.Attempt, v webhook.Verdict) *store.DeliveryAttempt {
	return &store.DeliveryAttempt{DeliveryID: d.ID, WebhookID: d.Endpoint, At: a.Start, Status: a.Status, Class: string(a.Class),
		LatencyMS: float64(a.Latency.Microseconds()) / 1000, Error: a.Err, Excerpt: a.Excerpt, Verdict: string(v)}
}

// Done implements webhook.Queue.
func (q storeQueue) Done(ctx context.Context, d webhook.Delivery, a webhook.Attempt) error {
	return q.h.settle(ctx, store.Settle{DeliveryID: d.ID, Lease: d.Lease, Status: store.DeliveryDelivered, Attempted: true,
		Attempt: attempt(d, a, webhook.Delivered)})
}

// Retry implements webhook.Queue.
func (q storeQueue) Retry(ctx context.Context, d webhook.Delivery, a webhook.Attempt, at time.Time) error {
	return q.h.settle(ctx, store.Settle{DeliveryID: d.ID, Lease: d.Lease, Status: store.DeliveryPending,
		NextAt: at, Attempted: true, Failed: failingSince(d, a), Attempt: attempt(d, a, webhook.Retrying)})
}

// Dead implements webhook.Queue.
func (q storeQueue) Dead(ctx context.Context, d webhook.Delivery, a webhook.Attempt, reason string) error {
	return q.h.settle(ctx, store.Settle{DeliveryID: d.ID, Lease: d.Lease, Status: store.DeliveryFailed,
		Attempted: true, Failed: failingSince(d, a), Reason: reason, Attempt: attempt(d, a, webhook.Dead)})
}

// Release implements webhook.Queue.
func (q storeQueue) Release(ctx context.Context, d webhook.Delivery) error {
	return q.h.settle(ctx, store.Settle{DeliveryID: d.ID, Lease: d.Lease, Status: store.DeliveryPending})
}

// settleReq is one settle waiting for its group's commit.
type settleReq struct {
	s    store.Settle
	done chan error
}

// maxSettleGroup bounds the settles committed together.
const maxSettleGroup = 256

// settle commits s with whatever other settles are waiting (group
// commit: one transaction, one disk flush, for every attempt that ended
// meanwhile) and returns once it is durable.
func (h *hookRunner) settle(ctx context.Context, s store.Settle) error {
	req := settleReq{s: s, done: make(chan error, 1)}
	select {
	case h.settles <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return leaseLost(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// commitSettles runs the group commits until stop is closed and every
// settle sent before is answered.
func (h *hookRunner) commitSettles(stop <-chan struct{}) {
	group := make([]settleReq, 0, maxSettleGroup)
	for {
		var first settleReq
		select {
		case first = <-h.settles:
		case <-stop:
			select {
			case first = <-h.settles:
			default:
				return
			}
		}
		group = append(group[:0], first)
	more:
		for len(group) < maxSettleGroup {
			select {
			case r := <-h.settles:
				group = append(group, r)
			default:
				break more
			}
		}
		ss := make([]store.Settle, len(group))
		for i, r := range group {
			ss[i] = r.s
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs, err := h.s.opts.Store.SettleDeliveries(ctx, ss)
		cancel()
		for i, r := range group {
			if err != nil {
				r.done <- err
			} else {
				r.done <- errs[i]
			}
		}
	}
}

// Pause implements webhook.Queue.
func (q storeQueue) Pause(ctx context.Context, endpoint string, since time.Time, reason string) error {
	return q.h.s.opts.Store.PauseFailing(ctx, endpoint, since, reason)
}

// Trim implements webhook.Queue.
func (q storeQueue) Trim(ctx context.Context, perEndpoint int) ([]webhook.Backlog, error) {
	bl, err := q.h.s.opts.Store.TrimDeliveries(ctx, perEndpoint)
	if err != nil {
		return nil, err
	}
	out := make([]webhook.Backlog, len(bl))
	for i, b := range bl {
		out[i] = webhook.Backlog{Endpoint: b.WebhookID, Pending: b.Pending, Oldest: b.Oldest, Trimmed: b.Trimmed}
	}
	return out, nil
}

// hookMetrics is webhook.Metrics over the server's registry.
type hookMetrics struct{ h *hookRunner }

func (m hookMetrics) Attempt(endpoint string, class webhook.Class, verdict webhook.Verdict, latency time.Duration) {
	owner, hook := m.h.label(endpoint)
	m.h.attempts.WithLabelValues(owner, hook, string(class), string(verdict)).Inc()
	m.h.latency.WithLabelValues(owner, hook).Observe(latency.Seconds())
}

func (m hookMetrics) Backlog(endpoint string, pending int, oldestAge time.Duration) {
	owner, hook := m.h.label(endpoint)
	if hook == "other" {
		return // a gauge of a sum would read as one webhook's
	}
	m.h.backlog.WithLabelValues(owner, hook).Set(float64(pending))
	m.h.oldest.WithLabelValues(owner, hook).Set(oldestAge.Seconds())
}

func (m hookMetrics) Trimmed(endpoint string, n int) {
	owner, hook := m.h.label(endpoint)
	m.h.trimmed.WithLabelValues(owner, hook).Add(float64(n))
}

func (m hookMetrics) Paused(endpoint string) {
	owner, hook := m.h.label(endpoint)
	m.h.paused.WithLabelValues(owner, hook).Inc()
}
