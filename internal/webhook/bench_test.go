package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDispatch100Endpoints is the figure: 100 endpoints on
// loopback (85 healthy, 10 answering after 2 s, 5 refusing connections),
// 10,000 events a minute spread over them, each event one delivery to
// one endpoint, for CTXKIT_WEBHOOK_BENCH_DURATION (default 3 s, so the
// one-pass run stays short; the figures want 60 s). It reports the
// healthy endpoints' delivery lag (event committed to request received):
// p50, p99 and max, how many of their deliveries had not arrived when
// the run ended, how many arrived twice, and the healthy deliveries made
// per second (first send to last arrival). It asserts nothing on time.
//
// CTXKIT_WEBHOOK_BENCH_PER_MINUTE sets the deliveries per minute (default
// 10,000): set it past what the machine can do (say 3000000) and
// delivered-per-s is the ceiling of signed loopback POSTs of the
// dispatcher over the in-memory queue, receivers included.
func BenchmarkDispatch100Endpoints(b *testing.B) {
	dur := 3 * time.Second
	if v := os.Getenv("CTXKIT_WEBHOOK_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("CTXKIT_WEBHOOK_BENCH_DURATION: %v", err)
		}
		dur = d
	}
	perMinute := 10_000
	if v := os.Getenv("CTXKIT_WEBHOOK_BENCH_PER_MINUTE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CTXKIT_WEBHOOK_BENCH_PER_MINUTE: %q is not a positive count", v)
		}
		perMinute = n
	}
	// The same load with every endpoint healthy is the baseline the
	// figures compare with (a ratio in one run; the machine is shared).
	for _, c := range []struct {
		name       string
		slow, dead int
	}{{"all-healthy", 0, 0}, {"10-slow-5-dead", 10, 5}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r := runLoad(b, dur, perMinute, c.slow, c.dead)
				b.ReportMetric(r.p50.Seconds()*1000, "p50-lag-ms")
				b.ReportMetric(r.p99.Seconds()*1000, "p99-lag-ms")
				b.ReportMetric(r.max.Seconds()*1000, "max-lag-ms")
				b.ReportMetric(float64(r.healthySent), "healthy-sent")
				b.ReportMetric(float64(r.healthySent-r.healthyUnique), "healthy-missing")
				b.ReportMetric(float64(r.healthyGot-r.healthyUnique), "healthy-duplicates")
				b.ReportMetric(r.perSecond, "delivered-per-s")
			}
		})
	}
}

type loadResult struct {
	p50, p99, max                          time.Duration
	healthySent, healthyGot, healthyUnique int
	perSecond                              float64 // healthy unique deliveries per second
}

func runLoad(b *testing.B, dur time.Duration, perMinute, slowN, deadN int) loadResult {
	const endpoints = 100
	secret, err := NewSecret()
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var lags []time.Duration
	seen := map[string]bool{}
	var got atomic.Int64
	var last atomic.Int64 // UnixNano of the latest arrival
	healthy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		var ev struct{ Committed int64 }
		if json.Unmarshal(body, &ev) != nil || Verify(r.Header, body, time.Now(), 0, secret) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		lag := time.Since(time.Unix(0, ev.Committed))
		mu.Lock()
		lags = append(lags, lag)
		seen[r.Header.Get(HeaderID)] = true
		mu.Unlock()
		got.Add(1)
		last.Store(time.Now().UnixNano())
	})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	})
	urls := make([]string, endpoints)
	isHealthy := make([]bool, endpoints)
	var servers []*httptest.Server
	for i := range endpoints {
		switch {
		case i < slowN:
			s := httptest.NewServer(slow)
			servers = append(servers, s)
			urls[i] = s.URL
		case i >= slowN+deadN:
			s := httptest.NewServer(healthy)
			servers = append(servers, s)
			urls[i] = s.URL
			isHealthy[i] = true
		}
	}
	// The dead endpoints' ports are taken and let go after every server
	// is listening, so no server can be given one of them.
	for i := slowN; i < slowN+deadN; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		urls[i] = "http://" + l.Addr().String()
		l.Close()
	}
	defer func() {
		for _, s := range servers {
			s.CloseClientConnections()
			s.Close()
		}
	}()

	q := &MemQueue{}
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true})
	defer c.Close()
	d := NewDispatcher(q, DispatcherOptions{Client: c, MaxInFlight: 64, PerEndpoint: 4})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	// Produce in 50 ms steps, as many events as the rate allows so far.
	start := time.Now()
	sent, healthySent := 0, 0
	tick := time.NewTicker(50 * time.Millisecond)
	for now := range tick.C {
		el := now.Sub(start)
		if el > dur {
			break
		}
		want := int(el.Seconds() * float64(perMinute) / 60)
		for ; sent < want; sent++ {
			ep := sent % endpoints
			body := fmt.Appendf(nil, `{"kind":"updated","seq":%d,"Committed":%d}`, sent, time.Now().UnixNano())
			if err := q.Enqueue(Delivery{Endpoint: fmt.Sprint("ep", ep), Owner: fmt.Sprint("tenant", ep), URL: urls[ep], Message: Message{ID: fmt.Sprint("msg_", sent), Body: body, Secrets: []Secret{secret}}}); err != nil {
				b.Fatal(err)
			}
			if isHealthy[ep] {
				healthySent++
			}
		}
		d.Wake()
	}
	tick.Stop()
	// Let the healthy endpoints catch up, within a bound.
	unique := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	for deadline := time.Now().Add(30 * time.Second); unique() < healthySent && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done

	mu.Lock()
	defer mu.Unlock()
	r := loadResult{healthySent: healthySent, healthyGot: int(got.Load()), healthyUnique: len(seen)}
	if el := time.Unix(0, last.Load()).Sub(start); el > 0 {
		r.perSecond = float64(len(seen)) / el.Seconds()
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		r.p50 = lags[len(lags)*50/100]
		r.p99 = lags[min(len(lags)-1, len(lags)*99/100)]
		r.max = lags[len(lags)-1]
	}
	return r
}
