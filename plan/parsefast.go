package plan

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// parseFast decodes a plan in one pass over its bytes, without the token
// decoder's cost per token (a plan of a few hundred diffs is megabytes of
// JSON strings). It accepts only what decodeStrict accepts, with the same
// result, and gives up (false) on everything else: invalid JSON, an
// unknown, repeated or missing field, a value of the wrong kind, a bound
// passed, a string whose decoding the token decoder would alter (invalid
// UTF-8, an escaped surrogate), a number that is not a plain integer.
// Parse then runs decodeStrict, which names the fault. FuzzParseFast holds
// the two to the same result.
func parseFast(data []byte) (*Plan, bool) {
	r := &fastReader{b: data}
	var p Plan
	var seen [2]bool // diffs, post
	ok := r.object(func(key string) bool {
		switch key {
		case "diffs":
			if seen[0] {
				return false
			}
			seen[0] = true
			return r.array(MaxDiffs, func() bool {
				var d Diff
				var got [3]bool
				ok := r.object(func(key string) bool {
					var into *string
					var max, at int
					switch key {
					case "path":
						into, max, at = &d.Path, maxPathBytes, 0
					case "checksum":
						into, max, at = &d.Checksum, 64, 1
					case "unified_diff":
						into, max, at = &d.UnifiedDiff, MaxDiffBytes, 2
					default:
						return false
					}
					if got[at] {
						return false
					}
					got[at] = true
					s, ok := r.str(max)
					*into = s
					return ok
				})
				p.Diffs = append(p.Diffs, d)
				return ok && got[0] && got[1] && got[2]
			})
		case "post":
			if seen[1] {
				return false
			}
			seen[1] = true
			p.Post = &Post{Commands: []Command{}}
			var got bool
			return r.object(func(key string) bool {
				if key != "commands" || got {
					return false
				}
				got = true
				return r.array(MaxCommands, func() bool {
					var c Command
					var got [3]bool
					ok := r.object(func(key string) bool {
						var at int
						switch key {
						case "program":
							at = 0
						case "args":
							at = 1
						case "timeout_ms":
							at = 2
						default:
							return false
						}
						if got[at] {
							return false
						}
						got[at] = true
						var ok bool
						switch at {
						case 0:
							c.Program, ok = r.str(maxPathBytes)
						case 1:
							c.Args = []string{}
							ok = r.array(MaxArgs, func() bool {
								s, ok := r.str(maxArgBytes)
								c.Args = append(c.Args, s)
								return ok
							})
						case 2:
							c.TimeoutMS, ok = r.int()
						}
						return ok
					})
					p.Post.Commands = append(p.Post.Commands, c)
					return ok && got[0]
				})
			}) && got
		}
		return false
	})
	if !ok || !seen[0] {
		return nil, false
	}
	r.ws()
	if r.i != len(r.b) {
		return nil, false
	}
	return &p, true
}

// fastReader reads JSON values off b from i.
type fastReader struct {
	b []byte
	i int
}

func (r *fastReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// eat consumes c after white space.
func (r *fastReader) eat(c byte) bool {
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// object reads an object, handing each key to field, which reads the
// value.
func (r *fastReader) object(field func(key string) bool) bool {
	if !r.eat('{') {
		return false
	}
	if r.eat('}') {
		return true
	}
	for {
		key, ok := r.str(maxPathBytes)
		if !ok || !r.eat(':') || !field(key) {
			return false
		}
		if r.eat(',') {
			continue
		}
		return r.eat('}')
	}
}

// array reads an array of at most max elements, each read by elem.
func (r *fastReader) array(max int, elem func() bool) bool {
	if !r.eat('[') {
		return false
	}
	if r.eat(']') {
		return true
	}
	for n := 1; ; n++ {
		if n > max || !elem() {
			return false
		}
		if r.eat(',') {
			continue
		}
		return r.eat(']')
	}
}

// str reads a string of at most max bytes once decoded.
func (r *fastReader) str(max int) (string, bool) {
	if !r.eat('"') {
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
// byte of a multi-byte character (len(b) if there is none). It skips
// eight plain bytes at a time.
func plainRun(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	// hasZero is nonzero exactly when a byte of x is zero; likewise
	// (w-ones*0x20)&^w&highs when a byte of w is below 0x20, and w&highs
	// when one is 0x80 or above. Any of them stops the eight-byte steps:
	// the bytes are then looked at one by one.
	hasZero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		if hasZero(w^(ones*'"'))|hasZero(w^(ones*'\\'))|(w-ones*0x20)&^w&highs|w&highs != 0 {
			break
		}
		i += 8
	}
	for i < len(b) {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
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
func (r *fastReader) escaped(start, max int, high bool) (string, bool) {
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

// int reads an integer written as -?(0|[1-9][0-9]*) that fits an int64.
func (r *fastReader) int() (int64, bool) {
	r.ws()
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
