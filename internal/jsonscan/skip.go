package jsonscan

import "unicode/utf8"

// Peek is the next byte after white space, 0 at the end.
func (r *Reader) Peek() byte {
	r.Space()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

// Skip passes over one value of any kind (and the white space before it)
// and reports whether it is a JSON value as encoding/json reads one:
// escapes are checked, numbers follow JSON's grammar, literals are
// spelled out; the UTF-8 of strings is not checked (encoding/json
// replaces what is not UTF-8 rather than refuse it). A value whose arrays
// and objects nest more than depth deep is refused too: depth bounds the
// stack a caller spends, as encoding/json bounds its own (at 10000).
// Skip(0) takes only strings, numbers and literals.
//
// Where the value ends is a matter of where its text ends, as it is for
// encoding/json's Decoder: Skip reads "1" of "1x" and "0" of "01", and
// the caller's next read (End, Eat) refuses what follows.
func (r *Reader) Skip(depth int) bool {
	switch r.Peek() {
	case '"':
		return r.skipString()
	case '{':
		if depth == 0 {
			return false
		}
		r.i++
		if r.Eat('}') {
			return true
		}
		for {
			if r.Peek() != '"' || !r.skipString() || !r.Eat(':') || !r.Skip(depth-1) {
				return false
			}
			if r.Eat(',') {
				continue
			}
			return r.Eat('}')
		}
	case '[':
		if depth == 0 {
			return false
		}
		r.i++
		if r.Eat(']') {
			return true
		}
		for {
			if !r.Skip(depth - 1) {
				return false
			}
			if r.Eat(',') {
				continue
			}
			return r.Eat(']')
		}
	case 't':
		return r.Literal("true")
	case 'f':
		return r.Literal("false")
	case 'n':
		return r.Literal("null")
	}
	return r.number()
}

// Raw reads a value as Skip does and returns its text: a slice of the
// document, not a copy.
func (r *Reader) Raw(depth int) ([]byte, bool) {
	r.Space()
	start := r.i
	if !r.Skip(depth) {
		return nil, false
	}
	return r.b[start:r.i:r.i], true
}

// skipString passes over the string at r.i (its opening quote), checking
// its escapes.
func (r *Reader) skipString() bool {
	b := r.b
	i := r.i + 1
	for {
		i = textRun(b, i)
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			r.i = i + 1
			return true
		case c < 0x20:
			return false
		}
		// A backslash.
		if i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) {
				return false
			}
			if _, ok := hex4(b[i+2 : i+6]); !ok {
				return false
			}
			i += 6
		default:
			return false
		}
	}
}

// number passes over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *Reader) number() bool {
	b, i := r.b, r.i
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
	r.i = i
	return true
}

// digits is the index of the first byte of b from i on that is not a
// decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// SkipUnknown passes over the value of key (as Skip does, to depth), a
// key of an object that a caller decodes as encoding/json decodes it into
// a struct whose fields' keys are known, and key is none of them. It
// refuses (false) a key that encoding/json might match to one of them
// all the same: it matches keys without regard to case, and Unicode's
// folding at that ("ſ" is an "s"), so a key with a byte past ASCII is
// refused without looking further.
func (r *Reader) SkipUnknown(key []byte, depth int, known ...string) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	for _, k := range known {
		if len(k) == len(key) && foldedEqual(k, key) {
			return false
		}
	}
	return r.Skip(depth)
}

// foldedEqual reports whether ASCII k and key, of one length, are equal
// without regard to case.
func foldedEqual(k string, key []byte) bool {
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
