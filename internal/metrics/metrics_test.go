package metrics_test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/metrics"
)

// scrape serves reg on loopback and reads it as a scraper does; keep
// filters the series (nil: all).
func scrape(t *testing.T, reg *metrics.Registry, keep func([]metrics.Label) bool) []textFamily {
	t.Helper()
	srv := httptest.NewServer(reg.Handler(keep))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d %q", resp.StatusCode, ct)
	}
	fams, err := readText(string(body))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return fams
}

func text(reg *metrics.Registry) string {
	var b bytes.Buffer
	reg.WriteText(&b, nil)
	return b.String()
}

// TestTextFormat: counters, counter vectors and histogram vectors are
// written as the format says, labels sorted by name, series by labels,
// families by name.
func TestTextFormat(t *testing.T) {
	reg := metrics.NewRegistry()
	reqs := metrics.NewCounterVec(metrics.CounterOpts{Name: "app_requests_total", Help: "Requests by route\\method."}, []string{"route", "method"})
	lat := metrics.NewHistogramVec(metrics.HistogramOpts{Name: "app_latency_seconds", Help: "Latency.", Buckets: []float64{0.001, 0.5, 1}}, []string{"route"})
	fails := metrics.NewCounter(metrics.CounterOpts{Name: "app_failures_total", Help: "Failures\nin two lines."})
	unused := metrics.NewCounterVec(metrics.CounterOpts{Name: "app_unused_total", Help: "Never touched."}, []string{"x"})
	reg.MustRegister(reqs, lat, fails, unused)

	reqs.WithLabelValues("/b", "GET").Inc()
	reqs.WithLabelValues("/a", "POST").Add(2.5)
	reqs.WithLabelValues("/a", "GET").Add(3)
	for _, v := range []float64{0.0005, 0.001, 0.2, 0.7, 3, 5} {
		lat.WithLabelValues("/a").Observe(v)
	}
	lat.WithLabelValues("/b")

	want := `# HELP app_failures_total Failures\nin two lines.
# TYPE app_failures_total counter
app_failures_total 0
# HELP app_latency_seconds Latency.
# TYPE app_latency_seconds histogram
app_latency_seconds_bucket{route="/a",le="0.001"} 2
app_latency_seconds_bucket{route="/a",le="0.5"} 3
app_latency_seconds_bucket{route="/a",le="1"} 4
app_latency_seconds_bucket{route="/a",le="+Inf"} 6
app_latency_seconds_sum{route="/a"} 8.9015
app_latency_seconds_count{route="/a"} 6
app_latency_seconds_bucket{route="/b",le="0.001"} 0
app_latency_seconds_bucket{route="/b",le="0.5"} 0
app_latency_seconds_bucket{route="/b",le="1"} 0
app_latency_seconds_bucket{route="/b",le="+Inf"} 0
app_latency_seconds_sum{route="/b"} 0
app_latency_seconds_count{route="/b"} 0
# HELP app_requests_total Requests by route\\method.
# TYPE app_requests_total counter
app_requests_total{method="GET",route="/a"} 3
app_requests_total{method="GET",route="/b"} 1
app_requests_total{method="POST",route="/a"} 2.5
`
	if got := text(reg); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := readText(want); err != nil {
		t.Fatalf("the strict reader refuses the expected text: %v", err)
	}
	fams := scrape(t, reg, nil)
	if v, ok := find(fams, "app_requests_total", label{"route", "/a"}, label{"method", "POST"}); !ok || v != 2.5 {
		t.Errorf("app_requests_total{/a,POST} = %v, %v", v, ok)
	}
}

