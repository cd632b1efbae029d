// Package metrics keeps counters and histograms and writes them in the
// Prometheus text exposition format, version 0.0.4, together with the Go
// runtime and process series a scraper expects of a Go service.
//
// It does no work at package initialisation and uses nothing beyond the
// standard library: every ctxkit process links it, and most of them
// (ctxkit version, ctxkit apply) never serve a metric.
//
// The hot paths are cheap: Inc, Add and Observe are atomic operations, and
// a vector finds an existing series under a read lock without allocating.
// Constructors panic on a malformed name or label list, as regexp.MustCompile
// does: they are called with constants, and a typo is the program's fault.
package metrics

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// CounterOpts name a counter (vector) and say what it counts.
type CounterOpts struct {
	Name string // [a-zA-Z_:][a-zA-Z0-9_:]*, conventionally ending in _total
	Help string
}

// HistogramOpts name a histogram vector, say what it observes and give the
// upper bounds of its buckets (strictly increasing, finite; +Inf is
// always added).
type HistogramOpts struct {
	Name    string
	Help    string
	Buckets []float64
}

// A Counter is a float64 that only goes up. Whole increments (Inc, and Add
// of an integral value) go to an integer that never loses precision;
// fractions to a float updated by compare-and-swap.
type Counter struct {
	whole atomic.Uint64
	frac  atomic.Uint64 // float64 bits
	desc  *desc         // set on a counter of its own (NewCounter), nil in a vector
}

// NewCounter is a counter without labels, for a Registry.
func NewCounter(o CounterOpts) *Counter {
	d := newDesc(o.Name, o.Help, TypeCounter, nil)
	return &Counter{desc: d}
}

// Inc adds 1.
func (c *Counter) Inc() { c.whole.Add(1) }

