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
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// Figures of BenchmarkWebhookLoad, scaled to a shared 2-core machine
// (the load is 10,000 events per minute for 100 endpoints: a
// million deliveries a minute).
const (
	hookBenchHealthy = 85
	hookBenchSlow    = 10 // answer after 2 s
	hookBenchDead    = 5  // nothing listens
	hookBenchRate    = 10 // events per second
	hookBenchFor     = 10 * time.Second
	hookBenchDrain   = 60 * time.Second
)

// BenchmarkWebhookLoad measures, through the HTTP API on SQLite, with 100
// webhooks on loopback (85 healthy, 10 answering after 2 s, 5 dead) all
// selecting every event, and events written at hookBenchRate per second:
//
//   - lag-p50-ms, lag-p99-ms: from an event's timestamp to its first
//     arrival at a healthy endpoint;
//   - undelivered: healthy deliveries not arrived hookBenchDrain after the
//     last write;
//   - stream-p50-ms-{off,on}, stream-p99-ms-{off,on}: an event stream's
//     latency for the same writes, without webhooks and with them.
//
// Run: go test ./internal/app/server -run '^$' -bench BenchmarkWebhookLoad -benchtime 1x
func BenchmarkWebhookLoad(b *testing.B) {
	for b.Loop() {
		off := hookBenchPhase(b, false)
		on := hookBenchPhase(b, true)
		b.ReportMetric(pct(off.stream, 50), "stream-p50-ms-off")
		b.ReportMetric(pct(off.stream, 99), "stream-p99-ms-off")
		b.ReportMetric(pct(on.stream, 50), "stream-p50-ms-on")
		b.ReportMetric(pct(on.stream, 99), "stream-p99-ms-on")
		b.ReportMetric(pct(on.lag, 50), "lag-p50-ms")
		b.ReportMetric(pct(on.lag, 99), "lag-p99-ms")
		b.ReportMetric(float64(on.undelivered), "undelivered")
	}
}

type hookBenchResult struct {
	stream, lag []float64 // ms
	undelivered int
}

func pct(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func hookBenchPhase(b *testing.B, hooks bool) hookBenchResult {
	db, err := sqlite.Open(context.Background(), b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	opts := server.Options{Store: db, Key: key}
	fastHooks(&opts)
	opts.Webhooks.Poll = 50 * time.Millisecond
	opts.Webhooks.MaxInFlight = 512 // the slow and dead endpoints hold at most 15 × 4 of them
	api := server.New(opts)
	srv := httptest.NewServer(api.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); api.RunWebhooks(ctx) }()
	defer func() { cancel(); <-done; api.StopStreams(); srv.Close(); db.Close() }()
	e := &env{t: b, url: srv.URL, key: key}
	tok := e.token("acme", "writer", server.RoleCurator)

	var (
		mu    sync.Mutex
		first = map[string]time.Duration{} // webhook-id → lag of its first arrival
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
		}
		mu.Unlock()
	})
	if hooks {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		deadURL := "http://" + ln.Addr().String() + "/dead"
		ln.Close()
		var urls []string
		listen := func(path string) string {
			srv := httptest.NewServer(recv)
			b.Cleanup(srv.Close)
			return srv.URL + path
		}
		for range hookBenchHealthy {
			urls = append(urls, listen("/ok"))
		}
		for range hookBenchSlow {
			urls = append(urls, listen("/slow/"))
		}
		for range hookBenchDead {
			urls = append(urls, deadURL)
		}
		for _, u := range urls {
			if r := e.do("POST", "/webhooks", tok, fmt.Sprintf(`{"url": %q, "selector": {}}`, u)); r.status != 201 {
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

	tick := time.NewTicker(time.Second / hookBenchRate)
	n := 0
	for end := time.Now().Add(hookBenchFor); time.Now().Before(end); n++ {
		<-tick.C
		if r := e.do("POST", "/breadcrumbs", tok, fmt.Sprintf(`{"title": "e%d", "context": {"i": %d}}`, n, n)); r.status != 201 {
			b.Fatalf("write: %d %s", r.status, r.body)
		}
	}
	tick.Stop()
	want := 0
	if hooks {
		want = n * hookBenchHealthy
	}
	deadline := time.Now().Add(hookBenchDrain)
	for time.Now().Before(deadline) {
		mu.Lock()
		got, streamed := 0, len(stream)
		for range first {
			got++
		}
		mu.Unlock()
		if got >= want && streamed >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-streamDone
	mu.Lock()
	defer mu.Unlock()
	res := hookBenchResult{stream: stream}
	for _, l := range first {
		res.lag = append(res.lag, float64(l.Microseconds())/1000)
	}
	res.undelivered = want - len(first)
	b.Logf("webhooks %v: %d events, %d streamed, %d of %d healthy deliveries", hooks, n, len(stream), len(first), want)
	return res
}
