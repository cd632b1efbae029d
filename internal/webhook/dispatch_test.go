package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing the test after a generous
// bound (the machine running CI is loaded; nothing here measures time).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type record struct {
	d   Delivery
	a   Attempt
	dec Decision
}

// memRecorder and memMetrics keep what the dispatcher reports.
type memRecorder struct {
	mu   sync.Mutex
	recs []record
}

func (r *memRecorder) Record(_ context.Context, d Delivery, a Attempt, dec Decision) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, record{d, a, dec})
	return nil
}

func (r *memRecorder) count(endpoint string, v Verdict) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.recs {
		if x.d.Endpoint == endpoint && x.dec.Verdict == v {
			n++
		}
	}
	return n
}

type memMetrics struct {
	mu       sync.Mutex
	attempts map[string]int
	backlog  map[string]int
	trimmed  map[string]int
	paused   map[string]int
}

func newMetrics() *memMetrics {
	return &memMetrics{attempts: map[string]int{}, backlog: map[string]int{}, trimmed: map[string]int{}, paused: map[string]int{}}
}

func (m *memMetrics) Attempt(e string, c Class, v Verdict, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempts[e+"/"+string(c)+"/"+string(v)]++
}
func (m *memMetrics) Backlog(e string, n int, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.backlog[e] = n
}
func (m *memMetrics) Trimmed(e string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trimmed[e] += n
}
func (m *memMetrics) Paused(e string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused[e]++
}
func (m *memMetrics) get(f func(*memMetrics) int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f(m)
}

// run starts a dispatcher; the test's cleanup stops it and checks that
// Run returned.
func run(t *testing.T, q Queue, o DispatcherOptions) *Dispatcher {
	t.Helper()
	d := NewDispatcher(q, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	})
	return d
}

func enqueue(t *testing.T, q *MemQueue, endpoint, url string, secret Secret, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("msg_%s_%d", endpoint, i)
		body := fmt.Sprintf(`{"kind":"created","seq":%d}`, i)
		if err := q.Enqueue(Delivery{Endpoint: endpoint, Owner: "owner-" + endpoint, URL: url, Message: Message{ID: id, Body: []byte(body), Secrets: []Secret{secret}}}); err != nil {
			t.Fatal(err)
		}
	}
}

func fastPolicy() Policy {
	return Policy{Base: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
}

// TestDispatcherOutcomes: a healthy endpoint gets every delivery once; a
// flaky one (503 with Retry-After: 0, then 200) after retries; one that
// answers 400 sends everything to its dead-letter list at the first try.
func TestDispatcherOutcomes(t *testing.T) {
	healthy := newReceiver(t, true, nil)
	var flakyCalls atomic.Int64
	flaky := newReceiver(t, true, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if flakyCalls.Add(1)%3 != 0 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return false
		}
		return true
	})
	refusing := newReceiver(t, true, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		http.Error(w, "no such hook", http.StatusBadRequest)
		return false
	})
	// The receivers share one test certificate authority.
	c := NewClient(ClientOptions{AllowPrivate: true, TLS: healthy.tls()})
	defer c.Close()
	q := &MemQueue{}
	enqueue(t, q, "healthy", healthy.srv.URL, healthy.secret, 20)
	enqueue(t, q, "flaky", flaky.srv.URL, flaky.secret, 5)
	enqueue(t, q, "refusing", refusing.srv.URL, refusing.secret, 3)
	rec, met := &memRecorder{}, newMetrics()
	run(t, q, DispatcherOptions{Client: c, Policy: fastPolicy(), Recorder: rec, Metrics: met, Poll: 10 * time.Millisecond})

	waitFor(t, "every delivery settled", func() bool { return q.Pending() == 0 })
	if n := healthy.got.Load(); n != 20 {
		t.Errorf("healthy endpoint got %d, want 20", n)
	}
	if n := flaky.got.Load(); n != 5 || rec.count("flaky", Retrying) < 5 {
		t.Errorf("flaky endpoint got %d after %d retries", n, rec.count("flaky", Retrying))
	}
	dead, total := q.DeadLetters()
	if total != 3 || len(dead) != 3 || !strings.Contains(dead[0].Reason, "status 400") || dead[0].Attempt.Excerpt != "no such hook\n" {
		t.Errorf("dead letters %d: %+v", total, dead)
	}
	if healthy.bad.Load()+flaky.bad.Load()+refusing.bad.Load() != 0 {
		t.Error("a receiver refused a signature")
	}
	if got := met.get(func(m *memMetrics) int { return m.attempts["healthy/ok/delivered"] }); got != 20 {
		t.Errorf("metrics: %d healthy deliveries", got)
	}
}

