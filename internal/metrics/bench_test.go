package metrics_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/metrics"
)

// The vectors' hot paths as the server and gateway use them: a series
// that exists, found by its label values, counted or observed.

func BenchmarkCounterVecInc(b *testing.B) {
	c := metrics.NewCounterVec(metrics.CounterOpts{Name: "r_total"}, []string{"route", "method", "status"})
	c.WithLabelValues("GET /breadcrumbs/{id}", "GET", "200")
	b.ReportAllocs()
	for b.Loop() {
		c.WithLabelValues("GET /breadcrumbs/{id}", "GET", "200").Inc()
	}
}

func BenchmarkCounterVecIncParallel(b *testing.B) {
	c := metrics.NewCounterVec(metrics.CounterOpts{Name: "r_total"}, []string{"route", "method", "status"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.WithLabelValues("GET /breadcrumbs/{id}", "GET", "200").Inc()
		}
	})
}

func BenchmarkHistogramVecObserve(b *testing.B) {
	h := metrics.NewHistogramVec(metrics.HistogramOpts{Name: "d_seconds",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}}, []string{"route"})
	b.ReportAllocs()
	for b.Loop() {
		h.WithLabelValues("GET /breadcrumbs/{id}").Observe(0.003)
	}
}
