package server

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// appendCanon appends v, a decoded JSON value (view.DecodeJSON's:
// objects, arrays, strings, json.Number, booleans, null), to dst in the
// store's canonical form, the bytes canonjson.Marshal writes for it:
// keys in byte order, no space, strings escaped as encoding/json
// escapes them with HTML escaping off, numbers as written. A recorded
// body is encoded so once per record, and encoding/json's reflection
// and map sorting took most of the cost. ok is false for a value of any
// other type, or a json.Number that is not a JSON number: the caller
// encodes those with canonjson.Marshal, which knows them or says why.
func appendCanon(dst []byte, v any) (_ []byte, ok bool) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if t {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case string:
		return appendCanonString(dst, t), true
	case json.Number:
		if t == "" {
			return append(dst, '0'), true // as encoding/json writes an empty Number
		}
		if !isJSONNumber(string(t)) {
			return dst, false
		}
		return append(dst, t...), true
	case []any:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendCanon(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendCanonString(dst, k), ':')
			if dst, ok = appendCanon(dst, t[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// appendCanonString appends s quoted as encoding/json quotes a string
// with HTML escaping off: the quote and the backslash escaped, control
// characters as \b \f \n \r \t or \u00XX, U+2028 and U+2029 as \u escapes
// (JavaScript reads them as line ends), each byte of invalid UTF-8 as
// \ufffd; everything else as it is.
func appendCanonString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	done := 0 // s[:done] is in dst
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		var esc string
		size := 1
		switch c {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\b':
			esc = `\b`
		case '\f':
			esc = `\f`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			if c < 0x20 {
				dst = append(dst, s[done:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				i++
				done = i
				continue
			}
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				esc = `\ufffd`
			case r == '\u2028':
				esc = `\u2028`
			case r == '\u2029':
				esc = `\u2029`
			default:
				i += size
				continue
			}
		}
		dst = append(dst, s[done:i]...)
		dst = append(dst, esc...)
		i += size
		done = i
	}
	dst = append(dst, s[done:]...)
	return append(dst, '"')
}

// isJSONNumber says s is a number as JSON writes one:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
