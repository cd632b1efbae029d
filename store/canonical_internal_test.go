package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/view"
)

// decodedCanon is data's canonical form by the decoding path of Prepare,
// and whether that path takes it (an object without NUL).
func decodedCanon(data []byte) ([]byte, bool) {
	if !utf8.Valid(data) {
		return nil, false
	}
	doc, err := view.DecodeJSON(data)
	if err != nil {
		return nil, false
	}
	if _, ok := doc.(map[string]any); !ok || hasNUL(doc) {
		return nil, false
	}
	canon, err := canonjson.Marshal(doc)
	return canon, err == nil
}

var canonicalSeeds = []string{
	`{}`, `{"a":1}`, `{"a":1,"b":[1,2.5,-0,1e5,1E-7,true,false,null,"x"],"c":{"d":{}}}`,
	`{"a":"line\nbreak \"quoted\" back\\slash \u001f \u2028 \u2029 tab\t"}`,
	`{ "a":1}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a":"\u00e9"}`, `{"a":"\/"}`, `{"a":"\u000a"}`,
	`{"a":"\u0000"}`, `{"a":"\u001F"}`, "{\"a\":\"\u2028\"}", `{"a\n":1}`, `{"a":01}`, `{"a":1.}`,
	`{"a":-}`, `{"a":1,}`, `{"a":[1,]}`, `{"a":1}x`, `[1]`, `"a"`, `{"a":"\ufffd"}`, `{"a":"\ud800"}`,
	`{"a":tru}`, `{"a":[]}`, `{"":0,"a":{"":[[]]}}`, `{"é":1,"z":2}`, `{"z":2,"é":1}`,
}

// FuzzCanonicalObject: whatever canonicalObject takes, the decoding path
// of Prepare takes too and writes the same bytes: a context that is not
// canonical (or holds a NUL) never keeps its bytes. And what the decoding
// path writes is taken, unless a key needs an escape.
func FuzzCanonicalObject(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		canon, decodes := decodedCanon(data)
		if utf8.Valid(data) && canonicalObject(data) {
			if !decodes || !bytes.Equal(canon, data) {
				t.Fatalf("taken as canonical: %q; the decoding path: %q, %v", data, canon, decodes)
			}
		}
		if decodes && !canonicalObject(canon) && !escapedKey(canon) && strictDepth(canon) < canonicalDepth {
			t.Fatalf("canonical form %q of %q not taken", canon, data)
		}
	})
}

// escapedKey says a key of the canonical document data holds an escape.
func escapedKey(data []byte) bool {
	doc, _ := view.DecodeJSON(data)
	var walk func(v any) bool
	walk = func(v any) bool {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				if strings.Contains(string(canonjson.AppendString(nil, k)), `\`) || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range t {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(doc)
}

// strictDepth is how deep data's arrays and objects nest.
func strictDepth(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, most := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return most
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			most = max(most, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// TestPrepareCanonicalContext: a context in canonical form is kept as it
// is, without being decoded and encoded again (Prepare's allocations
// tell), in a copy of its own; any other is canonicalised as before, or
// refused with its field.
func TestPrepareCanonicalContext(t *testing.T) {
	ctx := []byte(`{"attempts":[{"latency_ms":0.7,"model":"gpt-x","provider":"up","status":200}],"dialect":"anthropic",` +
		`"request":{"max_tokens":50,"messages":[{"content":"hello there\nsecond line","role":"user"}],"model":"gpt-x"},` +
		`"response":"a body kept as text: \"quoted\" \u001f","route":"gpt-x","status":200,"summary":{"model":"gpt-x","tokens":107}}`)
	prepare := func(ctx []byte) (*Breadcrumb, error) {
		b := &Breadcrumb{Title: "t", Context: ctx}
		return b, Prepare(b)
	}
	b, err := prepare(ctx)
	if err != nil || !bytes.Equal(b.Context, ctx) {
		t.Fatalf("%s, %v", b.Context, err)
	}
	b.Context[0] = 'X'
	if ctx[0] != '{' {
		t.Fatal("the record shares the caller's bytes")
	}
	ctx[0] = '{'
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := prepare(ctx); err != nil {
			t.Fatal(err)
		}
	})
	// The breadcrumb, the context's copy, the checksum's text, the tags.
	if allocs > 6 {
		t.Errorf("Prepare of a canonical context: %v allocations; decoded again?", allocs)
	}

	for _, c := range []struct{ in, want, path string }{
		{`{ "b":1, "a":[1, 2] }`, `{"a":[1,2],"b":1}`, ""},
		{`{"a":1,"a":2}`, `{"a":2}`, ""},
		{`{"a":"\u00e9\/\u000a"}`, `{"a":"é/\n"}`, ""},
		{"{\"a\":\"\u2028\"}", `{"a":"\u2028"}`, ""},
		{`{"a":"\ud800"}`, `{"a":"` + "\ufffd" + `"}`, ""},
		{`{"a":"x\u0000"}`, "", "context"},
		{`{"a\u0000":1}`, "", "context"},
		{`[1]`, "", "context"},
		{`{"a":01}`, "", "context"},
		{`{"a":1}x`, "", "context"},
	} {
		b, err := prepare([]byte(c.in))
		if c.path != "" {
			e, ok := err.(*Error)
			if !ok || e.Path != c.path {
				t.Errorf("%s: %v, want an error at %s", c.in, err, c.path)
			}
			continue
		}
		if err != nil || string(b.Context) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.in, b.Context, err, c.want)
		}
	}
}

// BenchmarkPrepareCanonical is Prepare's cost for a context already in
// canonical form, as the gateway's records are written.
func BenchmarkPrepareCanonical(b *testing.B) {
	ctx, _ := decodedCanon([]byte(`{"provider":"openai","model":"gpt-x","route":"/v1/chat/completions","status":200,"duration_ms":412,` +
		`"usage":{"input_tokens":1200,"output_tokens":87,"cost_usd":0.00131},"first_message":"summarise the attached notes about the release",` +
		`"request":{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"summarise the attached notes <draft> & more"}]}}`))
	b.ReportAllocs()
	for b.Loop() {
		r := Breadcrumb{Title: "gateway exchange", Context: ctx, Tags: []string{"gateway", "openai"}}
		if err := Prepare(&r); err != nil {
			b.Fatal(err)
		}
	}
}
