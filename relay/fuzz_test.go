package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/ctxkit/ctxkit/relay"
)

// FuzzParsePipeline: any bytes either compile to a pipeline or give a
// *relay.Error; never a panic.
func FuzzParsePipeline(f *testing.F) {
	for _, c := range loadCases(f) {
		f.Add(text(c.Pipeline))
	}
	f.Add([]byte("transformers:\n  - type: redactor\n    patterns:\n      - {kind: k, regex: 'a+'}\n    targets: [x]\n"))
	f.Add([]byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := relay.ParsePipeline(bytes.NewReader(data))
		if err != nil {
			var re *relay.Error
			if !errors.As(err, &re) || re.Code == "" {
				t.Fatalf("error %v is %T, not a coded *relay.Error", err, err)
			}
			return
		}
		for _, tr := range p.Transformers() {
			if tr == nil || tr.Name() == "" {
				t.Fatal("a transformer without a name")
			}
		}
	})
}

// FuzzDecodeContext: any bytes either decode to a valid context or give a
// *relay.Error. A decoded context relays through every built-in
// transformer without changing, its result assembles, and it encodes to
// JSON that decodes to the same context.
func FuzzDecodeContext(f *testing.F) {
	for _, c := range loadCases(f) {
		f.Add(text(c.Context))
	}
	f.Add([]byte(`{"source_agent":"A","target_agent":"B","task":"T","constraints":["c"],"memory":{"k":[1,2.5,{"x":null}]},
		"prompts":[{"id":"a","content":"sk-abcdefghijklmnopqrstuvwx {{v}}","variables":{"v":"w"},"metadata":{"n":1},"priority":2,
		"conditions":[{"variable":"v","exists":true}],"examples":[{"input":"i","output":"o"}]}]}`))
	redactor, err := relay.NewRedactor(relay.RedactorOptions{Emails: true})
	if err != nil {
		f.Fatal(err)
	}
	pipeline := relay.NewPipeline(relay.NewContextInjector(), &relay.ScopeNarrower{KeywordFilter: []string{"a", "é"}}, redactor)
	lim := relay.Limits{MaxPrompts: 64, MaxContentBytes: 4 << 10}
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := relay.DecodeContext(data, lim)
		if err != nil {
			var re *relay.Error
			if !errors.As(err, &re) || re.Code == "" {
				t.Fatalf("error %v is %T, not a coded *relay.Error", err, err)
			}
			return
		}
		before, err := json.Marshal(rc)
		if err != nil {
			t.Fatalf("a decoded context does not encode: %v", err)
		}
		again, err := relay.DecodeContext(before, lim)
		if err != nil {
			t.Fatalf("the encoded context does not decode: %v\n%s", err, before)
		}
		if b, _ := json.Marshal(again); !bytes.Equal(b, before) {
			t.Fatalf("round trip changed the context:\n%s\n%s", before, b)
		}
		out, _, err := pipeline.Run(context.Background(), rc)
		if err != nil && !errors.Is(err, relay.ErrTransformFailed) {
			t.Fatalf("relay: %v", err)
		}
		if after, _ := json.Marshal(rc); !bytes.Equal(after, before) {
			t.Fatalf("the relay changed its input:\n%s\n%s", before, after)
		}
		relay.Assemble(out)
	})
}
