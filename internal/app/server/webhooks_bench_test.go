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

	"github.com/jackc/pgx/v5"

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
//   - write-p50-ms-{off,on}, write-p99-ms-{off,on}: the part of the
//     stream's latency up to the create's answer (the write and its
//     commit), and relay-p50-ms-…, relay-p99-ms-…: the part after it (the
//     stream's own reading of the change; negative when the stream was
//     first);
//   - events-per-s: the write rate reached; deliveries-per-s: healthy
//     deliveries made from the first write to the last arrival;
//   - cpu-cores-{off,on}: CPU time of the process (server, writer and
//     receivers; not PostgreSQL's) over the phase's wall time.
//
// On PostgreSQL, CTXKIT_HOOK_BENCH_WAITS=1 also prints, per phase, what
// the database's busy backends were sampled waiting on (hookBenchWaits).
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
		for _, p := range []struct {
			name string
			res  hookBenchResult
		}{{"off", off}, {"on", on}} {
			b.ReportMetric(pct(p.res.write, 50), "write-p50-ms-"+p.name)
			b.ReportMetric(pct(p.res.write, 99), "write-p99-ms-"+p.name)
			b.ReportMetric(pct(p.res.relay, 50), "relay-p50-ms-"+p.name)
			b.ReportMetric(pct(p.res.relay, 99), "relay-p99-ms-"+p.name)
		}
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
	write, relay                         []float64 // ms: the stream's latency, up to the create's answer and after it
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

func hookBenchStore(b *testing.B, backend string) (store.Store, string) {
	if backend == "postgres" {
		url := pgtest.Shared(b).NewDatabase(b)
		return openPostgres(b, url), url
	}
	db, err := sqlite.Open(context.Background(), b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	return db, ""
}

func hookBenchPhase(b *testing.B, c hookBenchConfig, hooks bool) hookBenchResult {
	db, dbURL := hookBenchStore(b, c.backend)
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
	// By breadcrumb id: its event's timestamp and arrival on the stream,
	// and when its create was answered.
	eventAt, streamedAt, answeredAt := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
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
				ID string    `json:"id"`
				At time.Time `json:"at"`
			}
			if json.Unmarshal(line[6:], &ev) == nil && !ev.At.IsZero() {
				now := time.Now()
				mu.Lock()
				stream = append(stream, float64(now.Sub(ev.At).Microseconds())/1000)
				eventAt[ev.ID], streamedAt[ev.ID] = ev.At, now
				mu.Unlock()
			}
		}
	}()

	// Writes go out on schedule, several at once when one is slow (up to
	// 64 in flight), so a slow commit does not lower the rate.
	slots := make(chan struct{}, 64)
	writer := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cap(slots)}}
	defer writer.CloseIdleConnections()
	if dbURL != "" && os.Getenv("CTXKIT_HOOK_BENCH_WAITS") != "" {
		stop := hookBenchWaits(b, dbURL, hooks)
		defer stop()
	}
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
			id, err := hookBenchWrite(ctx, writer, srv.URL, tok, body)
			if err != nil {
				failed.CompareAndSwap(nil, err.Error())
				return
			}
			answered := time.Now()
			mu.Lock()
			answeredAt[id] = answered
			mu.Unlock()
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
	for id, answered := range answeredAt {
		if at, ok := eventAt[id]; ok {
			res.write = append(res.write, float64(answered.Sub(at).Microseconds())/1000)
			res.relay = append(res.relay, float64(streamedAt[id].Sub(answered).Microseconds())/1000)
		}
	}
	res.undelivered = int(want.Load()) - len(first)
	if len(first) > 0 {
		res.deliveriesPerS = float64(len(first)) / lastAt.Sub(start).Seconds()
	}
	b.Logf("webhooks %v: %d events, %d streamed, %d of %d healthy deliveries", hooks, n, len(stream), len(first), want.Load())
	return res
}

// hookBenchWrite creates a breadcrumb and returns its id; it may run on
// any goroutine.
func hookBenchWrite(ctx context.Context, c *http.Client, url, tok, body string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/breadcrumbs", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("write: %d %s", resp.StatusCode, data)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.ID == "" {
		return "", fmt.Errorf("write: answer %s: %v", data, err)
	}
	return out.ID, nil
}

// hookBenchWaits samples, every 10 ms until stop, what the database's
// busy backends wait on (pg_stat_activity), and logs the counts at stop:
// how much of the load's time goes to the event lock, to WAL flushes or
// to the CPU (no wait).
func hookBenchWaits(b *testing.B, url string, hooks bool) (stop func()) {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan map[string]int)
	go func() {
		counts := map[string]int{}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for ctx.Err() == nil {
			rows, err := conn.Query(ctx, `SELECT COALESCE(wait_event_type, 'CPU') || '/' || COALESCE(wait_event, '-') || ' ' || left(query, 40)
				FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`)
			if err == nil {
				for rows.Next() {
					var w string
					if rows.Scan(&w) == nil {
						counts[strings.Join(strings.Fields(w), " ")]++
					}
				}
				rows.Close()
				counts["(samples)"]++
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		done <- counts
	}()
	return func() {
		cancel()
		counts := <-done
		conn.Close(context.Background())
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
		var sb strings.Builder
		for _, k := range keys[:min(len(keys), 25)] {
			fmt.Fprintf(&sb, "\n  %6d %s", counts[k], k)
		}
		fmt.Fprintf(os.Stderr, "webhooks %v: waits of busy backends%s\n", hooks, sb.String())
	}
}
