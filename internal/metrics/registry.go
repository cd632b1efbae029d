package metrics

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ContentType is the media type of the text exposition format written here.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Type is the type of a family, as its TYPE line says it.
type Type uint8

// The types of the format ("untyped" is never written).
const (
	TypeCounter Type = iota
	TypeGauge
	TypeHistogram
	TypeSummary
)

func (t Type) String() string {
	switch t {
	case TypeCounter:
		return "counter"
	case TypeGauge:
		return "gauge"
	case TypeHistogram:
		return "histogram"
	case TypeSummary:
		return "summary"
	}
	return "untyped"
}

// A Family is the series of one metric name at one moment.
type Family struct {
	Name, Help string
	Type       Type
	Series     []Series
}

// A Series is one sample (counter, gauge) or one histogram or summary,
// with its labels sorted by name.
type Series struct {
	Labels    []Label
	Value     float64    // counter, gauge
	Buckets   []Bucket   // histogram: cumulative, the last +Inf
	Quantiles []Quantile // summary
	Sum       float64    // histogram, summary
	Count     uint64     // histogram, summary
}

// Label is a label name and value.
type Label struct{ Name, Value string }

// Bucket is a histogram bucket: how many observations were at most
// UpperBound.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Quantile is a summary's estimate of the φ-quantile.
type Quantile struct{ Quantile, Value float64 }

// A Collector is something a Registry gathers families from: a Counter, a
// CounterVec, a HistogramVec, or the runtime and process collectors.
type Collector interface {
	// names are the family names it writes, for the registry's check
	// that no two collectors write the same one.
	names() []string
	// collect appends its families (read now) to out.
	collect(out []Family) []Family
}

// A Registry holds collectors and writes their families, sorted by name,
// each one's series sorted by labels: the same state always reads the
// same.
type Registry struct {
	mu         sync.Mutex
	collectors []Collector
	taken      map[string]bool
}

// NewRegistry is an empty registry.
func NewRegistry() *Registry { return &Registry{taken: map[string]bool{}} }

// Register adds collectors; it refuses (adding none) when a family name is
// taken, by one of them or by a collector registered before.
func (r *Registry) Register(cs ...Collector) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, c := range cs {
		if c, ok := c.(*Counter); ok && c.desc == nil {
			return fmt.Errorf("metrics: a vector's counter is registered with its vector, not alone")
		}
		for _, n := range c.names() {
			if r.taken[n] || seen[n] {
				return fmt.Errorf("metrics: family %s is registered twice", n)
			}
			seen[n] = true
		}
	}
	for n := range seen {
		r.taken[n] = true
	}
	r.collectors = append(r.collectors, cs...)
	return nil
}

// MustRegister is Register, panicking on its error: for collectors the
// program makes, whose names are constants.
func (r *Registry) MustRegister(cs ...Collector) {
	if err := r.Register(cs...); err != nil {
		panic(err)
	}
}

// Gather reads every collector now. Families without series are left out:
// a vector nobody used yet is no family at all.
func (r *Registry) Gather() []Family {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	var fams []Family
	for _, c := range cs {
		fams = c.collect(fams)
	}
	fams = slices.DeleteFunc(fams, func(f Family) bool { return len(f.Series) == 0 })
	slices.SortFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return fams
}

// WriteText writes the families in the text format. keep, when not nil,
// chooses the series written; a family none of whose series is kept is
// not written at all.
func (r *Registry) WriteText(w io.Writer, keep func(labels []Label) bool) error {
	var buf bytes.Buffer
	for _, f := range r.Gather() {
		if keep != nil {
			f.Series = slices.DeleteFunc(f.Series, func(s Series) bool { return !keep(s.Labels) })
			if len(f.Series) == 0 {
				continue
			}
		}
		appendFamily(&buf, &f)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Handler serves the registry's families in the text format, the series
// keep chooses (all when nil).
func (r *Registry) Handler(keep func(labels []Label) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		r.WriteText(&buf, keep) // a bytes.Buffer write does not fail
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.Write(buf.Bytes()) // a client gone away is not ours to report
	})
}

// ServeHTTP serves every series: r is the handler of an unfiltered
// /metrics.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.Handler(nil).ServeHTTP(w, req)
}

func appendFamily(b *bytes.Buffer, f *Family) {
	if f.Help != "" {
		b.WriteString("# HELP ")
		b.WriteString(f.Name)
		b.WriteByte(' ')
		appendEscaped(b, f.Help, false)
		b.WriteByte('\n')
	}
	b.WriteString("# TYPE ")
	b.WriteString(f.Name)
	b.WriteByte(' ')
	b.WriteString(f.Type.String())
	b.WriteByte('\n')
	for i := range f.Series {
		s := &f.Series[i]
		switch f.Type {
		case TypeHistogram:
			for _, bk := range s.Buckets {
				appendSample(b, f.Name, "_bucket", s.Labels, "le", bk.UpperBound, float64(bk.Count))
			}
			appendSample(b, f.Name, "_sum", s.Labels, "", 0, s.Sum)
			appendSample(b, f.Name, "_count", s.Labels, "", 0, float64(s.Count))
		case TypeSummary:
			for _, q := range s.Quantiles {
				appendSample(b, f.Name, "", s.Labels, "quantile", q.Quantile, q.Value)
			}
			appendSample(b, f.Name, "_sum", s.Labels, "", 0, s.Sum)
			appendSample(b, f.Name, "_count", s.Labels, "", 0, float64(s.Count))
		default:
			appendSample(b, f.Name, "", s.Labels, "", 0, s.Value)
		}
	}
}

// appendSample writes one line: name+suffix, the labels and, when extra
// is not empty, the label extra="bound" last, and the value.
func appendSample(b *bytes.Buffer, name, suffix string, labels []Label, extra string, bound, v float64) {
	b.WriteString(name)
	b.WriteString(suffix)
	if len(labels) > 0 || extra != "" {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l.Name)
			b.WriteString(`="`)
			appendEscaped(b, l.Value, true)
			b.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(extra)
			b.WriteString(`="`)
			b.Write(appendFloat(b.AvailableBuffer(), bound))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.Write(appendFloat(b.AvailableBuffer(), v))
	b.WriteByte('\n')
}

// appendEscaped writes s with the format's escapes: a backslash and a
// line feed always, a double quote inside a label value.
func appendEscaped(b *bytes.Buffer, s string, quote bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '"' && quote:
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
}

// appendFloat spells v as Go's shortest round-tripping form, and the
// infinities and NaN as the format does.
func appendFloat(dst []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(dst, "+Inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-Inf"...)
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

// sortSeries orders series by their label values, label by label (the
// labels of one family have the same names in the same order).
func sortSeries(ss []Series) {
	slices.SortFunc(ss, func(a, b Series) int {
		for i := range min(len(a.Labels), len(b.Labels)) {
			if c := strings.Compare(a.Labels[i].Value, b.Labels[i].Value); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(a.Labels), len(b.Labels))
	})
}
