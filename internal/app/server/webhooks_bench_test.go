package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// The endpoints of BenchmarkWebhookLoad: the 100 on loopback.
const (
	hookBenchHealthy = 85
	hookBenchSlow    = 10 // answer after 2 s
	hookBenchDead    = 5  // nothing listens
	hookBenchHooks   = hookBenchHealthy + hookBenchSlow + hookBenchDead
)

// hookBenchConfig is a BenchmarkWebhookLoad run, from the environment;
// the defaults keep the one pass CI makes short (10 events/s for 5 s).
type hookBenchConfig struct {
	rate    int           // events written per second: CTXKIT_HOOK_BENCH_RATE (the 10,000/min is 167)
	dur     time.Duration // how long they are written: CTXKIT_HOOK_BENCH_DURATION
	drain   time.Duration // how long deliveries may take after: CTXKIT_HOOK_BENCH_DRAIN
	backend string        // sqlite | postgres: CTXKIT_HOOK_BENCH_STORE, else CTXKIT_TEST_STORE, else sqlite
	// groups: each event matches one group of the endpoints, 1/groups
	// of them (endpoint i is in group i mod groups, so each group has
	// its share of slow and dead ones): CTXKIT_HOOK_BENCH_MATCH, the
	// percentage of endpoints an event matches (100, 10, 1, …).
	groups int
}

func hookBenchConfigFromEnv(b *testing.B) hookBenchConfig {
	c := hookBenchConfig{rate: 10, dur: 5 * time.Second, drain: 60 * time.Second, backend: "sqlite", groups: 1}
	if os.Getenv("CTXKIT_TEST_STORE") == "postgres" {
		c.backend = "postgres"
	}
	if v := os.Getenv("CTXKIT_HOOK_BENCH_STORE"); v != "" {
		if v != "sqlite" && v != "postgres" {
			b.Fatalf("CTXKIT_HOOK_BENCH_STORE: %q is neither sqlite nor postgres", v)
		}
		c.backend = v
	}
	if v := os.Getenv("CTXKIT_HOOK_BENCH_RATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10_000 {
			b.Fatalf("CTXKIT_HOOK_BENCH_RATE: %q is not a rate of 1 to 10000 events/s", v)
		}
		c.rate = n
	}
	for name, d := range map[string]*time.Duration{"CTXKIT_HOOK_BENCH_DURATION": &c.dur, "CTXKIT_HOOK_BENCH_DRAIN": &c.drain} {
		if v := os.Getenv(name); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 {
				b.Fatalf("%s: %q is not a positive duration", name, v)
			}
			*d = x
		}
	}
	if v := os.Getenv("CTXKIT_HOOK_BENCH_MATCH"); v != "" {
		pc, err := strconv.ParseFloat(v, 64)
		if err != nil || pc < 1 || pc > 100 {
			b.Fatalf("CTXKIT_HOOK_BENCH_MATCH: %q is not a percentage of 1 to 100", v)
		}
		c.groups = int(math.Round(100 / pc))
	}
	return c
}