// TestStrictReaderRefuses: the reader the tests rely on fails on each
// broken rule, so a writer breaking one cannot pass.
func TestStrictReaderRefuses(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"no type", "a_total 1\n"},
		{"type after sample", "# TYPE a counter\na 1\n# TYPE a counter\n"},
		{"unsorted families", "# TYPE b counter\nb 1\n# TYPE a counter\na 1\n"},
		{"duplicate series", "# TYPE a counter\na{x=\"1\"} 1\na{x=\"1\"} 2\n"},
		{"bad escape", "# TYPE a counter\na{x=\"\\t\"} 1\n"},
		{"bare quote", "# TYPE a counter\na{x=\"\"\"} 1\n"},
		{"no +Inf", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"},
		{"+Inf not count", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n"},
		{"not cumulative", "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"},
		{"no sum", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n"},
		{"foreign sample", "# TYPE a counter\nb 1\n"},
		{"no final newline", "# TYPE a counter\na 1"},
	} {
		if _, err := readText(c.text); err == nil {
			t.Errorf("%s: read without error:\n%s", c.name, c.text)
		}
	}
}

// TestLabelValuesRoundTrip: values with quotes, backslashes, line feeds,
// braces and non-ASCII text come back from the text as they went in.
func TestLabelValuesRoundTrip(t *testing.T) {
	values := []string{`a"b`, `back\slash`, "two\nlines", `\n literally`, `{x="y"}`, "ünï ✓", "", `"\` + "\n" + `\"`, "trailing\\"}
	reg := metrics.NewRegistry()
	c := metrics.NewCounterVec(metrics.CounterOpts{Name: "v_total", Help: "h"}, []string{"v"})
	reg.MustRegister(c)
	for i, v := range values {
		c.WithLabelValues(v).Add(float64(i + 1))
	}
	fams := scrape(t, reg, nil)
	for i, v := range values {
		if got, ok := find(fams, "v_total", label{"v", v}); !ok || got != float64(i+1) {
			t.Errorf("value %q: %v, %v after the round trip", v, got, ok)
		}
	}
}

// TestInvalidUTF8: a label value that is not UTF-8 is written with its bad
// bytes replaced, and all its spellings count into that one series.
func TestInvalidUTF8(t *testing.T) {
	reg := metrics.NewRegistry()
	c := metrics.NewCounterVec(metrics.CounterOpts{Name: "u_total", Help: "h"}, []string{"v"})
	reg.MustRegister(c)
	c.WithLabelValues("a\xff").Inc()
	c.WithLabelValues("a\xfe").Inc()
	c.WithLabelValues("a\uFFFD").Inc()
	fams := scrape(t, reg, nil)
	if v, ok := find(fams, "u_total", label{"v", "a\uFFFD"}); !ok || v != 3 || len(fams[0].samples) != 1 {
		t.Errorf("got %+v", fams)
	}
}

// TestFilter: keep chooses the series; a family left without any is not
// written at all.
func TestFilter(t *testing.T) {
	reg := metrics.NewRegistry()
	tokens := metrics.NewCounterVec(metrics.CounterOpts{Name: "t_total", Help: "h"}, []string{"owner"})
	other := metrics.NewCounterVec(metrics.CounterOpts{Name: "o_total", Help: "h"}, []string{"owner"})
	plain := metrics.NewCounter(metrics.CounterOpts{Name: "p_total", Help: "h"})
	reg.MustRegister(tokens, other, plain)
	tokens.WithLabelValues("acme").Inc()
	tokens.WithLabelValues("globex").Inc()
	other.WithLabelValues("globex").Inc()
	fams := scrape(t, reg, func(ls []metrics.Label) bool {
		for _, l := range ls {
			if l.Name == "owner" {
				return l.Value == "acme"
			}
		}
		return true
	})
	var names []string
	for _, f := range fams {
		names = append(names, f.name)
		for _, s := range f.samples {
			if len(s.labels) > 0 && s.labels[0].value != "acme" {
				t.Errorf("%s shows %v", s.name, s.labels)
			}
		}
	}
	if strings.Join(names, " ") != "p_total t_total" {
		t.Errorf("families %v, want p_total t_total", names)
	}
}

// TestDeleteMatch: the series with the label value are gone from the
// scrape, others stay, a deleted series starts afresh at zero, and an
// unknown label name panics.
func TestDeleteMatch(t *testing.T) {
	reg := metrics.NewRegistry()
	c := metrics.NewCounterVec(metrics.CounterOpts{Name: "c_total", Help: "h"}, []string{"hook", "class"})
	g := metrics.NewGaugeVec(metrics.GaugeOpts{Name: "g", Help: "h"}, []string{"hook"})
	hv := metrics.NewHistogramVec(metrics.HistogramOpts{Name: "h_seconds", Help: "h", Buckets: []float64{1}}, []string{"hook"})
	reg.MustRegister(c, g, hv)
	for _, hook := range []string{"a", "b"} {
		c.WithLabelValues(hook, "ok").Add(2)
		c.WithLabelValues(hook, "timeout").Inc()
		g.WithLabelValues(hook).Set(3)
		hv.WithLabelValues(hook).Observe(0.5)
	}
	if n := c.DeleteMatch("hook", "a"); n != 2 {
		t.Errorf("counter: deleted %d series, want 2", n)
	}
	if n := g.DeleteMatch("hook", "a"); n != 1 {
		t.Errorf("gauge: deleted %d series, want 1", n)
	}
	if n := hv.DeleteMatch("hook", "a"); n != 1 {
		t.Errorf("histogram: deleted %d series, want 1", n)
	}
	if n := c.DeleteMatch("hook", "zzz"); n != 0 {
		t.Errorf("deleted %d series of an absent value", n)
	}
	out := text(reg)
	if strings.Contains(out, `hook="a"`) || strings.Count(out, `hook="b"`) < 4 {
		t.Errorf("after deleting hook a:\n%s", out)
	}
	if v := c.WithLabelValues("a", "ok").Value(); v != 0 {
		t.Errorf("a deleted series came back at %v, want 0", v)
	}
	defer func() {
		if recover() == nil {
			t.Error("DeleteMatch of an unknown label did not panic")
		}
	}()
	c.DeleteMatch("nope", "a")
}

// TestCounterAdd: whole and fractional additions add up; a negative one
// panics.
func TestCounterAdd(t *testing.T) {
	c := metrics.NewCounter(metrics.CounterOpts{Name: "c_total"})
	c.Inc()
	c.Add(2)
	c.Add(0.25)
	c.Add(0.5)
	c.Add(math.NaN())
	if v := c.Value(); v != 3.75 {
		t.Errorf("value %v, want 3.75", v)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "cannot decrease") {
			t.Errorf("Add(-1): recovered %v", r)
		}
	}()
	c.Add(-1)
}

// TestConstructorsRefuse: every malformed option panics with a message
// naming what is wrong.
func TestConstructorsRefuse(t *testing.T) {
	for _, c := range []struct {
		name, want string
		make       func()
	}{
		{"empty name", `Name ""`, func() { metrics.NewCounter(metrics.CounterOpts{}) }},
		{"bad name", `Name "a-b"`, func() { metrics.NewCounter(metrics.CounterOpts{Name: "a-b"}) }},
		{"digit first", `Name "1a"`, func() { metrics.NewCounterVec(metrics.CounterOpts{Name: "1a"}, nil) }},
		{"bad label", `label "a:b"`, func() { metrics.NewCounterVec(metrics.CounterOpts{Name: "a"}, []string{"a:b"}) }},
		{"reserved label", `label "__x"`, func() { metrics.NewCounterVec(metrics.CounterOpts{Name: "a"}, []string{"__x"}) }},
		{"twice", `label "x" is listed twice`, func() { metrics.NewCounterVec(metrics.CounterOpts{Name: "a"}, []string{"x", "x"}) }},
		{"le", `label "le" is reserved`, func() {
			metrics.NewHistogramVec(metrics.HistogramOpts{Name: "h", Buckets: []float64{1}}, []string{"le"})
		}},
		{"buckets", `Buckets[1] = 1`, func() {
			metrics.NewHistogramVec(metrics.HistogramOpts{Name: "h", Buckets: []float64{1, 1}}, nil)
		}},
		{"inf bucket", `Buckets[0] = +Inf`, func() {
			metrics.NewHistogramVec(metrics.HistogramOpts{Name: "h", Buckets: []float64{math.Inf(1)}}, nil)
		}},
		{"value count", `1 label values for 2 labels`, func() {
			metrics.NewCounterVec(metrics.CounterOpts{Name: "a"}, []string{"x", "y"}).WithLabelValues("1")
		}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("%s: recovered %v, want a panic with %q", c.name, r, c.want)
				}
			}()
			c.make()
		}()
	}
}