// TestSlowEndpointIsolated: while one endpoint holds its attempts
// forever, the others get everything, and the slow one never has more
// than PerEndpoint attempts in flight.
func TestSlowEndpointIsolated(t *testing.T) {
	release := make(chan struct{})
	var inFlight, most atomic.Int64
	slow := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	var fast []*receiver
	q := &MemQueue{}
	enqueue(t, q, "slow", slow.srv.URL, slow.secret, 50)
	for i := range 5 {
		rc := newReceiver(t, false, nil)
		fast = append(fast, rc)
		enqueue(t, q, fmt.Sprintf("fast%d", i), rc.srv.URL, rc.secret, 30)
	}
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true, Timeout: time.Minute})
	defer c.Close()
	run(t, q, DispatcherOptions{Client: c, MaxInFlight: 8, PerEndpoint: 3, Poll: 10 * time.Millisecond})
	waitFor(t, "the fast endpoints' deliveries", func() bool {
		for _, rc := range fast {
			if rc.got.Load() != 30 {
				return false
			}
		}
		return q.Pending() == 50 // the fast ones settled, not only received
	})
	if m := most.Load(); m > 3 {
		t.Errorf("%d attempts in flight at the slow endpoint, want at most 3", m)
	}
	if slow.got.Load() != 0 || q.Pending() != 50 {
		t.Errorf("slow endpoint: %d delivered, %d pending", slow.got.Load(), q.Pending())
	}
	close(release)
	waitFor(t, "the slow endpoint's deliveries", func() bool { return q.Pending() == 0 })
}

