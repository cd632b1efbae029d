package jsonscan

import "unicode/utf8"

// ValidString reads a string and returns it as written, its quotes
// included, without decoding it: for a caller that passes the JSON on as
// it is and must know that every reader decodes it alike. It accepts only
// a string that encoding/json decodes without replacing anything: valid
// UTF-8, the escapes JSON has, and escaped surrogates only in pairs (a
// lone one is U+FFFD to encoding/json and kept by a JavaScript reader).
func (r *Reader) ValidString() ([]byte, bool) {
	if !r.Eat('"') {
		return nil, false
	}
	b := r.b
	start := r.i - 1
	i := r.i
	for i < len(b) {
		if i = plainRun(b, i); i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			r.i = i + 1
			return b[start:r.i], true
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			_, n := utf8.DecodeRune(b[i:])
			if n == 1 { // invalid
				return nil, false
			}
			i += n
		default: // a backslash
			n := escapeLen(b[i:])
			if n == 0 {
				return nil, false
			}
			i += n
		}
	}
	return nil, false
}

// escapeLen is the length of the escape at the start of b (a backslash),
// an escaped surrogate pair whole; 0 when it is not one encoding/json
// decodes as itself.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
	default:
		return 0
	}
	if len(b) < 6 {
		return 0
	}
	v, ok := hex4(b[2:6])
	switch {
	case !ok:
		return 0
	case v < 0xD800 || v >= 0xE000:
		return 6
	case v >= 0xDC00: // a low surrogate first
		return 0
	}
	if len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
		return 0
	}
	if lo, ok := hex4(b[8:12]); !ok || lo < 0xDC00 || lo >= 0xE000 {
		return 0
	}
	return 12
}