// TestRegisterTwice: a family name registered twice is refused, naming it,
// and the registry keeps what it had.
func TestRegisterTwice(t *testing.T) {
	reg := metrics.NewRegistry()
	a := metrics.NewCounter(metrics.CounterOpts{Name: "a_total", Help: "h"})
	reg.MustRegister(a)
	b := metrics.NewCounter(metrics.CounterOpts{Name: "b_total", Help: "h"})
	if err := reg.Register(b, metrics.NewCounter(metrics.CounterOpts{Name: "a_total"})); err == nil || !strings.Contains(err.Error(), "a_total") {
		t.Fatalf("err %v", err)
	}
	if err := reg.Register(metrics.NewGoCollector(), metrics.NewGoCollector()); err == nil {
		t.Fatal("two Go collectors registered")
	}
	vec := metrics.NewCounterVec(metrics.CounterOpts{Name: "v_total"}, []string{"x"})
	if err := reg.Register(vec.WithLabelValues("1")); err == nil || !strings.Contains(err.Error(), "vector") {
		t.Fatalf("a vector's counter registered alone: %v", err)
	}
	if got := text(reg); got != "# HELP a_total h\n# TYPE a_total counter\na_total 0\n" {
		t.Errorf("registry after refusals:\n%s", got)
	}
}