// TestSlowOwnerIsolated: one owner's many hanging endpoints hold their
// share and the slots no one else wants, all but one share of them, so
// another owner's deliveries go out while they hang.
func TestSlowOwnerIsolated(t *testing.T) {
	release := make(chan struct{})
	var inFlight, most atomic.Int64
	slow := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	fast := newReceiver(t, false, nil)
	q := &MemQueue{}
	for i := range 8 {
		for j := range 4 {
			if err := q.Enqueue(Delivery{Endpoint: fmt.Sprintf("slow%d", i), Owner: "tenant-slow", URL: slow.srv.URL,
				Message: Message{ID: fmt.Sprintf("msg_slow%d_%d", i, j), Body: []byte(`{}`), Secrets: []Secret{slow.secret}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := q.Enqueue(Delivery{Endpoint: "fast", Owner: "tenant-fast", URL: fast.srv.URL,
		Message: Message{ID: "msg_fast", Body: []byte(`{}`), Secrets: []Secret{fast.secret}}}); err != nil {
		t.Fatal(err)
	}
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true, Timeout: 10 * time.Minute})
	defer c.Close()
	run(t, q, DispatcherOptions{Client: c, MaxInFlight: 8, PerEndpoint: 4, Poll: 10 * time.Millisecond}) // PerOwner: 8/4
	waitFor(t, "the other owner's delivery", func() bool { return fast.got.Load() == 1 && q.Pending() == 32 })
	// Slots no one else wants are lent to the slow owner, all but one
	// share (2) of them...
	waitFor(t, "the slow owner in the lent slots", func() bool { return inFlight.Load() == 6 })
	// ...and a delivery that comes due for another owner while they are
	// held goes out in the share kept free.
	if err := q.Enqueue(Delivery{Endpoint: "fast", Owner: "tenant-fast", URL: fast.srv.URL,
		Message: Message{ID: "msg_fast_2", Body: []byte(`{}`), Secrets: []Secret{fast.secret}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the other owner's later delivery", func() bool { return fast.got.Load() == 2 })
	if m := most.Load(); m > 6 {
		t.Errorf("%d attempts in flight for one owner, want at most 6 (8 less a share of 2)", m)
	}
	close(release)
	waitFor(t, "the slow owner's deliveries", func() bool { return q.Pending() == 0 })
}

// runStoppable runs a dispatcher over q with a client that may reach
// loopback, and returns what stops it and checks that Run ended so.
func runStoppable(t *testing.T, q Queue) (stop func()) {
	t.Helper()
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true})
	t.Cleanup(func() { c.Close() })
	d := NewDispatcher(q, DispatcherOptions{Client: c})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
	}
}

// TestStopReleases: stopping the dispatcher mid-attempt leaves the
// delivery pending and due at once, not lost and not leased.
func TestStopReleases(t *testing.T) {
	started := make(chan struct{}, 10)
	slow := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		started <- struct{}{}
		<-r.Context().Done()
		return false
	})
	q := &MemQueue{Lease: time.Hour}
	enqueue(t, q, "slow", slow.srv.URL, slow.secret, 2)
	stop := runStoppable(t, q)
	<-started
	<-started
	stop()
	got, err := q.Due(context.Background(), Claim{Limit: 10, PerEndpoint: 10})
	if err != nil || len(got) != 2 || got[0].Attempts != 0 {
		t.Fatalf("after stop: %d due (%v), attempts %+v", len(got), err, got)
	}
}

// cutQueue is a MemQueue whose claims are slow: a claim leases, then
// waits for its context to end or for go; ended first, it answers with
// the context's error, its leases made (a database that committed the
// claim while the stop cut off its answer).
type cutQueue struct {
	*MemQueue
	claiming chan struct{}
	goOn     chan struct{}
}

func (q *cutQueue) Due(ctx context.Context, c Claim) ([]Delivery, error) {
	got, err := q.MemQueue.Due(context.Background(), c)
	if err != nil || len(got) == 0 {
		return got, err
	}
	q.claiming <- struct{}{}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-q.goOn:
		return got, nil
	}
}

// TestStopMidClaimReleases: a stop that comes while a claim is being
// made does not cut the claim off: what it leased is given back at once,
// not left leased until the lease runs out.
func TestStopMidClaimReleases(t *testing.T) {
	healthy := newReceiver(t, true, nil)
	q := &cutQueue{MemQueue: &MemQueue{Lease: time.Hour}, claiming: make(chan struct{}, 1), goOn: make(chan struct{})}
	enqueue(t, q.MemQueue, "e", healthy.srv.URL, healthy.secret, 3)
	stop := runStoppable(t, q)
	<-q.claiming
	// The claim goes on after the stop, as a database's would.
	time.AfterFunc(50*time.Millisecond, func() { close(q.goOn) })
	stop()
	got, err := q.MemQueue.Due(context.Background(), Claim{Limit: 10, PerEndpoint: 10})
	if err != nil || len(got) != 3 {
		t.Fatalf("after a stop mid-claim: %d of 3 due again (%v); the rest stay leased", len(got), err)
	}
	for _, dl := range got {
		if dl.Attempts != 0 {
			t.Fatalf("%s: %d attempts counted for a claim the stop cut short", dl.ID, dl.Attempts)
		}
	}
}

// TestPauseAndResume: an endpoint failing for PauseAfter is paused with
// its reason and its deliveries kept; resumed, they arrive.
func TestPauseAndResume(t *testing.T) {
	var up atomic.Bool
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if !up.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return false
		}
		return true
	})
	q := &MemQueue{}
	enqueue(t, q, "ep", rc.srv.URL, rc.secret, 4)
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true})
	defer c.Close()
	met := newMetrics()
	p := fastPolicy()
	p.PauseAfter = time.Nanosecond
	// One attempt at a time: once the pause shows, none is in flight to
	// fail after the resume below.
	d := run(t, q, DispatcherOptions{Client: c, Policy: p, Metrics: met, PerEndpoint: 1, Poll: 10 * time.Millisecond})
	waitFor(t, "the pause", func() bool { return q.Paused("ep") != "" })
	if r := q.Paused("ep"); !strings.Contains(r, "failing since") || !strings.Contains(r, "status 502") {
		t.Errorf("pause reason %q", r)
	}
	if q.Pending() != 4 {
		t.Errorf("%d pending after the pause, want 4", q.Pending())
	}
	up.Store(true)
	q.Resume("ep")
	d.Wake()
	waitFor(t, "delivery after resuming", func() bool { return rc.got.Load() == 4 })
}

