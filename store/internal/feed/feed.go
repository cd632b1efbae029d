// Package feed serves a store backend's event streams: one reader of the
// backend's events table hands each change to every stream allowed to see
// it. Both backends (store/sqlite, store/postgres) serve Store.Events
// with it.
package feed

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// Source is how a Feed reads a backend's events table.
type Source struct {
	// Load returns up to limit changes of every owner with Seq > after, in
	// Seq order. Backends commit changes in Seq order, so once Load has
	// returned seq N, no change numbered N or less is still to come. With
	// withContext, created and updated changes carry the breadcrumb's
	// context at their version (Change.Context and ContextOpen). The
	// reader asks without: it reads contexts with Contexts, for just the
	// changes a context stream may see.
	Load func(ctx context.Context, after int64, limit int, withContext bool) ([]store.Change, error)
	// Contexts sets Context and ContextOpen of the given changes (created
	// or updated ones, at most Options.ContextPage of them), found by Seq.
	Contexts func(ctx context.Context, cs []*store.Change) error
	// Backlog returns up to limit changes a may see with Seq > after, in
	// Seq order (the backend's own query, scoped to the actor's owner),
	// with OwnerID, Visibility and CreatedBy (what ContextFor reads) and,
	// with withContext, Context and ContextOpen.
	Backlog func(ctx context.Context, a store.Actor, after int64, limit int, withContext bool) ([]store.Change, error)
	// Latest is the backend's LatestSeq.
	Latest func(ctx context.Context) (int64, error)
}

// Options tune a Feed; the zero value is a sensible default.
type Options struct {
	// Buffer is how many changes each stream holds for its consumer
	// (default 256). A stream whose consumer falls further behind stops
	// being handed changes and catches up from the database by itself.
	Buffer int
	// Page is how many changes one read of the events table returns at most
	// (default 512).
	Page int
	// ContextPage is Page for reads that carry contexts (up to
	// store.MaxContextBytes each), for streams whose selectors have
	// context conditions, and how many contexts the reader holds at once
	// (default 16).
	ContextPage int
	// Poll is how often the feed reads the events table while streams are
	// open even without a Wake (default: never): a safety net for backends
	// whose wake-ups travel over a connection that can drop.
	Poll time.Duration
}

// Feed serves the event streams of one store instance: a single reader
// loads each new change once, after Wake says there may be one, and hands
// it to the streams allowed to see it. A stream replays its backlog with
// the backend's own query and then takes changes from the reader, so the
// cost of a change is one read of the events table, however many streams
// are open.
//
// A stream's consumer never holds the reader up: each stream has a bounded
// buffer, and a change that finds it full is dropped for that stream,
// which then reads what it missed from the database (its backlog query,
// from the last change it delivered) before going on. Each stream thus
// still sees every change it may see exactly once, in Seq order.
type Feed struct {
	src  Source
	opts Options

	wake chan struct{} // capacity 1: wake-ups while the reader reads merge
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{} // closed when the reader has returned

	// watchers are told of every Wake and WakeFor (copy on write: a
	// commit reads it without a lock).
	watchers atomic.Pointer[[]*func()]
	wmu      sync.Mutex // serialises changes of watchers

	mu     sync.Mutex
	owners map[string]map[*feedStream]struct{} // open streams by actor owner
	n      int                                 // open streams
	cursor int64                               // every change up to it has been handed out
	known  bool                                // cursor is set (only while streams are open)
	closed bool
}

// feedStream is one open stream, as the reader sees it.
type feedStream struct {
	a    store.Actor
	sel  *store.Selector
	ch   chan *store.Event // shared with the other streams: read only
	lost atomic.Bool       // a change was dropped: read the database before going on
	// lostKick wakes a consumer that emptied ch before lost was set, so a
	// dropped change never waits for the next one to be found.
	lostKick chan struct{}
	end      chan struct{} // closed by the feed, with err, to end the stream
	err      error
}

// New starts a feed's reader; Close stops it.
func New(src Source, opts Options) *Feed {
	if opts.Buffer <= 0 {
		opts.Buffer = 256
	}
	if opts.Page <= 0 {
		opts.Page = 512
	}
	if opts.ContextPage <= 0 {
		opts.ContextPage = 16
	}
	ctx, stop := context.WithCancel(context.Background())
	f := &Feed{
		src: src, opts: opts,
		wake: make(chan struct{}, 1),
		ctx:  ctx, stop: stop,
		done:   make(chan struct{}),
		owners: map[string]map[*feedStream]struct{}{},
	}
	go f.run()
	return f
}

// Wake tells the feed that changes may have been committed. It never blocks.
func (f *Feed) Wake() {
	f.tellWatchers()
	f.wakeReader()
}

func (f *Feed) wakeReader() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// WakeFor is Wake for a change of owner's, committed before the call: it
// wakes the reader only when a stream of that owner is open. A stream that
// opens after the check reads the change from its backlog; the reader
// loads it with the next change it is woken for.
func (f *Feed) WakeFor(owner string) {
	f.tellWatchers()
	f.mu.Lock()
	_, open := f.owners[owner]
	f.mu.Unlock()
	if open {
		f.wakeReader()
	}
}

