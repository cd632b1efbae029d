package metrics

import (
	"runtime"
	"runtime/debug"
	rm "runtime/metrics"
	"sync"
	"time"
)

// goSample is one runtime/metrics value and the family it is written as;
// the value is the sum of the samples named in from (the runtime splits
// some of what MemStats reported in one field).
type goSample struct {
	name, help string
	typ        Type
	from       []string
}

// goSamples are the go_* series a dashboard of a Go service reads, under
// the names client libraries have long used, from runtime/metrics (which,
// unlike runtime.ReadMemStats, does not stop the world).
var goSamples = []goSample{
	{"go_goroutines", "Number of goroutines that currently exist.", TypeGauge, []string{"/sched/goroutines:goroutines"}},
	{"go_threads", "Number of OS threads created.", TypeGauge, []string{"/sched/threads/total:threads"}},
	{"go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting.", TypeGauge, []string{"/sched/gomaxprocs:threads"}},
	{"go_gc_gogc_percent", "Heap size target percentage configured by GOGC.", TypeGauge, []string{"/gc/gogc:percent"}},
	{"go_gc_gomemlimit_bytes", "Go runtime memory limit configured by GOMEMLIMIT.", TypeGauge, []string{"/gc/gomemlimit:bytes"}},
	{"go_memstats_alloc_bytes", "Number of heap bytes allocated and currently in use.", TypeGauge, []string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_alloc_bytes_total", "Total number of heap bytes allocated, even if freed.", TypeCounter, []string{"/gc/heap/allocs:bytes"}},
	{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", TypeGauge, []string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", TypeGauge, []string{"/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", TypeGauge, []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}},
	{"go_memstats_heap_objects", "Number of currently allocated objects.", TypeGauge, []string{"/gc/heap/objects:objects"}},
	{"go_memstats_heap_released_bytes", "Number of heap bytes released to the OS.", TypeGauge, []string{"/memory/classes/heap/released:bytes"}},
	{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from the OS.", TypeGauge, []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_mallocs_total", "Total number of heap objects allocated.", TypeCounter, []string{"/gc/heap/allocs:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_frees_total", "Total number of heap objects frees.", TypeCounter, []string{"/gc/heap/frees:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_next_gc_bytes", "Number of heap bytes when the next garbage collection will take place.", TypeGauge, []string{"/gc/heap/goal:bytes"}},
	{"go_memstats_stack_inuse_bytes", "Number of bytes obtained from the OS for goroutine stacks in use.", TypeGauge, []string{"/memory/classes/heap/stacks:bytes"}},
	{"go_memstats_sys_bytes", "Number of bytes obtained from the OS.", TypeGauge, []string{"/memory/classes/total:bytes"}},
}

// goCollector writes the runtime's series, read at each scrape.
type goCollector struct {
	once    sync.Once
	samples []rm.Sample // one per distinct runtime metric; reused, under mu
	index   map[string]int
	mu      sync.Mutex
}

// NewGoCollector is the collector of the go_* series: goroutines, threads,
// GOMAXPROCS, GOGC and GOMEMLIMIT, heap and stack sizes, allocations
// (go_memstats_*, from runtime/metrics), the pauses of the last garbage
// collections as the summary go_gc_duration_seconds, and go_info.
func NewGoCollector() Collector { return &goCollector{} }

func (g *goCollector) names() []string {
	out := []string{"go_gc_duration_seconds", "go_info", "go_memstats_last_gc_time_seconds"}
	for _, s := range goSamples {
		out = append(out, s.name)
	}
	return out
}

func (g *goCollector) collect(out []Family) []Family {
	g.once.Do(func() {
		// The runtime's list is read on the first scrape, not at start:
		// names this Go does not know are left out.
		known := map[string]bool{}
		for _, d := range rm.All() {
			known[d.Name] = true
		}
		g.index = map[string]int{}
		for _, s := range goSamples {
			for _, n := range s.from {
				if _, ok := g.index[n]; !ok && known[n] {
					g.index[n] = len(g.samples)
					g.samples = append(g.samples, rm.Sample{Name: n})
				}
			}
		}
	})
	g.mu.Lock()
	rm.Read(g.samples)
	values := make([]float64, len(g.samples))
	for i, s := range g.samples {
		switch s.Value.Kind() {
		case rm.KindUint64:
			values[i] = float64(s.Value.Uint64())
		case rm.KindFloat64:
			values[i] = s.Value.Float64()
		}
	}
	g.mu.Unlock()
next:
	for _, s := range goSamples {
		v := 0.0
		for _, n := range s.from {
			i, ok := g.index[n]
			if !ok {
				continue next
			}
			v += values[i]
		}
		out = append(out, Family{Name: s.name, Help: s.help, Type: s.typ, Series: []Series{{Value: v}}})
	}

	var st debug.GCStats
	st.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&st)
	lastGC := 0.0
	if st.NumGC > 0 {
		lastGC = float64(st.LastGC.UnixNano()) / 1e9
	}
	gc := Series{Count: uint64(st.NumGC), Sum: st.PauseTotal.Seconds()}
	for i, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		gc.Quantiles = append(gc.Quantiles, Quantile{Quantile: q, Value: st.PauseQuantiles[i].Seconds()})
	}
	out = append(out,
		Family{Name: "go_gc_duration_seconds", Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.",
			Type: TypeSummary, Series: []Series{gc}},
		Family{Name: "go_memstats_last_gc_time_seconds", Help: "Number of seconds since 1970 of last garbage collection.",
			Type: TypeGauge, Series: []Series{{Value: lastGC}}},
		Family{Name: "go_info", Help: "Information about the Go environment.", Type: TypeGauge,
			Series: []Series{{Labels: []Label{{Name: "version", Value: runtime.Version()}}, Value: 1}}},
	)
	return out
}