// TestBacklogCap: past the cap, the oldest deliveries are dead-lettered
// and counted.
func TestBacklogCap(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	s, _ := NewSecret()
	q := &MemQueue{}
	enqueue(t, q, "dead", dead, s, 25)
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true})
	defer c.Close()
	met := newMetrics()
	run(t, q, DispatcherOptions{Client: c, Policy: Policy{Base: time.Hour}, Metrics: met, Backlog: 10, Poll: 10 * time.Millisecond, TrimEvery: time.Millisecond})
	waitFor(t, "the trim", func() bool { return met.get(func(m *memMetrics) int { return m.trimmed["dead"] }) == 15 })
	letters, n := q.DeadLetters()
	if n != 15 || !strings.Contains(letters[0].Reason, "backlog over 10") || letters[0].Delivery.Message.ID != "msg_dead_0" {
		t.Fatalf("%d dead letters, first %+v", n, letters[0])
	}
	if q.Pending() != 10 {
		t.Fatalf("%d pending", q.Pending())
	}
}

// TestLease: a claim that outlives its lease loses the delivery to the
// next claimant, and its late result is refused.
func TestLease(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	q := &MemQueue{Lease: time.Minute, Now: func() time.Time { return now }}
	s, _ := NewSecret()
	enqueue(t, q, "ep", "https://hooks.example.com/", s, 1)
	ctx := context.Background()
	claim := Claim{Limit: 10, PerEndpoint: 10}
	first, _ := q.Due(ctx, claim)
	if len(first) != 1 {
		t.Fatalf("%d due", len(first))
	}
	if again, _ := q.Due(ctx, claim); len(again) != 0 {
		t.Fatal("a leased delivery was due again within its lease")
	}
	now = now.Add(time.Minute)
	second, _ := q.Due(ctx, claim)
	if len(second) != 1 || second[0].Lease == first[0].Lease {
		t.Fatalf("after the lease: %+v", second)
	}
	if err := q.Done(ctx, first[0], Attempt{}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("late Done = %v", err)
	}
	if err := q.Done(ctx, second[0], Attempt{}); err != nil || q.Pending() != 0 {
		t.Fatalf("Done = %v, pending %d", err, q.Pending())
	}
}

// TestClaimBounds: Due honours the claim's per-endpoint room.
func TestClaimBounds(t *testing.T) {
	q := &MemQueue{}
	s, _ := NewSecret()
	enqueue(t, q, "a", "https://a.example.com/", s, 10)
	enqueue(t, q, "b", "https://b.example.com/", s, 10)
	got, err := q.Due(context.Background(), Claim{Limit: 100, PerEndpoint: 4, Busy: map[string]int{"a": 3}})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, d := range got {
		per[d.Endpoint]++
	}
	if per["a"] != 1 || per["b"] != 4 {
		t.Fatalf("claimed %v, want a:1 b:4", per)
	}
}

