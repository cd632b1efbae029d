package server

import (
	"net/http"
	"strconv"
	"time"

	// The package's name is this file's type's: metric reads as what it
	// makes.
	metric "github.com/ctxkit/ctxkit/internal/metrics"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg        *metric.Registry
	requests   *metric.CounterVec
	latency    *metric.HistogramVec
	viewCache  *metric.CounterVec
	views      *metric.CounterVec
	storeFails *metric.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: metric.NewRegistry(),
		requests: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: metric.NewHistogramVec(metric.HistogramOpts{
			Name: "ctxkit_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		viewCache: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_view_cache_total", Help: "View cache lookups by result (hit or miss).",
		}, []string{"result"}),
		views: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_views_total", Help: "Views computed, by status (OK or FALLBACK).",
		}, []string{"status"}),
		storeFails: metric.NewCounter(metric.CounterOpts{
			Name: "ctxkit_store_errors_total", Help: "Requests that failed with an internal (store) error.",
		}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.viewCache, m.views, m.storeFails,
		metric.NewGoCollector(), metric.NewProcessCollector())
	return m
}

// handler serves the metrics a curator of owner may read: every series,
// but for those labelled with an owner, only the owner's own. The
// gateway's token and cost series name owners and agents; another
// owner's would tell who uses the server, and how much. A family left
// without series is not written: its name would say an owner was there.
func (m *metrics) handler(owner string) http.Handler {
	return m.reg.Handler(func(labels []metric.Label) bool { return readable(labels, owner) })
}

// readable reports whether a curator of owner may read the series with
// these labels: one without an owner label, or one of owner's own. The
// series of owners past the label bound, "other", sum several owners and
// are nobody's, even an owner named "other".
func readable(labels []metric.Label, owner string) bool {
	for _, l := range labels {
		if l.Name == "owner" {
			return l.Value == owner && l.Value != "other"
		}
	}
	return true
}

// instrument records every request's route, method, status and latency.
// Each label takes its values from a small fixed set, whatever the request
// holds: a label value is a series the registry keeps for the life of the
// process, so a label taken from the request would let any client, without a
// token, grow the server's memory and /metrics without bound.
func (m *metrics) instrument(mux *router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		mux.ServeHTTP(rec, r)
		route := mux.routeLabel(r.Pattern)
		m.requests.WithLabelValues(route, methodLabel(r.Method), statusLabel(rec.status)).Inc()
		m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// router is the server's ServeMux, remembering the patterns registered on it:
// the only values the route label takes, besides "unmatched". r.Pattern is
// not enough on its own: for a redirect to a subtree pattern the mux sets it
// to the request's path.
type router struct {
	*http.ServeMux
	patterns map[string]bool // written only while routes are registered, before serving
}

func newRouter() *router { return &router{ServeMux: http.NewServeMux(), patterns: map[string]bool{}} }

func (m *router) Handle(pattern string, h http.Handler) {
	m.patterns[pattern] = true
	m.ServeMux.Handle(pattern, h)
}

func (m *router) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// routeLabel is pattern when it is one registered, else "unmatched"; the
// catch-all "/" (404s and 405s) is "unmatched" too.
func (m *router) routeLabel(pattern string) string {
	if pattern == "/" || !m.patterns[pattern] {
		return "unmatched"
	}
	return pattern
}

// methodLabel is the method when it is one HTTP defines, else "OTHER".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// statusLabel is the status code when net/http knows it (a few dozen),
// else its class ("5xx"): the gateway may pass on any code an upstream sent.
func statusLabel(code int) string {
	if http.StatusText(code) != "" {
		return strconv.Itoa(code)
	}
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code/100) + "xx"
}

type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wroteHeader {
		s.status, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
