package view_test

import (
	"context"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/view"
)

func addHintSeeds(f *testing.F, add func(hints []byte)) {
	for _, c := range loadCases(f) {
		add(hintsBytes(c.Hints))
	}
}

// FuzzCompile: any bytes either compile or give a *view.Error; never a panic.
func FuzzCompile(f *testing.F) {
	addHintSeeds(f, func(h []byte) { f.Add(h) })
	f.Fuzz(func(t *testing.T, hints []byte) {
		v, err := view.Compile(hints)
		if err != nil {
			if _, ok := err.(*view.Error); !ok {
				t.Fatalf("error %v is %T, not *view.Error", err, err)
			}
			return
		}
		if v.Hash() == "" {
			t.Fatal("compiled view without a hash")
		}
	})
}

// FuzzApply: a compiled view applied to any JSON never panics, always gives
// an encodable result, and a fallback is exactly the filtered context.
func FuzzApply(f *testing.F) {
	inputs := [][]byte{
		[]byte(`{"items":[{"name":"a","n":1},{"name":"b"}],"secret":"x","meta":{"internal_id":1}}`),
		[]byte(`[1,"two",{"three":[3]}]`),
		[]byte(`"scalar"`),
		[]byte(`{"a":{"b":{"c":{"d":[null,true,1e400,-0.0]}}}}`),
	}
	cases := loadCases(f)
	for i, c := range cases {
		in := []byte(c.Context)
		if in == nil {
			in = inputs[i%len(inputs)]
		}
		f.Add(hintsBytes(c.Hints), in)
	}
	opts := view.Options{RuleTimeout: 20 * time.Millisecond, MaxTemplateIterations: 10_000, MaxOutputBytes: 64 << 10}
	f.Fuzz(func(t *testing.T, hints, input []byte) {
		v, err := view.CompileWith(hints, opts)
		if err != nil {
			return
		}
		doc, err := view.DecodeJSON(input)
		if err != nil {
			return
		}
		res := v.Apply(context.Background(), view.Record{Title: "t", Tags: []string{"x"}, Version: 1, Context: doc})
		out, err := view.Encode(res.Value)
		if err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		switch res.Status {
		case view.StatusOK:
			if res.Err != nil {
				t.Fatalf("OK with error %v", res.Err)
			}
		case view.StatusFallback:
			if res.Err == nil {
				t.Fatal("FALLBACK without error")
			}
			want, _ := view.Encode(v.Filter(doc))
			if string(out) != string(want) {
				t.Fatalf("fallback %s is not the filtered context %s", out, want)
			}
		default:
			t.Fatalf("status %q", res.Status)
		}
	})
}