// TestRuntimeSeries: the go_* and (on Linux) process_* series a scraper
// expects are there, with values that make sense.
func TestRuntimeSeries(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewGoCollector(), metrics.NewProcessCollector())
	runtime.GC()
	fams := scrape(t, reg, nil)
	type check struct {
		name   string
		labels []label
		ok     func(float64) bool
	}
	positive := func(v float64) bool { return v > 0 }
	checks := []check{
		{"go_goroutines", nil, positive},
		{"go_threads", nil, positive},
		{"go_memstats_heap_alloc_bytes", nil, positive},
		{"go_memstats_alloc_bytes_total", nil, positive},
		{"go_memstats_sys_bytes", nil, positive},
		{"go_memstats_next_gc_bytes", nil, positive},
		{"go_memstats_last_gc_time_seconds", nil, func(v float64) bool { return v > 1.6e9 }},
		{"go_gc_duration_seconds_count", nil, func(v float64) bool { return v >= 1 }},
		{"go_gc_duration_seconds", []label{{"quantile", "0.5"}}, func(v float64) bool { return v >= 0 }},
		{"go_gc_duration_seconds", []label{{"quantile", "1"}}, positive},
		{"go_info", []label{{"version", runtime.Version()}}, func(v float64) bool { return v == 1 }},
		{"go_sched_gomaxprocs_threads", nil, func(v float64) bool { return v == float64(runtime.GOMAXPROCS(0)) }},
	}
	if runtime.GOOS == "linux" {
		checks = append(checks,
			check{"process_cpu_seconds_total", nil, func(v float64) bool { return v >= 0 }},
			check{"process_resident_memory_bytes", nil, func(v float64) bool { return v > 1<<20 }},
			check{"process_virtual_memory_bytes", nil, func(v float64) bool { return v > 1<<20 }},
			check{"process_open_fds", nil, positive},
			check{"process_max_fds", nil, positive},
			check{"process_start_time_seconds", nil, func(v float64) bool { return v > 1.6e9 }},
		)
	}
	for _, c := range checks {
		if v, ok := find(fams, c.name, c.labels...); !ok || !c.ok(v) {
			t.Errorf("%s%v = %v (present %v)", c.name, c.labels, v, ok)
		}
	}
	// The start time is read once and stays put, or a scraper sees a
	// restart at every scrape.
	before, _ := find(fams, "process_start_time_seconds")
	after, _ := find(scrape(t, reg, nil), "process_start_time_seconds")
	if before != after {
		t.Errorf("process_start_time_seconds moved: %v then %v", before, after)
	}
}

