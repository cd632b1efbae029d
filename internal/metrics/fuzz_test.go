package metrics_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/metrics"
)

// FuzzLabelEscaping: any label values, written and read back by the strict
// reader, are the values that went in (bad UTF-8 replaced), and the help
// text too.
func FuzzLabelEscaping(f *testing.F) {
	for _, s := range [][3]string{
		{`"`, `\`, "\n"}, {`\"`, `\\n`, "a\n\"b\\"}, {"", "", ""}, {"ü✓", "\xff", "}{,="}, {`le="1"`, "# TYPE x", " 1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, help string) {
		reg := metrics.NewRegistry()
		c := metrics.NewCounterVec(metrics.CounterOpts{Name: "f_total", Help: strings.ToValidUTF8(help, "\uFFFD")}, []string{"a", "b"})
		h := metrics.NewHistogramVec(metrics.HistogramOpts{Name: "f_seconds", Buckets: []float64{1}}, []string{"a"})
		reg.MustRegister(c, h)
		c.WithLabelValues(a, b).Inc()
		c.WithLabelValues(b, a).Inc()
		h.WithLabelValues(a).Observe(2)
		out := text(reg)
		fams, err := readText(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		clean := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		want := 1.0
		if clean(a) == clean(b) {
			want = 2
		}
		if v, ok := find(fams, "f_total", label{"a", clean(a)}, label{"b", clean(b)}); !ok || v != want {
			t.Fatalf("f_total{a=%q,b=%q}: %v %v\n%s", a, b, v, ok, out)
		}
		if v, ok := find(fams, "f_seconds_count", label{"a", clean(a)}); !ok || v != 1 {
			t.Fatalf("f_seconds_count{a=%q}: %v %v\n%s", a, v, ok, out)
		}
		if fams[1].help != clean(help) || !utf8.ValidString(out) {
			t.Fatalf("help %q, want %q", fams[1].help, clean(help))
		}
	})
}
