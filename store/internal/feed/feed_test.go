package feed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/feed"
	"github.com/ctxkit/ctxkit/view"
)

// memLog is an events table in memory, with the reads a Feed makes
// counted.
type memLog struct {
	mu       sync.Mutex
	changes  []store.Change
	loads    atomic.Int64
	backlogs atomic.Int64
	fail     atomic.Pointer[error] // Load fails with it while set
	slowLoad time.Duration
	pad      int // Load adds a fresh tag of this many bytes to each change
}

func (l *memLog) source() feed.Source {
	return feed.Source{Load: l.load, Contexts: l.contexts, Backlog: l.backlog, Latest: l.latest}
}

// contexts sets the contexts of cs from the log, as a backend's query by
// Seq does.
func (l *memLog) contexts(ctx context.Context, cs []*store.Change) error {
	if err := l.fail.Load(); err != nil {
		return *err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cs {
		for _, have := range l.changes {
			if have.Seq == c.Seq {
				c.Context, c.ContextOpen = have.Context, have.ContextOpen
			}
		}
	}
	return nil
}

func (l *memLog) load(ctx context.Context, after int64, limit int, withContext bool) ([]store.Change, error) {
	l.loads.Add(1)
	if err := l.fail.Load(); err != nil {
		return nil, *err
	}
	if l.slowLoad > 0 {
		time.Sleep(l.slowLoad)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []store.Change
	for _, c := range l.changes {
		if c.Seq > after && len(out) < limit {
			if l.pad > 0 {
				c.Tags = append(slices.Clone(c.Tags), strings.Repeat("x", l.pad))
			}
			if !withContext {
				c.Context, c.ContextOpen = nil, false
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func (l *memLog) backlog(ctx context.Context, a store.Actor, after int64, limit int, withContext bool) ([]store.Change, error) {
	l.backlogs.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []store.Change
	for _, c := range l.changes {
		if c.Seq > after && c.VisibleTo(a) && len(out) < limit {
			if !withContext {
				c.Context, c.ContextOpen = nil, false
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func (l *memLog) latest(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.changes) == 0 {
		return 0, nil
	}
	return l.changes[len(l.changes)-1].Seq, nil
}

// add commits a change (numbered with a gap now and then, as a sequence
// whose numbers a rollback used up) and wakes the feed.
func (l *memLog) add(f *feed.Feed, c store.Change) store.Change {
	l.mu.Lock()
	c.Seq = 1
	if n := len(l.changes); n > 0 {
		c.Seq = l.changes[n-1].Seq + 1 + int64(rand.IntN(2))
	}
	c.BreadcrumbID = fmt.Sprint("b", c.Seq)
	l.changes = append(l.changes, c)
	l.mu.Unlock()
	f.Wake()
	return c
}

// expected is what a stream for a with filter, starting after seq after,
// must see.
func (l *memLog) expected(a store.Actor, filter *store.Selector, after int64) []store.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []store.Event
	for _, c := range l.changes {
		var doc any
		if raw := c.ContextFor(a); raw != nil {
			doc, _ = view.DecodeJSON(raw)
		}
		if c.Seq > after && c.VisibleTo(a) && filter.Match(&c.Event, doc) {
			out = append(out, c.Event)
		}
	}
	return out
}

var owners = []string{"acme", "globex"}
var agents = []string{"alice", "bob", "carol"}

func randomChange(r *rand.Rand) store.Change {
	vis := []store.Visibility{store.Team, store.Private, store.Public}[r.IntN(3)]
	var tags []string
	for _, t := range []string{"hot", "cold", "x"} {
		if r.IntN(2) == 0 {
			tags = append(tags, t)
		}
	}
	return store.Change{
		Event: store.Event{Kind: store.Created, Version: 1, Tags: tags, SchemaName: []string{"", "s.v1", "s.v2"}[r.IntN(3)],
			At: time.Now()},
		OwnerID: owners[r.IntN(2)], Visibility: vis, CreatedBy: agents[r.IntN(3)],
		Context: json.RawMessage(fmt.Sprintf(`{"n":%d}`, r.IntN(3))),
		// Now and then a deleted or budgeted record's, which only
		// curators match on.
		ContextOpen: r.IntN(4) != 0,
	}
}

type feedSub struct {
	a      store.Actor
	filter *store.Selector
	after  int64
	mu     sync.Mutex
	got    []store.Event
	err    error
	done   chan struct{}
}

// open starts a stream that records what it receives until ctx ends.
func open(ctx context.Context, f *feed.Feed, a store.Actor, filter *store.Selector, after int64, gate <-chan struct{}) *feedSub {
	s := &feedSub{a: a, filter: filter, after: after, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for e, err := range f.Events(ctx, a, after, filter) {
			if gate != nil {
				<-gate // a consumer that does not read until the gate opens
			}
			s.mu.Lock()
			if err != nil {
				s.err = err
			} else {
				s.got = append(s.got, e)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *feedSub) snapshot() ([]store.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got), s.err
}

// waitFor waits until s has received exactly want, and fails the test if
// it receives anything else or nothing more for 5s.
func (s *feedSub) waitFor(t *testing.T, want []store.Event) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := s.snapshot()
		if err != nil {
			t.Fatalf("%+v %+v: %v", s.a, s.filter, err)
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			if !equalEvents(got, want) {
				t.Fatalf("%+v %+v after %d: got %d events %v, want %d %v", s.a, s.filter, s.after, len(got), seqs(got), len(want), seqs(want))
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func equalEvents(a, b []store.Event) bool {
	return slices.EqualFunc(a, b, func(x, y store.Event) bool {
		return x.Seq == y.Seq && x.BreadcrumbID == y.BreadcrumbID && slices.Equal(x.Tags, y.Tags) && x.SchemaName == y.SchemaName
	})
}

func seqs(es []store.Event) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// actorsAndFilters are streams of every kind: each owner's agents,
// curators, and other owners, with and without filters.
func actorsAndFilters() (as []store.Actor, fs []*store.Selector) {
	for _, o := range append(owners, "initech") {
		for _, ag := range agents {
			as = append(as, store.Actor{OwnerID: o, AgentID: ag})
		}
		as = append(as, store.Actor{OwnerID: o, AgentID: "root", Curator: true})
	}
	for _, src := range []string{`{}`, `{"all_tags":["hot"]}`, `{"all_tags":["hot","cold"]}`, `{"schema_name":"s.v1"}`,
		`{"all_tags":["x"],"schema_name":"s.v2"}`, `{"context_match":[{"path":"$.n","op":"eq","value":1}]}`,
		`{"any_tags":["cold","x"],"context_match":[{"path":"$.n","op":"ne","value":2}]}`} {
		sel, err := store.ParseSelector([]byte(src))
		if err != nil {
			panic(err)
		}
		fs = append(fs, sel)
	}
	return as, fs
}

// TestFeedFanOut: streams of different owners, agents and filters, opened
// before and during interleaved writes, some resuming from an earlier
// change, each get exactly the changes they may see, in order, with no gap
// and no repeat; the events table is read once per wake-up, not once per
// stream.
func TestFeedFanOut(t *testing.T) {
	log := &memLog{}
	// Pages as large for streams that read contexts as for the others: each
	// stream's backlog is one read.
	f := feed.New(log.source(), feed.Options{ContextPage: 512})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		log.add(f, randomChange(r))
	}
	first, _ := log.latest(ctx)
	as, fs := actorsAndFilters()
	var subs []*feedSub
	start := func(after int64) {
		for _, a := range as {
			for _, filter := range fs {
				subs = append(subs, open(ctx, f, a, filter, after, nil))
			}
		}
	}
	start(-1)
	start(0)
	for f.Streams() < len(subs) {
		time.Sleep(time.Millisecond) // the streams after -1 start after first
	}
	const writes = 200
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wr := rand.New(rand.NewPCG(3, 4))
		for i := range writes {
			log.add(f, randomChange(wr))
			if i%20 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	time.Sleep(2 * time.Millisecond)
	start(10) // while the writes go on
	wg.Wait()
	for _, s := range subs {
		after := s.after
		if after < 0 {
			after = first // the newest change when it started
		}
		s.waitFor(t, log.expected(s.a, s.filter, after))
	}
	if n, max := log.backlogs.Load(), int64(len(subs)); n != max {
		t.Errorf("%d backlog reads for %d streams that kept up: want one each", n, max)
	}
	if n := log.loads.Load(); n > writes+20 {
		t.Errorf("%d reads of the events table for %d writes and %d streams", n, writes, len(subs))
	}
}

// TestFeedSlowConsumer: a stream whose consumer stops reading holds no
// more than its buffer, holds up neither the reader nor the other
// streams, and once it reads again gets every change it missed, in order,
// from the database.
func TestFeedSlowConsumer(t *testing.T) {
	log := &memLog{}
	f := feed.New(log.source(), feed.Options{Buffer: 4, Page: 16})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	gate := make(chan struct{})
	slow := open(ctx, f, a, nil, 0, gate)
	fast := open(ctx, f, a, nil, 0, nil)
	for i := range 100 {
		log.add(f, store.Change{Event: store.Event{Kind: store.Created, Version: int64(i)}, OwnerID: "acme", Visibility: store.Team, CreatedBy: "bob"})
		if i%10 == 0 {
			// The fast stream keeps up while the slow one reads nothing.
			fast.waitFor(t, log.expected(a, nil, 0))
		}
	}
	want := log.expected(a, nil, 0)
	fast.waitFor(t, want)
	if got, _ := slow.snapshot(); len(got) != 0 {
		t.Fatalf("the gated consumer received %d", len(got))
	}
	close(gate)
	slow.waitFor(t, want)
	if log.backlogs.Load() < 3 {
		t.Errorf("%d backlog reads: the slow stream did not catch up from the database", log.backlogs.Load())
	}
}

// TestFeedStalledStreamsHoldLittle: streams whose consumers stop reading
// hold at most their buffers, however much is written meanwhile; the
// changes they missed stay in the database, not in memory.
func TestFeedStalledStreamsHoldLittle(t *testing.T) {
	const (
		streams = 20
		writes  = 2000
		pad     = 25_000 // bytes per change as the reader loads it: 50 MB in all
	)
	log := &memLog{pad: pad}
	// Pages of 64 changes: the reader holds at most a page or two at a
	// time besides what the streams' buffers hold (256 changes each).
	f := feed.New(log.source(), feed.Options{Page: 64})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	gate := make(chan struct{})
	var subs []*feedSub
	for range streams {
		subs = append(subs, open(ctx, f, a, nil, 0, gate))
	}
	probe := open(ctx, f, store.Actor{OwnerID: "probe", AgentID: "p"}, nil, 0, nil)
	for f.Streams() < streams+1 {
		time.Sleep(time.Millisecond)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range writes {
		log.add(f, store.Change{Event: store.Event{Kind: store.Updated}, OwnerID: "acme", Visibility: store.Team})
	}
	// Wait until the reader has handed out the last change: it hands them
	// out in order, and the probe's comes last.
	log.add(f, store.Change{Event: store.Event{Kind: store.Created}, OwnerID: "probe", Visibility: store.Team})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if got, _ := probe.snapshot(); len(got) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader did not hand out the last change")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 12<<20 {
		t.Fatalf("the heap grew by %d MiB with %d stalled streams and %d MB of changes", grown>>20, streams, writes*pad/1_000_000)
	}
	close(gate)
	want := seqs(log.expected(a, nil, 0))
	for _, s := range subs {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			got, err := s.snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) >= len(want) || time.Now().After(deadline) {
				if !slices.Equal(seqs(got), want) {
					t.Fatalf("a stalled stream got %d changes, want %d, in order", len(got), len(want))
				}
				break
			}
		}
	}
}

// TestFeedWakeFor: changes of owners with no open stream do not make the
// reader read; a stream's own owner's change does, and brings the others'
// along in the same read.
func TestFeedWakeFor(t *testing.T) {
	log := &memLog{}
	f := feed.New(log.source(), feed.Options{})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acme := store.Actor{OwnerID: "acme", AgentID: "alice", Curator: true}
	s := open(ctx, f, acme, nil, 0, nil)
	for f.Streams() < 1 {
		time.Sleep(time.Millisecond)
	}
	add := func(owner string) {
		log.mu.Lock()
		c := store.Change{Event: store.Event{Kind: store.Created, Seq: int64(len(log.changes) + 1)}, OwnerID: owner, Visibility: store.Team}
		log.changes = append(log.changes, c)
		log.mu.Unlock()
		f.WakeFor(owner)
	}
	for range 50 {
		add("globex")
	}
	time.Sleep(20 * time.Millisecond)
	if n := log.loads.Load(); n != 0 {
		t.Fatalf("%d reads for changes no open stream may see", n)
	}
	add("acme")
	s.waitFor(t, log.expected(acme, nil, 0))
	if n := log.loads.Load(); n != 1 {
		t.Fatalf("%d reads for one change", n)
	}
}

// TestFeedEndsCleanly: a stream whose context ends leaves nothing behind:
// no goroutine, no subscription; the reader stops reading when none is
// open.
func TestFeedEndsCleanly(t *testing.T) {
	log := &memLog{}
	f := feed.New(log.source(), feed.Options{})
	defer f.Close()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	var subs []*feedSub
	for range 100 {
		subs = append(subs, open(ctx, f, a, nil, -1, nil))
	}
	for f.Streams() < 100 {
		time.Sleep(time.Millisecond)
	}
	log.add(f, store.Change{Event: store.Event{Kind: store.Created}, OwnerID: "acme", Visibility: store.Team})
	cancel()
	for _, s := range subs {
		<-s.done
	}
	if n := f.Streams(); n != 0 {
		t.Fatalf("%d streams still subscribed", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left, %d before", n, before)
	}
	loads := log.loads.Load()
	for range 10 {
		log.add(f, store.Change{Event: store.Event{Kind: store.Created}, OwnerID: "acme", Visibility: store.Team})
	}
	time.Sleep(20 * time.Millisecond)
	if n := log.loads.Load(); n != loads {
		t.Fatalf("%d reads of the events table with no stream open", n-loads)
	}
}

// TestFeedReaderFailure: when the reader cannot read the events table,
// every stream ends with the error (its client resumes from the last event
// it got); streams opened once the database is back work.
func TestFeedReaderFailure(t *testing.T) {
	log := &memLog{}
	f := feed.New(log.source(), feed.Options{})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	s := open(ctx, f, a, nil, 0, nil)
	for f.Streams() < 1 {
		time.Sleep(time.Millisecond)
	}
	gone := errors.New("database gone")
	log.fail.Store(&gone)
	log.add(f, store.Change{Event: store.Event{Kind: store.Created}, OwnerID: "acme", Visibility: store.Team})
	<-s.done
	if _, err := s.snapshot(); !errors.Is(err, gone) {
		t.Fatalf("stream ended with %v, want the reader's error", err)
	}
	log.fail.Store(nil)
	again := open(ctx, f, a, nil, 0, nil)
	log.add(f, store.Change{Event: store.Event{Kind: store.Created}, OwnerID: "acme", Visibility: store.Team})
	again.waitFor(t, log.expected(a, nil, 0))
}

// TestFeedClose: closing the store ends its streams with an error a
// client can retry on, and refuses new ones.
func TestFeedClose(t *testing.T) {
	log := &memLog{}
	f := feed.New(log.source(), feed.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	s := open(ctx, f, a, nil, 0, nil)
	for f.Streams() < 1 {
		time.Sleep(time.Millisecond)
	}
	f.Close()
	<-s.done
	if _, err := s.snapshot(); !store.IsCode(err, store.CodeUnavailable) {
		t.Fatalf("stream ended with %v", err)
	}
	after := open(ctx, f, a, nil, 0, nil)
	<-after.done
	if _, err := after.snapshot(); !store.IsCode(err, store.CodeUnavailable) {
		t.Fatalf("stream on a closed feed: %v", err)
	}
}

// TestFeedHandOver: streams that open while the reader is in the middle
// of a slow read, and while no stream is open (the reader has stopped
// following), miss nothing between their backlog and what the reader
// hands them.
func TestFeedHandOver(t *testing.T) {
	log := &memLog{slowLoad: 2 * time.Millisecond}
	f := feed.New(log.source(), feed.Options{Page: 3})
	defer f.Close()
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			log.add(f, store.Change{Event: store.Event{Kind: store.Updated}, OwnerID: "acme", Visibility: store.Team})
			time.Sleep(500 * time.Microsecond)
		}
	}()
	for round := range 30 {
		ctx, cancel := context.WithCancel(context.Background())
		after, _ := log.latest(ctx)
		after = max(0, after-int64(round%5)) // below 0 would mean "from the newest"
		s := open(ctx, f, a, nil, after, nil)
		time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond)
		cur, _ := log.latest(ctx)
		want := log.expected(a, nil, after)
		want = slices.DeleteFunc(want, func(e store.Event) bool { return e.Seq > cur })
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, err := s.snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) >= len(want) {
				if !equalEvents(got[:len(want)], want) {
					t.Fatalf("round %d after %d: got %v, want %v", round, after, seqs(got), seqs(want))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d after %d: got %v, want %v", round, after, seqs(got), seqs(want))
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-s.done
	}
	close(stop)
	wg.Wait()
}

func TestChangeVisibility(t *testing.T) {
	// A change is visible exactly when its breadcrumb would be writable.
	as, _ := actorsAndFilters()
	for _, a := range as {
		for _, o := range owners {
			for _, v := range []store.Visibility{store.Team, store.Private, store.Public} {
				for _, by := range agents {
					c := store.Change{OwnerID: o, Visibility: v, CreatedBy: by}
					b := store.Breadcrumb{OwnerID: o, Visibility: v, CreatedBy: by}
					if c.VisibleTo(a) != store.Writable(a, &b) {
						t.Errorf("%+v and %s/%s/%s: %v", a, o, v, by, c.VisibleTo(a))
					}
				}
			}
		}
	}
}

// TestFeedWatch: a watcher hears of every Wake and WakeFor, with or
// without open streams, and of none after its stop; the reader is not
// made to read for it.
func TestFeedWatch(t *testing.T) {
	log := &memLog{}
	f := feed.New(log.source(), feed.Options{})
	defer f.Close()
	var a, b atomic.Int64
	stopA := f.Watch(func() { a.Add(1) })
	stopB := f.Watch(func() { b.Add(1) })
	f.Wake()
	f.WakeFor("acme")
	f.WakeFor("globex")
	stopA()
	stopA() // twice is harmless
	f.WakeFor("acme")
	if a.Load() != 3 || b.Load() != 4 {
		t.Fatalf("watchers told %d and %d times, want 3 and 4", a.Load(), b.Load())
	}
	stopB()
	f.Wake()
	if b.Load() != 4 {
		t.Fatalf("a stopped watcher was told")
	}
	if n := log.loads.Load(); n != 0 {
		t.Fatalf("%d reads with no stream open", n)
	}
}