// TestClaimPerOwner: an owner's endpoints together get at most PerOwner
// less those of its already in flight; other owners are not held back.
func TestClaimPerOwner(t *testing.T) {
	q := &MemQueue{}
	for _, e := range []struct{ endpoint, owner string }{{"a", "x"}, {"b", "x"}, {"c", "y"}} {
		for i := range 10 {
			if err := q.Enqueue(Delivery{Endpoint: e.endpoint, Owner: e.owner, URL: "https://" + e.endpoint + ".example.com/",
				Message: Message{ID: fmt.Sprintf("%s%d", e.endpoint, i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := q.Due(context.Background(), Claim{Limit: 100, PerEndpoint: 4, PerOwner: 5, OwnerBusy: map[string]int{"x": 2}})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, d := range got {
		per[d.Owner]++
	}
	if per["x"] != 3 || per["y"] != 4 {
		t.Fatalf("claimed %v, want x:3 y:4", per)
	}
}

// TestClaimFailingEndpoint: while an endpoint is failing, one attempt at
// most is in flight for it, whatever PerEndpoint says.
func TestClaimFailingEndpoint(t *testing.T) {
	ctx := context.Background()
	q := &MemQueue{}
	s, _ := NewSecret()
	enqueue(t, q, "a", "https://a.example.com/", s, 10)
	got, err := q.Due(ctx, Claim{Limit: 1, PerEndpoint: 4})
	if err != nil || len(got) != 1 {
		t.Fatalf("Due = %d, %v", len(got), err)
	}
	if err := q.Retry(ctx, got[0], Attempt{Start: time.Now(), Class: ClassStatus, Status: 500}, time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err = q.Due(ctx, Claim{Limit: 100, PerEndpoint: 4})
	if err != nil || len(got) != 1 || got[0].FailingSince.IsZero() {
		t.Fatalf("failing endpoint: claimed %d (%v), want 1 with FailingSince", len(got), err)
	}
	if more, err := q.Due(ctx, Claim{Limit: 100, PerEndpoint: 4, Busy: map[string]int{"a": 1}}); err != nil || len(more) != 0 {
		t.Fatalf("failing endpoint with one in flight: claimed %d more (%v), want 0", len(more), err)
	}
	if err := q.Done(ctx, got[0], Attempt{Start: time.Now(), Class: ClassOK, Status: 200}); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Due(ctx, Claim{Limit: 100, PerEndpoint: 4}); err != nil || len(got) != 4 {
		t.Fatalf("recovered endpoint: claimed %d (%v), want 4", len(got), err)
	}
}

// TestStalePause: a pause decided by an attempt that began before a
// success or a resume does not take effect.
func TestStalePause(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	q := &MemQueue{Now: func() time.Time { return now }}
	s, _ := NewSecret()
	enqueue(t, q, "ep", "https://hooks.example.com/", s, 2)
	ctx := context.Background()
	got, _ := q.Due(ctx, Claim{Limit: 2, PerEndpoint: 2})
	if err := q.Retry(ctx, got[0], Attempt{Start: t0}, t0); err != nil {
		t.Fatal(err)
	}
	q.Resume("ep")
	if err := q.Pause(ctx, "ep", t0, "stale"); err != nil || q.Paused("ep") != "" {
		t.Fatalf("stale pause after resume took effect: %v %q", err, q.Paused("ep"))
	}
	if err := q.Retry(ctx, got[1], Attempt{Start: t0.Add(time.Second)}, t0); err != nil {
		t.Fatal(err)
	}
	if err := q.Pause(ctx, "ep", t0.Add(time.Second), "failing"); err != nil || q.Paused("ep") != "failing" {
		t.Fatalf("current pause: %v %q", err, q.Paused("ep"))
	}
}

// TestDeadClaimantRecovered: a delivery claimed by a replica that died
// mid-attempt is delivered by another once the lease runs out, and the
// dead replica's late answer is refused.
func TestDeadClaimantRecovered(t *testing.T) {
	rc := newReceiver(t, false, nil)
	q := &MemQueue{Lease: 50 * time.Millisecond}
	enqueue(t, q, "ep", rc.srv.URL, rc.secret, 1)
	lost, err := q.Due(context.Background(), Claim{Limit: 1, PerEndpoint: 1})
	if err != nil || len(lost) != 1 {
		t.Fatalf("claim: %v %d", err, len(lost))
	}
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true})
	defer c.Close()
	run(t, q, DispatcherOptions{Client: c, Poll: 10 * time.Millisecond})
	waitFor(t, "the delivery after the lease", func() bool { return q.Pending() == 0 })
	if rc.got.Load() != 1 {
		t.Fatalf("received %d", rc.got.Load())
	}
	if err := q.Done(context.Background(), lost[0], Attempt{}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the dead claimant's Done = %v", err)
	}
}