// BenchmarkWebhookLoad measures, through the HTTP API, with 100 webhooks
// on loopback (85 healthy, 10 answering after 2 s, 5 dead) each event
// matching the share of them hookBenchConfig says, and events written at
// its rate:
//
//   - lag-p50-ms, lag-p99-ms: from an event's timestamp to its first
//     arrival at a healthy endpoint;
//   - undelivered: healthy deliveries not arrived the drain after the
//     last write;
//   - stream-p50-ms-{off,on}, stream-p99-ms-{off,on}: an event stream's
//     latency for the same writes, without webhooks and with them;
//   - events-per-s: the write rate reached; deliveries-per-s: healthy
//     deliveries made from the first write to the last arrival;
//   - cpu-cores-{off,on}: CPU time of the process (server, writer and
//     receivers; not PostgreSQL's) over the phase's wall time.
//
// Run: CTXKIT_HOOK_BENCH_RATE=167 CTXKIT_HOOK_BENCH_MATCH=10 CTXKIT_HOOK_BENCH_DURATION=60s \
// go test ./internal/app/server -run '^$' -bench BenchmarkWebhookLoad -benchtime 1x
func BenchmarkWebhookLoad(b *testing.B) {
	c := hookBenchConfigFromEnv(b)
	b.Logf("%s, %d events/s for %v, each matching 1/%d of the endpoints", c.backend, c.rate, c.dur, c.groups)
	for b.Loop() {
		off := hookBenchPhase(b, c, false)
		on := hookBenchPhase(b, c, true)
		b.ReportMetric(pct(off.stream, 50), "stream-p50-ms-off")
		b.ReportMetric(pct(off.stream, 99), "stream-p99-ms-off")
		b.ReportMetric(pct(on.stream, 50), "stream-p50-ms-on")
		b.ReportMetric(pct(on.stream, 99), "stream-p99-ms-on")
		b.ReportMetric(pct(on.lag, 50), "lag-p50-ms")
		b.ReportMetric(pct(on.lag, 99), "lag-p99-ms")
		b.ReportMetric(float64(on.undelivered), "undelivered")
		b.ReportMetric(on.eventsPerS, "events-per-s")
		b.ReportMetric(on.deliveriesPerS, "deliveries-per-s")
		b.ReportMetric(off.cpuCores, "cpu-cores-off")
		b.ReportMetric(on.cpuCores, "cpu-cores-on")
	}
}

type hookBenchResult struct {
	stream, lag                          []float64 // ms
	undelivered                          int
	eventsPerS, deliveriesPerS, cpuCores float64
}