// TestConcurrentUse: series are created, counted and observed from many
// goroutines while others scrape; every scrape reads strictly and the
// totals are exact.
func TestConcurrentUse(t *testing.T) {
	reg := metrics.NewRegistry()
	c := metrics.NewCounterVec(metrics.CounterOpts{Name: "c_total", Help: "h"}, []string{"a", "b"})
	h := metrics.NewHistogramVec(metrics.HistogramOpts{Name: "h_seconds", Help: "h", Buckets: []float64{1, 2, 3}}, []string{"a"})
	reg.MustRegister(c, h, metrics.NewGoCollector(), metrics.NewProcessCollector())
	const workers, rounds = 8, 2000
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	stop := make(chan struct{})
	var scrapers sync.WaitGroup
	for range 2 {
		scrapers.Add(1)
		go func() {
			defer scrapers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := readText(text(reg)); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				c.WithLabelValues(fmt.Sprint(i%10), "x").Inc()
				c.WithLabelValues("half", fmt.Sprint(w)).Add(0.5)
				h.WithLabelValues(fmt.Sprint(i % 3)).Observe(float64(i % 4))
			}
		}()
	}
	wg.Wait()
	close(stop)
	scrapers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fams, err := readText(text(reg))
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for i := range 10 {
		v, _ := find(fams, "c_total", label{"a", fmt.Sprint(i)}, label{"b", "x"})
		total += v
	}
	if total != workers*rounds {
		t.Errorf("c_total sums to %v, want %d", total, workers*rounds)
	}
	if v, _ := find(fams, "c_total", label{"a", "half"}, label{"b", "3"}); v != rounds/2 {
		t.Errorf("half/3: %v, want %d", v, rounds/2)
	}
	n := 0.0
	for i := range 3 {
		v, _ := find(fams, "h_seconds_count", label{"a", fmt.Sprint(i)})
		n += v
	}
	if n != workers*rounds {
		t.Errorf("h_seconds_count sums to %v, want %d", n, workers*rounds)
	}
}

// TestStandardLibraryOnly: the package depends on nothing but the
// standard library, so linking it costs ctxkit's start nothing more.
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "github.com/ctxkit/ctxkit/internal/metrics" {
		t.Errorf("dependencies beyond the standard library:\n%s", got)
	}
}

// TestHistogramBucketSearch: with many buckets (found by binary search)
// and with few (scanned), an observation lands in the bucket of the least
// bound not below it, NaN in +Inf.
func TestHistogramBucketSearch(t *testing.T) {
	for _, n := range []int{3, 40} {
		bounds := make([]float64, n)
		for i := range bounds {
			bounds[i] = float64(i + 1)
		}
		reg := metrics.NewRegistry()
		h := metrics.NewHistogramVec(metrics.HistogramOpts{Name: "h", Buckets: bounds}, nil)
		reg.MustRegister(h)
		for _, v := range []float64{-5, 0.5, 1, 1.5, 2, float64(n), float64(n) + 0.1, math.NaN(), math.Inf(1)} {
			h.WithLabelValues().Observe(v)
		}
		fams := scrape(t, reg, nil)
		for le, want := range map[string]float64{"1": 3, "2": 5, strconv.Itoa(n): 6, "+Inf": 9} {
			if v, ok := find(fams, "h_bucket", label{"le", le}); !ok || v != want {
				t.Errorf("%d buckets: le=%s holds %v (%v), want %v", n, le, v, ok, want)
			}
		}
	}
}
