package responses

import (
	"bytes"
	"testing"
)

// shapeSeeds are pairs of delta events: a shape is learnt from the first
// and matched against the second.
var shapeSeeds = [][2]string{
	{`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"AbC"}`,
		`{"type":"response.output_text.delta","sequence_number":15,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" there \"q\"","logprobs":[],"obfuscation":"x"}`},
	{`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":05,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`},
	{`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"","logprobs":[]}`},
	{`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"\x","logprobs":[]}`},
	{`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}x`},
	{`{"type":"response.function_call_arguments.delta","sequence_number":7,"item_id":"fc_1","output_index":1,"delta":"{\"a\":"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":8,"item_id":"fc_1","output_index":1,"delta":"1}"}`},
	{`{"type":"response.reasoning_summary_text.delta", "item_id":"rs_1","output_index":0,"summary_index":0,"delta": "a" ,"sequence_number": 0 ,"obfuscation":"p"}`,
		`{"type":"response.reasoning_summary_text.delta", "item_id":"rs_1","output_index":0,"summary_index":0,"delta": "b\u00e9" ,"sequence_number": 120 ,"obfuscation":""}`},
	{`{"type":"response.output_text.delta","sequence_number":1.5,"item_id":"msg_1","output_index":0,"delta":"Hi","obfuscation":3}`,
		`{"type":"response.output_text.delta","sequence_number":1.5,"item_id":"msg_1","output_index":0,"delta":"Ho","obfuscation":3}`},
}

// TestShapeMatch: an event of the learnt shape is read as skimDelta reads
// it, and one off the shape (a number or delta skimDelta refuses, bytes
// after the end) is not matched.
func TestShapeMatch(t *testing.T) {
	want := []bool{true, false, false, false, false, true, true, true}
	for i, p := range shapeSeeds {
		matched := checkShape(t, []byte(p[0]), []byte(p[1]))
		if matched != want[i] {
			t.Errorf("pair %d: matched %v, want %v", i, matched, want[i])
		}
	}
}

// FuzzShape: whenever a delta event matches the shape learnt from
// another, skimDelta reads it as the match does.
func FuzzShape(f *testing.F) {
	for _, p := range shapeSeeds {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) { checkShape(t, a, b) })
}

// checkShape learns the shape of a (if skimDelta reads it) and matches b
// against it: a match must read b as skimDelta does. It reports whether
// b matched.
func checkShape(t *testing.T, a, b []byte) bool {
	t.Helper()
	var la delta
	if !skimDelta(a, &la) {
		return false
	}
	var s shape
	s.learn(a, &la)
	if len(s.lit) > 0 {
		// a matches its own shape, as it was read.
		var self delta
		if !s.match(a, &self) || !sameDelta(self, la) {
			t.Fatalf("%q does not match its own shape: %+v, skimmed %+v", a, self, la)
		}
	}
	var got delta
	if !s.match(b, &got) {
		return false
	}
	var want delta
	if !skimDelta(b, &want) {
		t.Fatalf("%q matches the shape of %q, skimDelta refuses it", b, a)
	}
	if !sameDelta(got, want) {
		t.Fatalf("%q matched as %+v, skimmed as %+v", b, got, want)
	}
	return true
}

func sameDelta(a, b delta) bool {
	return a.kind == b.kind && a.index == b.index && a.hasIndex == b.hasIndex &&
		bytes.Equal(a.itemID, b.itemID) && bytes.Equal(a.value, b.value)
}
