package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// Figures of BenchmarkEventStreams.
const (
	benchStreams    = 1000 // event streams held open
	benchWrites     = 100  // sequential creates per write-latency phase
	benchLagWrites  = 100  // creates at benchRate in the delivery phase
	benchRate       = 50   // creates per second in the delivery phase
	benchLagTimeout = 60 * time.Second
)

// BenchmarkEventStreams measures what open event streams cost writers and
// how fast a change reaches them, through the HTTP API on SQLite and on
// PostgreSQL, in one run:
//
//   - <backend>-write-p50-ms-none: p50 of sequential creates with no stream open;
//   - <backend>-write-p50-ms-idle: the same with 1000 streams of another owner
//     open (they see none of these writes);
//   - <backend>-idle/none: the ratio of the two (target: <= 1.5);
//   - <backend>-lag-p99-ms: with 1000 streams of the writer's owner open and
//     creates at 50/s, the p99 over every (stream, event) pair of the time
//     from the change's timestamp to its arrival at the client (target: < 1 s),
//     and the p50 (<backend>-lag-p50-ms);
//   - <backend>-undelivered: events that had not arrived 60 s after the last
//     write (counted in the lag as 60 s);
//   - <backend>-cpu-us/delivery: this process's CPU time in the delivery
//     phase (writes, store reads, servers and the clients) per event
//     delivered to a stream: the cost that decides the lag when cores are
//     short, as on a shared machine.
//
// Servers, PostgreSQL and the 1000 clients share this machine's cores.
func BenchmarkEventStreams(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	lite, err := sqlite.Open(b.Context(), b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	setups := []struct {
		name string
		e    *env
	}{
		{"sqlite", newEnvOn(b, lite, key)},
		{"pg", newEnvOn(b, openPostgres(b, pgtest.Shared(b).NewDatabase(b)), key)},
	}
	type figures struct {
		none, idle, lag []time.Duration
		cpu             time.Duration // this process's CPU time in the delivery phases
		delivered       int
	}
	results := map[string]*figures{}
	undelivered := map[string]int{}
	for b.Loop() {
		for _, s := range setups {
			e := s.e
			f := results[s.name]
			if f == nil {
				f = &figures{}
				results[s.name] = f
			}
			writer := e.token("acme", "w", server.RoleEmitter)
			write := post(e.url+"/breadcrumbs", writer, `{"title":"load","tags":["bench"],"context":{"n":1}}`)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			f.none = append(f.none, writeLatencies(b, client, write, benchWrites)...)

			idle := openStreams(b, e, e.token("globex", "watcher", server.RoleSubscriber), benchStreams)
			f.idle = append(f.idle, writeLatencies(b, client, write, benchWrites)...)
			idle.close()

			live := openStreams(b, e, e.token("acme", "watcher", server.RoleSubscriber), benchStreams)
			cpu0 := cpuTime(b)
			var wg sync.WaitGroup
			tick := time.NewTicker(time.Second / benchRate)
			for range benchLagWrites {
				<-tick.C
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := write(client); err != nil {
						b.Error(err)
					}
				}()
			}
			tick.Stop()
			wg.Wait()
			lags, missing := live.wait(benchStreams*benchLagWrites, benchLagTimeout)
			f.cpu += cpuTime(b) - cpu0
			f.delivered += len(lags) - missing
			f.lag = append(f.lag, lags...)
			undelivered[s.name] += missing
			live.close()
		}
	}
	p := func(l []time.Duration, q int) float64 {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		return float64(l[len(l)*q/100].Microseconds()) / 1000
	}
	for _, s := range setups {
		f := results[s.name]
		none, idle := p(f.none, 50), p(f.idle, 50)
		b.ReportMetric(none, s.name+"-write-p50-ms-none")
		b.ReportMetric(idle, s.name+"-write-p50-ms-idle")
		b.ReportMetric(idle/none, s.name+"-idle/none")
		b.ReportMetric(p(f.lag, 50), s.name+"-lag-p50-ms")
		b.ReportMetric(p(f.lag, 99), s.name+"-lag-p99-ms")
		b.ReportMetric(float64(undelivered[s.name])/float64(b.N), s.name+"-undelivered")
		b.ReportMetric(float64(f.cpu.Microseconds())/float64(f.delivered), s.name+"-cpu-us/delivery")
	}
}

// cpuTime is the CPU time (user and system) this process has used: the
// servers, the SQLite store and the stream clients, not PostgreSQL.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeLatencies runs n writes one after another and returns their latencies.
func writeLatencies(b *testing.B, c *http.Client, write func(*http.Client) error, n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := write(c); err != nil {
			b.Fatal(err)
		}
		out = append(out, time.Since(t0))
	}
	return out
}

// benchStreamSet is a set of open event streams whose clients record, for
// every change event, the time from the change's timestamp to its arrival.
type benchStreamSet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	got    atomic.Int64
	lags   [][]time.Duration // by stream, each written only by its client
}

// openStreams opens n event streams with token, each on its own connection,
// and returns once every one has answered.
func openStreams(b *testing.B, e *env, token string, n int) *benchStreamSet {
	ctx, cancel := context.WithCancel(context.Background())
	s := &benchStreamSet{cancel: cancel, lags: make([][]time.Duration, n)}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	ready := make(chan error, n)
	for i := range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/events/stream", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err == nil && resp.StatusCode != 200 {
				resp.Body.Close()
				err = &streamStatus{resp.StatusCode}
			}
			ready <- err
			if err != nil {
				return
			}
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				// A change's data holds "at":"<RFC 3339 time>"; a ping's is {}.
				_, at, ok := bytes.Cut(line, []byte(`"at":"`))
				if !ok || !bytes.HasPrefix(line, []byte("data: ")) {
					continue
				}
				at, _, _ = bytes.Cut(at, []byte(`"`))
				t, err := time.Parse(time.RFC3339Nano, string(at))
				if err != nil {
					b.Errorf("event time %q: %v", at, err)
					continue
				}
				s.lags[i] = append(s.lags[i], time.Since(t))
				s.got.Add(1)
			}
		}()
	}
	for range n {
		if err := <-ready; err != nil {
			s.close()
			b.Fatalf("opening %d streams: %v", n, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // every stream is waiting for changes
	return s
}

type streamStatus struct{ code int }

func (s *streamStatus) Error() string { return "stream answered " + http.StatusText(s.code) }

// wait waits until want events have arrived or timeout passed, and returns
// the lags, with timeout for each event that did not arrive, and how many
// did not.
func (s *benchStreamSet) wait(want int, timeout time.Duration) ([]time.Duration, int) {
	deadline := time.Now().Add(timeout)
	for s.got.Load() < int64(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s.cancel() // the clients stop, so their lags can be read
	s.wg.Wait()
	var lags []time.Duration
	for _, l := range s.lags {
		lags = append(lags, l...)
	}
	missing := max(0, want-len(lags))
	for range missing {
		lags = append(lags, timeout)
	}
	return lags, missing
}

func (s *benchStreamSet) close() {
	s.cancel()
	s.wg.Wait()
}
