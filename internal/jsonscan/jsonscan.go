// Package jsonscan reads JSON documents of a known, common shape in one
// pass over their bytes, without a token decoder's cost per token. A
// reader accepts only plain, valid JSON and gives up (false) at anything
// it does not handle (an escaped key, an escaped surrogate, invalid
// UTF-8, a number that is not a plain integer): its caller then decodes
// the document with encoding/json, which names the fault or handles the
// rare case. Each caller holds its fast path to encoding/json's result
// with a differential fuzz test.
//
// Skip passes over a value of any kind, checking it as encoding/json
// does, so that a reader that skips what it does not use still refuses
// a document encoding/json refuses; SkipUnknown skips the value of a key
// that a struct being decoded does not have, unless encoding/json might
// match it to a field after all.
//
// SplitObject and SplitArray split an object or array of a document
// already checked with json.Valid into its members, without decoding
// their values: internal/strictjson builds its one-pass Object and Array
// on them, through which the request decoders of chat and wire/openai
// read one level of nesting at a time.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Reader reads JSON values off a document from a position.
type Reader struct {
	b []byte
	i int
}

// New is a reader at the start of b.
func New(b []byte) *Reader { return &Reader{b: b} }

// NewAt is a reader at offset i of b: a caller that knows b[:i] to be a
// part it has read before (the same bytes at the start of an earlier
// document) resumes there, in the state reading them left it in.
func NewAt(b []byte, i int) *Reader { return &Reader{b: b, i: i} }

// Pos is the reader's offset in its document.
func (r *Reader) Pos() int { return r.i }

