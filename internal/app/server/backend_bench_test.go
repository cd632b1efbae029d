package server_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// BenchmarkBackends measures, in one run, view reads (cache warm) and
// creates through the HTTP API on SQLite, on PostgreSQL with one server,
// and on PostgreSQL with two servers (replicas) sharing the database, the
// load spread over both. It reports throughput, p50 and p99 per setup and
// the ratio of PostgreSQL's view throughput to SQLite's (target: >= 0.5).
// Load generator, servers and PostgreSQL share this machine's cores.
func BenchmarkBackends(b *testing.B) {
	pg := pgtest.Shared(b)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	lite, err := sqlite.Open(b.Context(), b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	url := pg.NewDatabase(b)
	setups := []struct {
		name    string
		servers []*env
	}{
		{"sqlite", []*env{newEnvOn(b, lite, key)}},
		{"pg1", []*env{newEnvOn(b, openPostgres(b, pg.NewDatabase(b)), key)}},
		{"pg2", []*env{newEnvOn(b, openPostgres(b, url), key), newEnvOn(b, openPostgres(b, url), key)}},
	}
	tok := setups[0].servers[0].token("acme", "a", server.RoleEmitter)
	items := make([]string, 40)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name":"user %d","email":"u%d@x.org","active":%t}`, i, i, i%2 == 0)
	}
	record := `{"title":"Users","context":{"secret":"s","items":[` + strings.Join(items, ",") + `]},
		"llm_hints":{"exclude":["secret","items.email"],"transform":{
		"summary":{"type":"template","template":"{{context.items.length}} users"},
		"names":{"type":"extract","value":"$.items[*].name"}}}}`
	createBody := `{"title":"load","tags":["bench"],"context":{"n":1,"text":"` + strings.Repeat("x", 512) + `"}}`

	type figures struct{ viewRPS, createRPS float64 }
	results := map[string]*figures{}
	lats := map[string][]time.Duration{}
	for _, s := range setups {
		results[s.name] = &figures{}
	}
	for b.Loop() {
		for _, s := range setups {
			id := s.servers[0].create(tok, record)
			var views []func(*http.Client) error
			for _, srv := range s.servers {
				v := get(srv.url+"/breadcrumbs/"+id, tok)
				v(http.DefaultClient) // warm each server's view cache
				views = append(views, v)
			}
			var rr atomic.Int64
			rps, l := load(b, 8, 3000, func(c *http.Client) error {
				return views[int(rr.Add(1))%len(views)](c)
			})
			results[s.name].viewRPS += rps
			lats[s.name+"-view"] = append(lats[s.name+"-view"], l...)

			var creates []func(*http.Client) error
			for _, srv := range s.servers {
				creates = append(creates, post(srv.url+"/breadcrumbs", tok, createBody))
			}
			rps, l = load(b, 16, 1500, func(c *http.Client) error {
				return creates[int(rr.Add(1))%len(creates)](c)
			})
			results[s.name].createRPS += rps
			lats[s.name+"-create"] = append(lats[s.name+"-create"], l...)
		}
	}
	n := float64(b.N)
	for _, s := range setups {
		b.ReportMetric(results[s.name].viewRPS/n, s.name+"-view-req/s")
		b.ReportMetric(results[s.name].createRPS/n, s.name+"-creates/s")
		for _, op := range []string{"view", "create"} {
			l := lats[s.name+"-"+op]
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
			b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, s.name+"-"+op+"-p50-ms")
			b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, s.name+"-"+op+"-p99-ms")
		}
	}
	b.ReportMetric(results["pg1"].viewRPS/results["sqlite"].viewRPS, "pg1/sqlite-view")
	b.ReportMetric(results["pg2"].viewRPS/results["sqlite"].viewRPS, "pg2/sqlite-view")
	b.ReportMetric(results["pg1"].createRPS/results["sqlite"].createRPS, "pg1/sqlite-create")
}
