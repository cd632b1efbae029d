package server_test

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// load runs n requests from workers concurrent clients and returns the
// throughput and every latency.
func load(b *testing.B, workers, n int, req func(c *http.Client) error) (float64, []time.Duration) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var (
		next int64
		mu   sync.Mutex
		lats = make([]time.Duration, 0, n)
		wg   sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.AddInt64(&next, 1) <= int64(n) {
				t0 := time.Now()
				if err := req(client); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(t0)
				mu.Lock()
				lats = append(lats, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), lats
}

// request is one load-test request: method on url with body (none when
// empty), expecting status want.
func request(method, url, token, body string, want int) func(c *http.Client) error {
	return func(c *http.Client) error {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: %d", method, url, resp.StatusCode)
		}
		return nil
	}
}

func get(url, token string) func(c *http.Client) error { return request("GET", url, token, "", 200) }

func post(url, token, body string) func(c *http.Client) error {
	return request("POST", url, token, body, 201)
}

// BenchmarkViewVsFull serves the same breadcrumb as its LLM view (cache warm)
// and raw, interleaved in one run, and reports view throughput as a share
// of raw throughput (target: at least 0.8).
func BenchmarkViewVsFull(b *testing.B) {
	e := newEnv(b)
	tok := e.token("acme", "a", server.RoleEmitter)
	items := make([]string, 40)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name":"user %d","email":"u%d@x.org","active":%t}`, i, i, i%2 == 0)
	}
	id := e.create(tok, `{"title":"Users","context":{"secret":"s","items":[`+strings.Join(items, ",")+`]},
		"llm_hints":{"exclude":["secret","items.email"],"transform":{
		"summary":{"type":"template","template":"{{context.items.length}} users"},
		"names":{"type":"extract","value":"$.items[*].name"},
		"active":{"type":"jq","query":"[.items[] | select(.active)] | length"}}}}`)
	view, full := get(e.url+"/breadcrumbs/"+id, tok), get(e.url+"/breadcrumbs/"+id+"/full", tok)
	view(http.DefaultClient) // warm the view cache
	var vr, fr float64
	for b.Loop() {
		f, _ := load(b, 8, 2000, full)
		v, _ := load(b, 8, 2000, view)
		vr, fr = vr+v, fr+f
	}
	b.ReportMetric(vr/float64(b.N), "view-req/s")
	b.ReportMetric(fr/float64(b.N), "full-req/s")
	b.ReportMetric(vr/fr, "view/full")
}

// BenchmarkCreate16 creates breadcrumbs from 16 concurrent writers on SQLite
// and reports throughput and p50/p99 latency.
func BenchmarkCreate16(b *testing.B) {
	e := newEnv(b)
	tok := e.token("acme", "a", server.RoleEmitter)
	body := `{"title":"load","tags":["bench"],"context":{"n":1,"text":"` + strings.Repeat("x", 512) + `"}}`
	var (
		rps  float64
		lats []time.Duration
	)
	for b.Loop() {
		r, l := load(b, 16, 2000, post(e.url+"/breadcrumbs", tok, body))
		rps += r
		lats = append(lats, l...)
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	b.ReportMetric(rps/float64(b.N), "creates/s")
	b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
}