// Space skips white space.
func (r *Reader) Space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// Eat consumes c after white space.
func (r *Reader) Eat(c byte) bool {
	r.Space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// Literal consumes s (such as null) after white space.
func (r *Reader) Literal(s string) bool {
	r.Space()
	if bytes.HasPrefix(r.b[r.i:], []byte(s)) {
		r.i += len(s)
		return true
	}
	return false
}

// End reports whether only white space is left.
func (r *Reader) End() bool {
	r.Space()
	return r.i == len(r.b)
}

// Object reads an object, handing each key (a string without escapes, as
// written) to member, which reads the value.
func (r *Reader) Object(member func(key []byte) bool) bool {
	if !r.Eat('{') {
		return false
	}
	if r.Eat('}') {
		return true
	}
	return r.Members(member)
}

// Members reads the members of an object from the reader's position, just
// after its '{' or the ',' after a member, up to its closing '}', handing
// each key to member as Object does.
func (r *Reader) Members(member func(key []byte) bool) bool {
	for {
		key, ok := r.RawString()
		if !ok || !r.Eat(':') || !member(key) {
			return false
		}
		if r.Eat(',') {
			continue
		}
		return r.Eat('}')
	}
}

// Array reads an array of at most max elements, each read by elem.
func (r *Reader) Array(max int, elem func() bool) bool {
	if !r.Eat('[') {
		return false
	}
	if r.Eat(']') {
		return true
	}
	for n := 1; ; n++ {
		if n > max || !elem() {
			return false
		}
		if r.Eat(',') {
			continue
		}
		return r.Eat(']')
	}
}

// RawString reads a string without escapes and returns its bytes, as
// written (valid UTF-8 or not).
func (r *Reader) RawString() ([]byte, bool) {
	if !r.Eat('"') {
		return nil, false
	}
	start := r.i
	for r.i < len(r.b) {
		if r.i = plainRun(r.b, r.i); r.i >= len(r.b) {
			break
		}
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			return r.b[start : r.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		r.i++
	}
	return nil, false
}

// String reads a string of at most max bytes once decoded, as
// encoding/json decodes it.
func (r *Reader) String(max int) (string, bool) { return r.StringKnown(max, nil) }

// StringKnown reads a string as String does; known, when not nil, may
// give the string of the bytes of a string without escapes, one kept
// already (a type name, an id read before), which then costs no
// allocation.
func (r *Reader) StringKnown(max int, known func([]byte) (string, bool)) (string, bool) {
	if !r.Eat('"') {
		return "", false
	}
	start := r.i
	high := false
	for r.i < len(r.b) {
		if r.i = plainRun(r.b, r.i); r.i >= len(r.b) {
			break
		}
		c := r.b[r.i]
		switch {
		case c == '"':
			raw := r.b[start:r.i]
			r.i++
			if len(raw) > max || high && !utf8.Valid(raw) {
				return "", false
			}
			if known != nil {
				if v, ok := known(raw); ok {
					return v, true
				}
			}
			return string(raw), true
		case c == '\\':
			return r.escaped(start, max, high)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			high = true
		}
		r.i++
	}
	return "", false
}

// plainRun is the index of the first byte of b from i on that a string
// reader must look at: a quote, a backslash, a control character or a
// byte of a multi-byte character (len(b) if there is none).
func plainRun(b []byte, i int) int { return stopAt(b, i, highs) }

// textRun is plainRun for a reader that checks a string's escapes but not
// its UTF-8: multi-byte characters do not stop it.
func textRun(b []byte, i int) int { return stopAt(b, i, 0) }

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stopAt is the index of the first byte of b from i on that is a quote, a
// backslash or a control character, or (when high is highs, not 0) 0x80
// or above; len(b) if there is none. It steps eight plain bytes at a
// time: strings are most of an event's bytes.
func stopAt(b []byte, i int, high uint64) int {
	// hasZero is nonzero exactly when a byte of x is zero; likewise
	// (w-ones*0x20)&^w&highs when a byte of w is below 0x20, and w&highs
	// when one is 0x80 or above. Any of them stops the eight-byte steps:
	// the bytes are then looked at one by one.
	hasZero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		if hasZero(w^(ones*'"'))|hasZero(w^(ones*'\\'))|(w-ones*0x20)&^w&highs|w&high != 0 {
			break
		}
		i += 8
	}
	stopHigh := high != 0
	for i < len(b) {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf && stopHigh {
			return i
		}
		i++
	}
	return i
}

// escaped finishes reading a string that holds escapes, from r.i (at the
// first backslash); the bytes from start are plain. The closing quote is
// found first (the first quote after an even run of backslashes), then
// the text up to it is decoded a byte at a time (escapes are dense in a
// diff: every line ends in one) into a buffer of the text's size, which
// the string keeps (a string decoded is never longer than its text).
func (r *Reader) escaped(start, max int, high bool) (string, bool) {
	b := r.b
	end := r.i
	for {
		j := bytes.IndexByte(b[end:], '"')
		if j < 0 {
			return "", false
		}
		end += j
		k := end - 1
		for b[k] == '\\' { // b[start-1] is the opening quote
			k--
		}
		if (end-1-k)%2 == 0 {
			break
		}
		end++
	}
	buf := make([]byte, end-start)
	n := copy(buf, b[start:r.i])
	var h byte
	for i := r.i; i < end; {
		c := b[i]
		if plain[c] {
			h |= c
			buf[n] = c
			n++
			i++
			continue
		}
		if c != '\\' {
			return "", false // a control character
		}
		// b[i+1] is before end: end is not escaped.
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			buf[n] = e
		case 'b':
			buf[n] = '\b'
		case 'f':
			buf[n] = '\f'
		case 'n':
			buf[n] = '\n'
		case 'r':
			buf[n] = '\r'
		case 't':
			buf[n] = '\t'
		case 'u':
			if i+6 > end {
				return "", false
			}
			v, ok := hex4(b[i+2 : i+6])
			// A surrogate is decoded with its pair, or replaced, by the
			// token decoder: left to it.
			if !ok || v >= 0xD800 && v < 0xE000 {
				return "", false
			}
			// At most three bytes, from six of text.
			n += utf8.EncodeRune(buf[n:], v) - 1
			i += 4
		default:
			return "", false
		}
		n++
		i += 2
	}
	r.i = end + 1
	buf = buf[:n]
	if n > max || (high || h >= utf8.RuneSelf) && !utf8.Valid(buf) {
		return "", false
	}
	// buf is not written again: the string shares it.
	return unsafe.String(unsafe.SliceData(buf), n), true
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 is the value of four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	var v rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// Int reads an integer written as -?(0|[1-9][0-9]*) that fits an int64.
func (r *Reader) Int() (int64, bool) {
	r.Space()
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	digits := r.i
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		r.i++
	}
	switch {
	case r.i == digits, r.b[digits] == '0' && r.i-digits > 1:
		return 0, false
	case r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E'):
		return 0, false
	}
	v, err := strconv.ParseInt(string(r.b[start:r.i]), 10, 64)
	return v, err == nil
}

// The readers below take null as encoding/json does when it decodes into
// a Go value: null leaves a string or an integer as it was, and makes a
// pointer nil.

// NullableString reads a string into *dst, or null, which leaves *dst
// as it is.
func (r *Reader) NullableString(dst *string) bool {
	if r.Literal("null") {
		return true
	}
	s, ok := r.String(math.MaxInt)
	if ok {
		*dst = s
	}
	return ok
}

// NullableInt reads an integer into *dst, or null, which leaves *dst as
// it is.
func (r *Reader) NullableInt(dst *int64) bool {
	if r.Literal("null") {
		return true
	}
	v, ok := r.Int()
	if ok {
		*dst = v
	}
	return ok
}

// IntRef reads an integer, or null, into *dst as encoding/json reads it
// into an *int64: null makes *dst nil, a number is stored where *dst
// points, room (when *dst is nil) the place.
func (r *Reader) IntRef(dst **int64, room *int64) bool {
	if r.Literal("null") {
		*dst = nil
		return true
	}
	v, ok := r.Int()
	if !ok {
		return false
	}
	if *dst == nil {
		*dst = room
	}
	**dst = v
	return true
}