// Watch calls fn after every Wake and WakeFor, whether or not a stream is
// open, until stop is called: for readers of the events table other than
// streams (the webhook fan-out). fn runs on the committing goroutine, so
// it must not block; a burst of commits calls it once per commit, and fn
// merges them (a send on a channel of capacity 1 that drops when full).
func (f *Feed) Watch(fn func()) (stop func()) {
	p := &fn
	f.wmu.Lock()
	defer f.wmu.Unlock()
	var next []*func()
	if cur := f.watchers.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, p)
	f.watchers.Store(&next)
	return func() {
		f.wmu.Lock()
		defer f.wmu.Unlock()
		cur := f.watchers.Load()
		if cur == nil {
			return
		}
		var rest []*func()
		for _, q := range *cur {
			if q != p {
				rest = append(rest, q)
			}
		}
		f.watchers.Store(&rest)
	}
}

func (f *Feed) tellWatchers() {
	if ws := f.watchers.Load(); ws != nil {
		for _, fn := range *ws {
			(*fn)()
		}
	}
}

// Streams is the number of open streams.
func (f *Feed) Streams() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// errFeedClosed ends the streams of a closed store.
var errFeedClosed = &store.Error{Code: store.CodeUnavailable, Msg: "the store is closed"}

// Close stops the reader and ends every open stream with an error.
func (f *Feed) Close() {
	f.stop()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.endAll(errFeedClosed)
}

// endAll ends every open stream with err; f.mu is held.
func (f *Feed) endAll(err error) {
	for owner, set := range f.owners {
		for s := range set {
			s.err = err
			close(s.end)
		}
		delete(f.owners, owner)
	}
	f.n = 0
	f.known = false
}

func (f *Feed) run() {
	defer close(f.done)
	var poll <-chan time.Time
	if f.opts.Poll > 0 {
		t := time.NewTicker(f.opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.wake:
		case <-poll:
		}
		f.read()
	}
}

// read hands out every change after the cursor, a page at a time. It reads
// nothing while no stream is open. Contexts are read only for the changes
// a context stream may see, at most ContextPage at a time, so a context
// stream of one owner costs the other owners' streams nothing.
func (f *Feed) read() {
	for {
		f.mu.Lock()
		if !f.known {
			f.mu.Unlock()
			return
		}
		from := f.cursor
		f.mu.Unlock()

		page := f.opts.Page
		changes, err := f.src.Load(f.ctx, from, page, false)
		if err != nil {
			f.fail(err)
			return
		}
		for start := 0; start < len(changes); {
			end, need := f.needContexts(changes, start)
			if len(need) > 0 {
				if err := f.src.Contexts(f.ctx, need); err != nil {
					f.fail(err)
					return
				}
			}
			f.hand(changes[start:end], need)
			// The contexts are not kept past their part of the page.
			for _, c := range need {
				c.Context = nil
			}
			start = end
		}
		if len(changes) < page {
			return
		}
	}
}

// fail ends every stream with the reader's err, unless the feed is
// closing: the streams cannot go on without the reader, and their clients
// resume from the last event they got.
func (f *Feed) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() == nil {
		f.endAll(err)
	}
}

// wantsContext reports whether a stream open now has a context condition
// and may see c, whose context it then needs; f.mu is held.
func (f *Feed) wantsContext(c *store.Change) bool {
	if c.Kind != store.Created && c.Kind != store.Updated {
		return false
	}
	for s := range f.owners[c.OwnerID] {
		if s.sel.NeedsContext() && c.VisibleTo(s.a) {
			return true
		}
	}
	return false
}

// needContexts returns the end of the part of changes from start on whose
// contexts are read together (at most ContextPage of them), and the
// changes of it whose contexts a stream needs.
func (f *Feed) needContexts(changes []store.Change, start int) (end int, need []*store.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	end = start
	for end < len(changes) && len(need) < f.opts.ContextPage {
		c := &changes[end]
		end++
		// One at or below the cursor is not handed out (see hand).
		if c.Seq > f.cursor && f.wantsContext(c) {
			need = append(need, c)
		}
	}
	return end, need
}

// hand gives each of changes to the streams that may see it and whose
// selectors pass it. need (in Seq order, pointing into changes) are the
// changes whose contexts were read, for the context streams open when
// needContexts ran.
func (f *Feed) hand(changes []store.Change, need []*store.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range changes {
		c := &changes[i]
		loaded := len(need) > 0 && need[0] == c
		if loaded {
			need = need[1:]
		}
		// A cursor that moved while reading was set afresh by the
		// first stream after none were open; that stream reads
		// everything up to it from the database.
		if c.Seq <= f.cursor {
			continue
		}
		f.cursor = c.Seq
		// One copy per change, shared by its streams: a pointer into
		// changes would keep the whole page alive while a stream holds it.
		var e *store.Event
		// The context is decoded once per change, and only for streams
		// that may see the change. Curators and other agents may be
		// allowed different contexts (ContextFor), so each is decoded
		// apart.
		var docs [2]struct {
			doc     any
			decoded bool
		}
		for s := range f.owners[c.OwnerID] {
			if !c.VisibleTo(s.a) {
				continue
			}
			var doc any
			if s.sel.NeedsContext() && (c.Kind == store.Created || c.Kind == store.Updated) {
				if !loaded {
					// The stream opened after needContexts ran, so after
					// Load read c: its backlog, read after it opened,
					// holds c.
					continue
				}
				k := 0
				if s.a.Curator {
					k = 1
				}
				if !docs[k].decoded {
					docs[k].doc, docs[k].decoded = decodeContext(c.ContextFor(s.a)), true
				}
				doc = docs[k].doc
			}
			if !s.sel.Match(&c.Event, doc) {
				continue
			}
			if e == nil {
				e = new(store.Event)
				*e = c.Event
			}
			select {
			case s.ch <- e:
			default:
				f.drop(s)
			}
		}
	}
}

