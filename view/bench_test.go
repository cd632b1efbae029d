package view_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/view"
)

// typicalHints is the benchmark's hints document: one template, one extract,
// one jq and an exclude.
const typicalHints = `{
  "exclude": ["secret", "items.password"],
  "transform": {
    "summary": {"type": "template", "template": "# {{title}}: {{context.items.length}} users\n{{#each context.items}}- {{name}} <{{email}}>\n{{/each}}"},
    "names":   {"type": "extract",  "value": "$.items[*].name"},
    "active":  {"type": "jq",       "query": "[.items[] | select(.active) | .id] | length"}
  }
}`

// breadcrumb builds a context of about size bytes.
func breadcrumb(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"secret":"sk-123","meta":{"source":"crm","internal_id":42},"items":[`)
	for i := 0; b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user %d","email":"user%d@example.com","active":%t,"score":%d.5,"password":"pw-%d","tags":["a","b"],"bio":"writes Go and reads papers about agents"}`,
			i, i, i, i%3 == 0, i*7, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

var sizes = []struct {
	name string
	size int
}{{"5KB", 5 << 10}, {"100KB", 100 << 10}}

// decodeEncode is the baseline: what it costs to read and write the same JSON
// with encoding/json and nothing else.
func decodeEncode(data []byte) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		panic(err)
	}
	if _, err := json.Marshal(v); err != nil {
		panic(err)
	}
}

func applyTypical(v *view.View, data []byte) {
	_, res, err := v.ApplyJSON(context.Background(), data, view.Record{Title: "Users"})
	if err != nil || res.Status != view.StatusOK {
		panic(fmt.Sprint(err, res.Err))
	}
}

func BenchmarkDecodeEncode(b *testing.B) {
	for _, s := range sizes {
		data := breadcrumb(s.size)
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				decodeEncode(data)
			}
		})
	}
}

func BenchmarkApply(b *testing.B) {
	v, err := view.Compile([]byte(typicalHints))
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sizes {
		data := breadcrumb(s.size)
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				applyTypical(v, data)
			}
		})
	}
}

// BenchmarkApplyVsDecodeEncode runs the baseline and the view in the same
// loop and reports their ratio (target: at most 3). "merge" is the same
// hints in merge mode, which re-encodes the whole filtered context.
func BenchmarkApplyVsDecodeEncode(b *testing.B) {
	replace, err := view.Compile([]byte(typicalHints))
	if err != nil {
		b.Fatal(err)
	}
	merge, err := view.Compile([]byte(strings.Replace(typicalHints, `"transform"`, `"mode": "merge", "transform"`, 1)))
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sizes {
		for _, m := range []struct {
			name string
			v    *view.View
		}{{"replace", replace}, {"merge", merge}} {
			v := m.v
			data := breadcrumb(s.size)
			b.Run(s.name+"/"+m.name, func(b *testing.B) {
				var base, apply time.Duration
				for b.Loop() {
					t0 := time.Now()
					decodeEncode(data)
					t1 := time.Now()
					applyTypical(v, data)
					apply += time.Since(t1)
					base += t1.Sub(t0)
				}
				b.ReportMetric(float64(apply)/float64(base), "apply/baseline")
			})
		}
	}
}

// BenchmarkCompile is the one-time cost that Apply never pays again; compare
// its allocations with BenchmarkApplyCompiled's.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := view.Compile([]byte(typicalHints)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyCompiled applies the compiled view to an already decoded
// context: rule work only, no JSON decoding and no parsing. On the tiny
// context its allocations are a fraction of BenchmarkCompile's.
func BenchmarkApplyCompiled(b *testing.B) {
	v, _ := view.Compile([]byte(typicalHints))
	for _, s := range []struct {
		name string
		data []byte
	}{{"tiny", []byte(tinyContext)}, {"5KB", breadcrumb(5 << 10)}} {
		doc, _ := view.DecodeJSON(s.data)
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := v.Apply(context.Background(), view.Record{Title: "Users", Context: doc}); res.Status != view.StatusOK {
					b.Fatal(res.Err)
				}
			}
		})
	}
}

const tinyContext = `{"secret":"s","items":[{"id":1,"name":"a","email":"a@x","active":true,"password":"p"}]}`

// TestApplyDoesNoParsing: applying a compiled view allocates a fraction of
// what compiling it does, so Apply cannot be re-parsing the hints.
func TestApplyDoesNoParsing(t *testing.T) {
	v, err := view.Compile([]byte(typicalHints))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := view.DecodeJSON([]byte(tinyContext))
	apply := testing.AllocsPerRun(50, func() { v.Apply(context.Background(), view.Record{Title: "Users", Context: doc}) })
	compile := testing.AllocsPerRun(10, func() { view.Compile([]byte(typicalHints)) })
	t.Logf("allocations per op: apply %v, compile %v", apply, compile)
	if apply*3 > compile {
		t.Fatalf("apply allocates %v per run, compile %v: apply is doing compile-time work", apply, compile)
	}
}

// BenchmarkCacheHit is the cost of finding a compiled view by its hints.
func BenchmarkCacheHit(b *testing.B) {
	c := view.NewCache(16, view.Options{})
	h := []byte(typicalHints)
	c.Compile(h)
	b.ReportAllocs()
	for b.Loop() {
		c.Compile(h)
	}
}
