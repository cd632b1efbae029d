package jsonscan

import "bytes"

// Template is the shape of a JSON document learnt from one instance: its
// bytes, but for some string values (its holes). A document that matches
// it has the same bytes outside its holes and a valid string
// (ValidString) in each: the same tokens in the same order, only those
// strings' contents differ. A stream's events repeat one shape with new
// text in it; checking a new event against the shape its predecessor had
// costs a comparison of bytes, where reading it key by key costs a
// decision per token.
type Template struct {
	lit  []byte // the document with its holes cut out
	cuts []int  // where in lit each hole was
}

// maxTemplate bounds the document a Template keeps.
const maxTemplate = 4 << 10

// Learn makes doc the template, holes the spans of its holes (in order,
// each a string, quotes included). It reports false, leaving t empty, for
// a document larger than 4 KiB, holes not in order, or a hole that is not
// exactly one valid string (a byte after the string would be a hole's in
// the template and a literal's in a document matched).
func (t *Template) Learn(doc []byte, holes [][2]int) bool {
	t.lit, t.cuts = t.lit[:0], t.cuts[:0]
	if len(doc) > maxTemplate {
		return false
	}
	at := 0
	for _, h := range holes {
		if h[0] < at || h[1] < h[0]+2 || h[1] > len(doc) || !oneString(doc[h[0]:h[1]]) {
			t.lit, t.cuts = t.lit[:0], t.cuts[:0]
			return false
		}
		t.lit = append(t.lit, doc[at:h[0]]...)
		t.cuts = append(t.cuts, len(t.lit))
		at = h[1]
	}
	t.lit = append(t.lit, doc[at:]...)
	return true
}

// Learnt reports whether t holds a template.
func (t *Template) Learnt() bool { return len(t.lit) > 0 }

// Holes is how many holes t has.
func (t *Template) Holes() int { return len(t.cuts) }

// Match reports whether doc has t's shape, and puts the spans of its
// holes in holes (which has room for t.Holes()).
func (t *Template) Match(doc []byte, holes [][2]int) bool {
	if len(t.lit) == 0 {
		return false
	}
	pos, from := 0, 0
	for i, cut := range t.cuts {
		seg := t.lit[from:cut]
		if !bytes.HasPrefix(doc[pos:], seg) {
			return false
		}
		pos += len(seg)
		r := Reader{b: doc, i: pos}
		if _, ok := r.ValidString(); !ok {
			return false
		}
		holes[i] = [2]int{pos, r.i}
		pos, from = r.i, cut
	}
	return bytes.Equal(doc[pos:], t.lit[from:])
}

// oneString reports whether b is one valid string and nothing else.
func oneString(b []byte) bool {
	r := Reader{b: b}
	_, ok := r.ValidString()
	return ok && r.i == len(b)
}