// drop marks a change lost for s: s reads the database before going on.
func (f *Feed) drop(s *feedStream) {
	s.lost.Store(true)
	select {
	case s.lostKick <- struct{}{}:
	default:
	}
}

// decodeContext decodes a change's context for a selector's conditions;
// nil (no context: every condition fails) when it has none.
func decodeContext(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	doc, err := view.DecodeJSON(raw)
	if err != nil {
		return nil
	}
	return doc
}

// subscribe opens a stream for a: from now on the reader hands it every
// change after the cursor that it may see.
func (f *Feed) subscribe(ctx context.Context, a store.Actor, sel *store.Selector) (*feedStream, error) {
	f.mu.Lock()
	known, closed := f.known, f.closed
	f.mu.Unlock()
	var latest int64
	if !known && !closed {
		// The first stream sets the cursor: no change committed before
		// this is handed out by the reader; the stream reads those from
		// the database.
		var err error
		if latest, err = f.src.Latest(ctx); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errFeedClosed
	}
	if !f.known {
		f.cursor, f.known = latest, true
	}
	s := &feedStream{a: a, sel: sel, ch: make(chan *store.Event, f.opts.Buffer), end: make(chan struct{}),
		lostKick: make(chan struct{}, 1)}
	set := f.owners[a.OwnerID]
	if set == nil {
		set = map[*feedStream]struct{}{}
		f.owners[a.OwnerID] = set
	}
	set[s] = struct{}{}
	f.n++
	return s, nil
}

func (f *Feed) unsubscribe(s *feedStream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.owners[s.a.OwnerID]
	if _, ok := set[s]; !ok {
		return // ended by the feed
	}
	delete(set, s)
	if len(set) == 0 {
		delete(f.owners, s.a.OwnerID)
	}
	f.n--
	if f.n == 0 {
		// Nobody listens: the reader stops reading, and the next stream
		// starts it from the newest change.
		f.known = false
	}
}

// Events yields the changes a may see that pass sel with Seq > after:
// first the backlog, then live changes until ctx ends; after < 0 starts
// after the newest change. It implements store.Store's Events for a
// backend.
func (f *Feed) Events(ctx context.Context, a store.Actor, after int64, sel *store.Selector) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		sel, err := sel.Compile()
		if err != nil {
			yield(store.Event{}, err)
			return
		}
		withContext := sel.NeedsContext()
		page := f.opts.Page
		if withContext {
			page = min(page, f.opts.ContextPage)
		}
		if after < 0 {
			var err error
			if after, err = f.src.Latest(ctx); err != nil {
				yield(store.Event{}, err)
				return
			}
		}
		// Subscribe first, then read the backlog: a change committed after
		// subscribing comes from the reader, one committed before is in
		// the backlog, and one in both is skipped by its Seq.
		s, err := f.subscribe(ctx, a, sel)
		if err != nil {
			if ctx.Err() == nil {
				yield(store.Event{}, err)
			}
			return
		}
		defer f.unsubscribe(s)
		last := after
		// catchUp yields what the database holds after last; false means
		// the stream is over.
		catchUp := func() bool {
			for {
				events, err := f.src.Backlog(ctx, a, last, page, withContext)
				if err != nil {
					if ctx.Err() == nil {
						yield(store.Event{}, err)
					}
					return false
				}
				for i := range events {
					e := &events[i].Event
					last = e.Seq
					var doc any
					if withContext {
						doc = decodeContext(events[i].ContextFor(a))
					}
					if sel.Match(e, doc) && !yield(*e, nil) {
						return false
					}
				}
				if len(events) < page {
					return true
				}
			}
		}
		if !catchUp() {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.end:
				yield(store.Event{}, s.err)
				return
			case <-s.lostKick:
				if s.lost.Swap(false) {
					if !catchUp() {
						return
					}
				}
			case e := <-s.ch:
				// A change was dropped while this one waited, or before it
				// was handed over: the database has both (the flag is
				// cleared before reading it).
				if s.lost.Swap(false) {
					if !catchUp() {
						return
					}
					continue
				}
				if e.Seq <= last {
					continue
				}
				last = e.Seq
				if !yield(*e, nil) {
					return
				}
			}
		}
	}
}
