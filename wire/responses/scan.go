package responses

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// scanner reads the JSON of an upstream event or Response object in one
// pass, as encoding/json would decode it into the wire shapes of this
// package, and gives up (false) at anything it does not handle exactly
// like encoding/json: a key written in another case (encoding/json
// matches keys without regard to case), a key with an escape or a byte
// past ASCII, a key given twice, a number that is not a plain integer in
// an integer field, invalid UTF-8 in a string it decodes, nesting deeper
// than maxDepth, and any invalid JSON. Its caller then decodes the
// document with encoding/json, which names the fault or handles the rare
// case.
//
// What the decoder does not read — the deltas' logprobs and obfuscation,
// the parts of content_part events, the response objects' echo of the
// request and their output — is skipped, but checked to be valid JSON on
// the way: an event the API could not have sent is still an error, as it
// is with encoding/json.
type scanner struct {
	b []byte
	i int
}

// maxDepth bounds the nesting the scanner skips; deeper documents are
// encoding/json's to read (it refuses past 10000).
const maxDepth = 128

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c after white space.
func (s *scanner) eat(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek is the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// null consumes a null literal, if one comes next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// object reads an object, handing each key (as written: no escapes, only
// ASCII) to member, which reads the value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		key, ok := s.key()
		if !ok || !s.eat(':') || !member(key) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

// key reads an object's key: a string of printable ASCII without
// escapes.
func (s *scanner) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) && keyByte[s.b[s.i]] {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '"' {
		s.i++
		return s.b[start : s.i-1], true
	}
	return nil, false
}

// keyByte marks the bytes a key the scanner reads may hold: printable
// ASCII but the quote and the backslash.
var keyByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// array reads an array of at most max elements, each read by elem.
func (s *scanner) array(max int, elem func() bool) bool {
	if !s.eat('[') {
		return false
	}
	if s.eat(']') {
		return true
	}
	for n := 1; ; n++ {
		if n > max || !elem() {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// stringEnd is the index of the closing quote of the string whose text
// starts at i, checking its escapes as encoding/json does, or -1; escaped
// reports whether it holds any.
func (s *scanner) stringEnd(i int) (end int, escaped bool) {
	b := s.b
	for {
		i = special(b, i)
		if i >= len(b) {
			return -1, false
		}
		switch c := b[i]; {
		case c == '"':
			return i, escaped
		case c < 0x20:
			return -1, false
		}
		// A backslash.
		escaped = true
		if i+1 >= len(b) {
			return -1, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return -1, false
			}
			i += 6
		default:
			return -1, false
		}
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// special is the index of the first byte of b from i on that a string
// scan must look at: a quote, a backslash or a control character (len(b)
// if there is none). It steps eight plain bytes at a time: the done
// events and the terminal event repeat the whole answer.
func special(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	// zero is nonzero exactly when a byte of x is zero; (w-ones*0x20)&^w
	// &highs when a byte of w is below 0x20.
	zero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		if zero(w^(ones*'"'))|zero(w^(ones*'\\'))|(w-ones*0x20)&^w&highs != 0 {
			break
		}
		i += 8
	}
	for i < len(b) {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
		i++
	}
	return i
}

// str reads a string (or a null, which leaves *dst as it is, as
// encoding/json does) into *dst. intern, when not nil, may give the
// string of the bytes of a string without escapes that is kept already.
func (s *scanner) str(dst *string, intern func([]byte) (string, bool)) bool {
	if s.null() {
		return true
	}
	if !s.eat('"') {
		return false
	}
	start := s.i
	end, escaped := s.stringEnd(start)
	if end < 0 {
		return false
	}
	s.i = end + 1
	raw := s.b[start:end]
	if escaped {
		// jsonscan decodes escapes as encoding/json does, or gives up.
		r := jsonscan.New(s.b[start-1 : end+1])
		v, ok := r.String(math.MaxInt)
		*dst = v
		return ok && r.End()
	}
	if !utf8.Valid(raw) {
		return false // encoding/json replaces what is not UTF-8
	}
	if intern != nil {
		if v, ok := intern(raw); ok {
			*dst = v
			return true
		}
	}
	*dst = string(raw)
	return true
}

// integer reads an integer written as -?(0|[1-9][0-9]*) within [lo, hi]
// into *dst; a null leaves *dst as it is.
func (s *scanner) integer(dst *int64, lo, hi int64) bool {
	if s.null() {
		return true
	}
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	switch {
	case s.i == digits, s.b[digits] == '0' && s.i-digits > 1:
		return false
	case s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E'):
		return false
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil || v < lo || v > hi {
		return false
	}
	*dst = v
	return true
}

// raw reads any value as json.RawMessage does: a copy of its text.
func (s *scanner) raw(dst *[]byte) bool {
	s.space()
	start := s.i
	if !s.skip() {
		return false
	}
	*dst = append([]byte(nil), s.b[start:s.i]...)
	return true
}

// skip passes over a value, checking it is valid JSON.
func (s *scanner) skip() bool { return s.skipDepth(0) }

func (s *scanner) skipDepth(depth int) bool {
	switch s.peek() {
	case '"':
		end, _ := s.stringEnd(s.i + 1)
		if end < 0 {
			return false
		}
		s.i = end + 1
		return true
	case '{':
		if depth == maxDepth {
			return false
		}
		s.i++
		if s.eat('}') {
			return true
		}
		for {
			if s.peek() != '"' || !s.skipDepth(depth+1) || !s.eat(':') || !s.skipDepth(depth+1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case '[':
		if depth == maxDepth {
			return false
		}
		s.i++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skipDepth(depth + 1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number passes over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	s.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// unknown passes over the value of key, which is not one of known:
// encoding/json would match a key that differs from one only in case, so
// such a key (or a duplicate, see seen) sends the document to it.
func (s *scanner) unknown(key []byte, known []string) bool {
	for _, k := range known {
		if len(k) == len(key) && equalFold(k, key) {
			return false
		}
	}
	return s.skip()
}

// equalFold reports whether ASCII k and key are equal without regard to
// case.
func equalFold(k string, key []byte) bool {
	for i := range len(k) {
		a, b := k[i], key[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// seen marks bit in *set and reports whether it was clear: a key given
// twice is encoding/json's to read (it merges or replaces).
func seen(set *uint32, bit uint32) bool {
	if *set&bit != 0 {
		return false
	}
	*set |= bit
	return true
}
