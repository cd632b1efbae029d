package jsonscan

import (
	"bytes"
	"testing"
)

// holesOf finds the string values of doc (a string after a colon).
func holesOf(doc []byte) [][2]int {
	var out [][2]int
	for i := 0; i < len(doc); i++ {
		if doc[i] != ':' || i+1 >= len(doc) || doc[i+1] != '"' {
			continue
		}
		r := Reader{b: doc, i: i + 1}
		if _, ok := r.ValidString(); ok {
			out = append(out, [2]int{i + 1, r.i})
			i = r.i - 1
		}
	}
	return out
}

func TestTemplate(t *testing.T) {
	learnt := []byte(`{"delta":{"text":"abc"},"index":1,"o":"x"}`)
	var tm Template
	if !tm.Learn(learnt, holesOf(learnt)) || tm.Holes() != 2 {
		t.Fatalf("not learnt: %d holes", tm.Holes())
	}
	for _, c := range []struct {
		doc   string
		match bool
	}{
		{`{"delta":{"text":"abc"},"index":1,"o":"x"}`, true},
		{`{"delta":{"text":""},"index":1,"o":"longer \n \ud83d\ude00"}`, true},
		{`{"delta":{"text":"a\"b"},"index":1,"o":""}`, true},
		{`{"delta":{"text":"\ud83d"},"index":1,"o":""}`, false},
		{`{"delta":{"text":"a"},"index":2,"o":""}`, false},
		{`{"delta":{"text":"a"},"index":1,"o":""} `, false},
		{`{"delta":{"text":"a"},"index":1,"o":null}`, false},
		{`{"delta":{"text":"a`, false},
	} {
		holes := make([][2]int, tm.Holes())
		if got := tm.Match([]byte(c.doc), holes); got != c.match {
			t.Errorf("%s: match %v", c.doc, got)
		}
	}
	if tm.Learn(make([]byte, maxTemplate+1), nil) || tm.Learnt() {
		t.Error("a document past the bound was learnt")
	}
	// A hole that runs past its string would let a document whose string
	// swallows that byte match a template of another shape.
	brace := []byte(`{"f":{"a":"x"}}`)
	if tm.Learn(brace, [][2]int{{10, 14}}) || tm.Learnt() {
		t.Error("a hole of a string and a brace was learnt")
	}
	if !tm.Learn(brace, [][2]int{{10, 13}}) || tm.Match([]byte(`{"f":{"a":"x}"}`), make([][2]int, 1)) {
		t.Error("a string holding the brace matched")
	}
}

// FuzzTemplate: a document that matches a template is the template's
// bytes with valid strings in its holes, nothing more.
func FuzzTemplate(f *testing.F) {
	f.Add([]byte(`{"a":"x","b":1,"c":"yy"}`), []byte(`{"a":"","b":1,"c":"\n"}`))
	f.Add([]byte(`{"t":"\u00e9"}`), []byte(`{"t":"\ud83d\ude00"}`))
	f.Fuzz(func(t *testing.T, learnt, doc []byte) {
		var tm Template
		holes := holesOf(learnt)
		if !tm.Learn(learnt, holes) {
			return
		}
		got := make([][2]int, tm.Holes())
		if !tm.Match(doc, got) {
			return
		}
		// Put the template's strings back in doc's holes: learnt again.
		var back []byte
		at := 0
		for i, h := range got {
			if _, ok := New(doc[h[0]:h[1]]).ValidString(); !ok {
				t.Fatalf("hole %q is not a valid string", doc[h[0]:h[1]])
			}
			back = append(back, doc[at:h[0]]...)
			back = append(back, learnt[holes[i][0]:holes[i][1]]...)
			at = h[1]
		}
		back = append(back, doc[at:]...)
		if !bytes.Equal(back, learnt) {
			t.Fatalf("%q matched the template of %q", doc, learnt)
		}
	})
}