func pct(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func hookBenchStore(b *testing.B, backend string) store.Store {
	if backend == "postgres" {
		return openPostgres(b, pgtest.Shared(b).NewDatabase(b))
	}
	db, err := sqlite.Open(context.Background(), b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	return db
}

func hookBenchPhase(b *testing.B, c hookBenchConfig, hooks bool) hookBenchResult {
	db := hookBenchStore(b, c.backend)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	opts := server.Options{Store: db, Key: key}
	fastHooks(&opts)
	// The fan-out is woken by commits; the poll is the fallback only.
	opts.Webhooks.Poll = 250 * time.Millisecond
	opts.Webhooks.MaxInFlight = 512 // the slow and dead endpoints hold at most 15 × 4 of them
	// The 100 endpoints are one owner's: the share of the slots one owner
	// may hold (fairness between tenants, a quarter by default) would
	// leave the 85 healthy ones about one slot each.
	opts.Webhooks.PerOwner = opts.Webhooks.MaxInFlight
	api := server.New(opts)
	srv := httptest.NewServer(api.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); api.RunWebhooks(ctx) }()
	defer func() { cancel(); <-done; api.StopStreams(); srv.Close(); db.Close() }()
	e := &env{t: b, url: srv.URL, key: key}
	tok := e.token("acme", "writer", server.RoleCurator)

	var (
		mu      sync.Mutex
		first   = map[string]time.Duration{} // webhook-id → lag of its first arrival
		lastAt  time.Time                    // of the latest healthy arrival
		healthy = make([]int, c.groups)      // healthy endpoints per group
	)
	// One listener per endpoint, as endpoints are on different hosts (the
	// client keeps a few idle connections per host).
	recv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			time.Sleep(2 * time.Second)
			return
		}
		var m struct {
			Timestamp time.Time `json:"timestamp"`
		}
		json.Unmarshal(body, &m)
		mu.Lock()
		if _, ok := first[r.Header.Get("webhook-id")]; !ok {
			first[r.Header.Get("webhook-id")] = now.Sub(m.Timestamp)
			lastAt = now
		}
		mu.Unlock()
	})
	if hooks {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		deadURL := "http://" + ln.Addr().String() + "/dead"
		ln.Close()
		listen := func(path string) string {
			srv := httptest.NewServer(recv)
			b.Cleanup(srv.Close)
			return srv.URL + path
		}
		for i := range hookBenchHooks {
			var u string
			switch {
			case i < hookBenchHealthy:
				u = listen("/ok")
				healthy[i%c.groups]++
			case i < hookBenchHealthy+hookBenchSlow:
				u = listen("/slow/")
			default:
				u = deadURL
			}
			sel := `{}`
			if c.groups > 1 {
				sel = fmt.Sprintf(`{"any_tags": ["g%d"]}`, i%c.groups)
			}
			if r := e.do("POST", "/webhooks", tok, fmt.Sprintf(`{"url": %q, "selector": %s}`, u, sel)); r.status != 201 {
				b.Fatalf("webhook: %d %s", r.status, r.body)
			}
		}
	}

	// One event stream of the writer's owner.
	var stream []float64
	streamDone := make(chan struct{})
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(streamDone)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte("data: ")) {
				continue
			}
			var ev struct {
				At time.Time `json:"at"`
			}
			if json.Unmarshal(line[6:], &ev) == nil && !ev.At.IsZero() {
				mu.Lock()
				stream = append(stream, float64(time.Since(ev.At).Microseconds())/1000)
				mu.Unlock()
			}
		}
	}()

	// Writes go out on schedule, several at once when one is slow (up to
	// 64 in flight), so a slow commit does not lower the rate.
	slots := make(chan struct{}, 64)
	writer := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cap(slots)}}
	defer writer.CloseIdleConnections()
	cpu0, start := server.ProcessCPU(), time.Now()
	var (
		writes sync.WaitGroup
		failed atomic.Value
		want   atomic.Int64
	)
	n := 0
	for ; ; n++ {
		at := start.Add(time.Duration(n) * time.Second / time.Duration(c.rate))
		if at.Sub(start) >= c.dur {
			break
		}
		time.Sleep(time.Until(at))
		slots <- struct{}{}
		writes.Add(1)
		go func(n int) {
			defer func() { <-slots; writes.Done() }()
			g := n % c.groups
			body := fmt.Sprintf(`{"title": "e%d", "tags": ["g%d"], "context": {"i": %d}}`, n, g, n)
			if err := hookBenchWrite(ctx, writer, srv.URL, tok, body); err != nil {
				failed.CompareAndSwap(nil, err.Error())
				return
			}
			if hooks {
				want.Add(int64(healthy[g]))
			}
		}(n)
	}
	writes.Wait()
	wrote := time.Since(start)
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	deadline := time.Now().Add(c.drain)
	for time.Now().Before(deadline) {
		mu.Lock()
		got, streamed := len(first), len(stream)
		mu.Unlock()
		if got >= int(want.Load()) && streamed >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cpu, wall := server.ProcessCPU()-cpu0, time.Since(start)
	cancel()
	<-streamDone
	mu.Lock()
	defer mu.Unlock()
	res := hookBenchResult{stream: stream, eventsPerS: float64(n) / wrote.Seconds(), cpuCores: cpu.Seconds() / wall.Seconds()}
	for _, l := range first {
		res.lag = append(res.lag, float64(l.Microseconds())/1000)
	}
	res.undelivered = int(want.Load()) - len(first)
	if len(first) > 0 {
		res.deliveriesPerS = float64(len(first)) / lastAt.Sub(start).Seconds()
	}
	b.Logf("webhooks %v: %d events, %d streamed, %d of %d healthy deliveries", hooks, n, len(stream), len(first), want.Load())
	return res
}

// hookBenchWrite creates a breadcrumb; it may run on any goroutine.
func hookBenchWrite(ctx context.Context, c *http.Client, url, tok, body string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/breadcrumbs", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("write: %d %s", resp.StatusCode, data)
	}
	return nil
}