// Add adds v, which must not be negative (a counter that went down would
// read as a restart to every rate() over it): a negative v panics. NaN is
// ignored.
func (c *Counter) Add(v float64) {
	if v < 0 {
		panic(fmt.Sprintf("metrics: counter cannot decrease (Add(%v))", v))
	}
	if w := uint64(v); float64(w) == v && v < 1<<63 {
		c.whole.Add(w)
		return
	}
	if math.IsNaN(v) {
		return
	}
	for {
		old := c.frac.Load()
		if c.frac.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Value is the counter's current value.
func (c *Counter) Value() float64 {
	return float64(c.whole.Load()) + math.Float64frombits(c.frac.Load())
}

func (c *Counter) names() []string { return []string{c.desc.name} }

func (c *Counter) collect(out []Family) []Family {
	return append(out, Family{Name: c.desc.name, Help: c.desc.help, Type: TypeCounter,
		Series: []Series{{Value: c.Value()}}})
}

// A CounterVec is a family of counters told apart by a fixed list of label
// names. Every distinct list of values is a series kept for the life of
// the process: take label values from bounded sets only.
type CounterVec struct{ v *vec[Counter] }

// NewCounterVec is a counter vector with the given label names.
func NewCounterVec(o CounterOpts, labels []string) *CounterVec {
	d := newDesc(o.Name, o.Help, TypeCounter, labels)
	return &CounterVec{v: newVec(d, func() *Counter { return &Counter{} })}
}

// WithLabelValues is the counter of these label values, in the order of the
// vector's label names; it is created at zero when new. A count of values
// other than the vector's label count panics.
func (c *CounterVec) WithLabelValues(values ...string) *Counter { return c.v.get(values) }

// DeleteMatch drops every series whose label has value (a label value
// that names something gone, such as a deleted webhook) and says how
// many; the label must be one of the vector's.
func (c *CounterVec) DeleteMatch(label, value string) int { return c.v.deleteMatch(label, value) }

func (c *CounterVec) names() []string { return []string{c.v.desc.name} }

func (c *CounterVec) collect(out []Family) []Family {
	return append(out, c.v.family(func(c *Counter, s *Series) { s.Value = c.Value() }))
}

// A Histogram counts observations into buckets by upper bound and sums
// them.
type Histogram struct {
	bounds []float64       // shared with the vector, read only
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits
}

// Observe adds v to the bucket of the least upper bound not below it (+Inf
// for NaN) and to the sum.
func (h *Histogram) Observe(v float64) {
	i := len(h.bounds)
	if len(h.bounds) <= 16 { // a short scan beats a binary search
		for j, b := range h.bounds {
			if v <= b {
				i = j
				break
			}
		}
	} else if j, _ := slices.BinarySearch(h.bounds, v); !math.IsNaN(v) {
		i = j
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// read fills s with cumulative buckets; the count is their total, so the
// +Inf bucket always equals _count even while observations land.
func (h *Histogram) read(s *Series) {
	s.Buckets = make([]Bucket, len(h.counts))
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
		ub := math.Inf(1)
		if i < len(h.bounds) {
			ub = h.bounds[i]
		}
		s.Buckets[i] = Bucket{UpperBound: ub, Count: n}
	}
	s.Count, s.Sum = n, math.Float64frombits(h.sum.Load())
}

// A HistogramVec is a family of histograms told apart by a fixed list of
// label names, all with the same buckets.
type HistogramVec struct{ v *vec[Histogram] }

// NewHistogramVec is a histogram vector with the given label names.
func NewHistogramVec(o HistogramOpts, labels []string) *HistogramVec {
	d := newDesc(o.Name, o.Help, TypeHistogram, labels)
	for i, b := range o.Buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) || (i > 0 && b <= o.Buckets[i-1]) {
			panic(fmt.Sprintf("metrics: %s: Buckets[%d] = %v: bounds must be finite and strictly increasing", o.Name, i, b))
		}
	}
	bounds := slices.Clone(o.Buckets)
	return &HistogramVec{v: newVec(d, func() *Histogram {
		return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
	})}
}

// WithLabelValues is the histogram of these label values, in the order of
// the vector's label names; it is created empty when new.
func (h *HistogramVec) WithLabelValues(values ...string) *Histogram { return h.v.get(values) }

// DeleteMatch drops every series whose label has value and says how
// many, as CounterVec.DeleteMatch.
func (h *HistogramVec) DeleteMatch(label, value string) int { return h.v.deleteMatch(label, value) }

func (h *HistogramVec) names() []string { return []string{h.v.desc.name} }

func (h *HistogramVec) collect(out []Family) []Family {
	return append(out, h.v.family(func(h *Histogram, s *Series) { h.read(s) }))
}

// desc is what a family is: name, help, type and label names.
type desc struct {
	name, help string
	typ        Type
	labels     []string // as declared: the order of WithLabelValues
	order      []int    // indexes into labels, sorted by name: the order written
}

func newDesc(name, help string, typ Type, labels []string) *desc {
	if !validName(name, true) {
		panic(fmt.Sprintf("metrics: Name %q is not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", name))
	}
	if !utf8.ValidString(help) {
		panic(fmt.Sprintf("metrics: %s: Help is not UTF-8", name))
	}
	d := &desc{name: name, help: help, typ: typ, labels: slices.Clone(labels)}
	for i, l := range labels {
		switch {
		case !validName(l, false) || len(l) >= 2 && l[:2] == "__":
			panic(fmt.Sprintf("metrics: %s: label %q is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, no leading __)", name, l))
		case typ == TypeHistogram && l == "le", typ == TypeSummary && l == "quantile":
			panic(fmt.Sprintf("metrics: %s: label %q is reserved for the %s's own series", name, l, typ))
		case slices.Contains(labels[:i], l):
			panic(fmt.Sprintf("metrics: %s: label %q is listed twice", name, l))
		}
		d.order = append(d.order, i)
	}
	slices.SortFunc(d.order, func(a, b int) int {
		if labels[a] < labels[b] {
			return -1
		}
		return 1
	})
	return d
}

// validName reports whether s is a metric name (colons allowed) or a label
// name.
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', colon && c == ':':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// vec holds the series of one family, by the hash of their label values.
// A lookup of an existing series hashes the values and compares them under
// a read lock: no allocation. Only a new series takes the write lock.
type vec[T any] struct {
	desc   *desc
	create func() *T
	mu     sync.RWMutex
	series map[uint64][]*entry[T] // a slice for the rare hash collision
}

type entry[T any] struct {
	values []string // as declared, valid UTF-8
	m      *T
}

func newVec[T any](d *desc, create func() *T) *vec[T] {
	return &vec[T]{desc: d, create: create, series: map[uint64][]*entry[T]{}}
}

func (v *vec[T]) get(values []string) *T {
	if len(values) != len(v.desc.labels) {
		panic(fmt.Sprintf("metrics: %s: %d label values for %d labels %q", v.desc.name, len(values), len(v.desc.labels), v.desc.labels))
	}
	h := hashValues(values)
	v.mu.RLock()
	for _, e := range v.series[h] {
		if slices.Equal(e.values, values) {
			v.mu.RUnlock()
			return e.m
		}
	}
	v.mu.RUnlock()
	return v.add(values)
}

// add finds or makes the series of values. A value that is not UTF-8
// cannot be written in the text format; it is stored with its bad bytes
// replaced, so every spelling of it meets the same series (the fast path
// misses for it and comes here, the slow way, each time).
func (v *vec[T]) add(values []string) *T {
	clean := make([]string, len(values))
	for i, s := range values {
		clean[i] = s
		if !utf8.ValidString(s) {
			clean[i] = strings.ToValidUTF8(s, "\uFFFD")
		}
	}
	h := hashValues(clean)
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.series[h] {
		if slices.Equal(e.values, clean) {
			return e.m
		}
	}
	m := v.create()
	v.series[h] = append(v.series[h], &entry[T]{values: clean, m: m})
	return m
}

// deleteMatch drops every series whose label named label has value and
// says how many; a later WithLabelValues starts such a series afresh.
func (v *vec[T]) deleteMatch(label, value string) int {
	k := slices.Index(v.desc.labels, label)
	if k < 0 {
		panic(fmt.Sprintf("metrics: %s: no label %q in %q", v.desc.name, label, v.desc.labels))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for h, es := range v.series {
		kept := slices.DeleteFunc(es, func(e *entry[T]) bool { return e.values[k] == value })
		n += len(es) - len(kept)
		if len(kept) == 0 {
			delete(v.series, h)
		} else {
			v.series[h] = kept
		}
	}
	return n
}

// family is the vector's series, labels sorted by name and series by
// their label values in that order.
func (v *vec[T]) family(read func(*T, *Series)) Family {
	v.mu.RLock()
	entries := make([]*entry[T], 0, len(v.series))
	for _, es := range v.series {
		entries = append(entries, es...)
	}
	v.mu.RUnlock()
	f := Family{Name: v.desc.name, Help: v.desc.help, Type: v.desc.typ, Series: make([]Series, len(entries))}
	for i, e := range entries {
		s := &f.Series[i]
		s.Labels = make([]Label, len(v.desc.order))
		for j, k := range v.desc.order {
			s.Labels[j] = Label{Name: v.desc.labels[k], Value: e.values[k]}
		}
		read(e.m, s)
	}
	sortSeries(f.Series)
	return f
}

// hashValues is FNV-1a over the values, each followed by a byte no UTF-8
// string holds, so ("ab","c") and ("a","bc") differ.
func hashValues(values []string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, s := range values {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * prime
		}
		h = (h ^ 0xff) * prime
	}
	return h
}
