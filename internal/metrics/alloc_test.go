//go:build !race

package metrics_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/metrics"
)

// TestHotPathsDoNotAllocate: counting into, and observing in, a series
// that exists allocates nothing, whatever the length of its values (the
// race detector's instrumentation allocates, hence the build tag).
func TestHotPathsDoNotAllocate(t *testing.T) {
	c := metrics.NewCounterVec(metrics.CounterOpts{Name: "c_total"}, []string{"route", "method", "status"})
	h := metrics.NewHistogramVec(metrics.HistogramOpts{Name: "h_seconds", Buckets: []float64{1, 2}}, []string{"route"})
	long := string(make([]byte, 4096))
	c.WithLabelValues(long, "GET", "200")
	h.WithLabelValues(long)
	if n := testing.AllocsPerRun(1000, func() {
		c.WithLabelValues(long, "GET", "200").Inc()
		c.WithLabelValues(long, "GET", "200").Add(0.5)
		h.WithLabelValues(long).Observe(1.5)
	}); n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}
