package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// skipSeeds are documents whose first value Skip reads, or refuses, as
// encoding/json does.
var skipSeeds = []string{
	`null`, `true`, `false`, ` 0 `, `-0`, `12`, `-1.5e+3`, `1E-2`, `0.0`, `"plain"`, `"\"\\\/\b\f\n\r\t\u00e9\uD83D"`,
	"\"caf\xc3\xa9 \xff\"", `[]`, `{}`, ` [ 1 , "a" , [ ] , { } ] `, `{"a":{"b":[true,false,null]},"c":""}`,
	`{"k\u0061":1}`, `[[[[]]]]`, `{"a":[{"b":[{"c":[]}]}]}`,
	// Values that end before the text does: the rest is the caller's.
	`1x`, `01`, `true1`, `{"a":1}x`, `"x"y`, `0.5.5`,
	// Not JSON.
	``, ` `, `-`, `+1`, `.5`, `1.`, `1e`, `1e+`, `--1`, `tru`, `nul`, `fals`, `True`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`,
	"\"a\x01\"", `"\`, `[1,]`, `[1 2]`, `[`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{a:1}`, `{"a" 1}`, `{1:2}`, `]`, `}`, `,`,
	strings.Repeat("[", 40) + strings.Repeat("]", 40), strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40),
}

// skipDepth is the depth FuzzSkip and TestSkip skip to.
const skipDepth = 32

// TestSkip: Skip reads the first value of each seed exactly as
// encoding/json's Decoder does, and nesting past its bound is refused.
func TestSkip(t *testing.T) {
	read := 0
	for _, s := range skipSeeds {
		if checkSkip(t, []byte(s)) {
			read++
		}
	}
	if read != 25 {
		t.Fatalf("Skip read %d of the seeds, want 25", read)
	}
	deep := []byte(`[[[1]]]`)
	if r := New(deep); !r.Skip(3) || !r.End() {
		t.Fatal("three levels were refused at depth 3")
	}
	if New(deep).Skip(2) {
		t.Fatal("three levels were read at depth 2")
	}
	if New([]byte(`{"a":{}}`)).Skip(1) || New([]byte(`[]`)).Skip(0) {
		t.Fatal("an object or array past the depth was read")
	}
	if r := New([]byte(` "x" `)); !r.Skip(0) || !r.End() {
		t.Fatal("a string was refused at depth 0")
	}
}

// checkSkip compares Skip with encoding/json's Decoder, which reads the
// first value of a stream, and reports whether Skip read one.
func checkSkip(t *testing.T, data []byte) bool {
	t.Helper()
	r := New(data)
	r.Space()
	start := r.Pos()
	ok := r.Skip(skipDepth)
	var want json.RawMessage
	err := json.NewDecoder(bytes.NewReader(data)).Decode(&want)
	if !ok {
		if err == nil && nesting(want) <= skipDepth {
			t.Fatalf("%q: Skip refused what encoding/json reads as %s", data, want)
		}
		return false
	}
	if err != nil {
		t.Fatalf("%q: Skip read %q, which encoding/json refuses: %v", data, data[start:r.Pos()], err)
	}
	if got := data[start:r.Pos()]; !bytes.Equal(got, want) {
		t.Fatalf("%q: Skip read %q, encoding/json %q", data, got, want)
	}
	return true
}

// nesting is how deep the arrays and objects of the valid JSON v nest.
func nesting(v []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func FuzzSkip(f *testing.F) {
	for _, s := range skipSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSkip(t, data) })
}

// TestRaw: the text of a value, white space before it left out, a slice
// of the document that cannot grow into it.
func TestRaw(t *testing.T) {
	doc := []byte(` {"a": [1, 2]} ,`)
	r := New(doc)
	raw, ok := r.Raw(skipDepth)
	if !ok || string(raw) != `{"a": [1, 2]}` || cap(raw) != len(raw) || !r.Eat(',') {
		t.Fatalf("%q %v", raw, ok)
	}
	if _, ok := New([]byte(`{"a":}`)).Raw(skipDepth); ok {
		t.Fatal("invalid JSON read")
	}
}

// TestSkipUnknown: a key that encoding/json would match to a known one
// regardless of case, or might (past ASCII), is refused; another is
// skipped.
func TestSkipUnknown(t *testing.T) {
	type doc struct {
		Type      string `json:"type"`
		StopAfter int    `json:"stop_after"`
	}
	known := []string{"type", "stop_after"}
	for _, c := range []struct {
		key     string
		skipped bool
	}{
		{"other", true}, {"typ", true}, {"types", true}, {"stop-after", true},
		{"Type", false}, {"TYPE", false}, {"Stop_After", false}, {"ſtop_after", false}, {"\u212aey", false}, {"caf\xc3\xa9", false},
	} {
		data := []byte(`{"` + c.key + `":1}`)
		r := New(data)
		r.Eat('{')
		key, _ := r.RawString()
		r.Eat(':')
		if got := r.SkipUnknown(key, 1, known...); got != c.skipped {
			t.Errorf("%q: skipped %v, want %v", c.key, got, c.skipped)
		}
		// When it is skipped, encoding/json does not set a field from it.
		var d doc
		if c.skipped && (json.Unmarshal(data, &d) != nil || d != doc{}) {
			t.Errorf("%q: encoding/json read %+v", c.key, d)
		}
	}
	if New([]byte(`[1,]`)).SkipUnknown([]byte("x"), 1) {
		t.Error("an unknown key's invalid value was skipped")
	}
}
