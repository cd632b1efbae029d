package view_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/canonjson"
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
		out, err := canonjson.Marshal(res.Value)
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
			want, _ := canonjson.Marshal(v.Filter(doc))
			if string(out) != string(want) {
				t.Fatalf("fallback %s is not the filtered context %s", out, want)
			}
		default:
			t.Fatalf("status %q", res.Status)
		}
	})
}

// FuzzTemplate drives the template engine directly: any template string over
// any JSON context compiles or fails with a *view.Error, and a compiled one
// runs to a string or falls back; never a panic or a runaway.
func FuzzTemplate(f *testing.F) {
	for _, c := range loadCases(f) {
		var h struct {
			Transform map[string]struct {
				Type     string `json:"type"`
				Template string `json:"template"`
			} `json:"transform"`
		}
		if json.Unmarshal(hintsBytes(c.Hints), &h) != nil {
			continue
		}
		for _, r := range h.Transform {
			if r.Type == "template" {
				in := []byte(c.Context)
				if in == nil {
					in = []byte(`{"items":[{"name":"a","n":0}],"s":"x"}`)
				}
				f.Add(r.Template, in)
			}
		}
	}
	opts := view.Options{RuleTimeout: 50 * time.Millisecond, MaxTemplateIterations: 10_000, MaxOutputBytes: 64 << 10}
	f.Fuzz(func(t *testing.T, tpl string, input []byte) {
		hints, _ := json.Marshal(map[string]any{"transform": map[string]any{"t": map[string]any{"type": "template", "template": tpl}}})
		v, err := view.CompileWith(hints, opts)
		if err != nil {
			if _, ok := err.(*view.Error); !ok {
				t.Fatalf("error %v is %T, not *view.Error", err, err)
			}
			return
		}
		doc, err := view.DecodeJSON(input)
		if err != nil {
			return
		}
		res := v.Apply(context.Background(), view.Record{Title: "t", Tags: []string{"a"}, Version: 2, Context: doc})
		if res.Status == view.StatusOK {
			if _, ok := res.Value.(map[string]any)["t"].(string); !ok {
				t.Fatalf("template output is %T", res.Value.(map[string]any)["t"])
			}
		} else if res.Err == nil || res.Err.Path != "transform.t" {
			t.Fatalf("fallback without the rule's error: %v", res.Err)
		}
	})
}
