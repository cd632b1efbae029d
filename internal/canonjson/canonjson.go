// Package canonjson writes a decoded JSON value in ctxkit's canonical form:
// compact, object keys sorted, no HTML escaping and no trailing newline. The
// store keeps contexts and hints in this form (so equal documents have equal
// checksums), a hints document's hash is taken over it, and views are
// written in it, because a model reads "<", not "\u003c".
//
// The form is encoding/json's with HTML escaping off. Decoded JSON trees
// (the values strictjson and encoding/json decode into an any) are
// written by a direct encoder that produces the same bytes without
// reflection or sorting through reflect.Value, because every store write
// and every gateway record goes through here; any other value goes
// through encoding/json itself.
package canonjson

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Marshal returns v in canonical form. Object keys come out sorted, as
// encoding/json sorts map keys; a json.Number is written as it was read.
func Marshal(v any) ([]byte, error) {
	out, err := Append(nil, v)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Append appends v in canonical form to dst, the bytes Marshal returns for
// it. On error dst is returned as it was given.
func Append(dst []byte, v any) ([]byte, error) {
	n := len(dst)
	if out, ok := appendValue(dst, v, 0); ok {
		return out, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst[:n], err
	}
	return append(dst[:n], bytes.TrimSuffix(b.Bytes(), []byte{'\n'})...), nil
}

// maxDepth is how deep the direct encoder goes. Decoded documents are
// bounded well below it (strictjson stops at 1000 levels); a deeper value,
// or one that holds itself, is left to encoding/json, which reports a
// cycle rather than running out of stack.
const maxDepth = 1000

// appendValue appends v if it is a decoded JSON tree: map[string]any,
// []any, string, json.Number, float64, int, int64, bool or nil, nested
// no deeper than maxDepth. ok is false for anything else and for the
// values encoding/json refuses (a json.Number that is not a JSON number,
// a NaN or infinite float), so that Append can fall back and report
// encoding/json's own error.
func appendValue(dst []byte, v any, depth int) (_ []byte, ok bool) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, t), true
	case string:
		return AppendString(dst, t), true
	case json.Number:
		if t == "" {
			return append(dst, '0'), true // as encoding/json writes an empty Number
		}
		if !isNumber(string(t)) {
			return dst, false
		}
		return append(dst, t...), true
	case float64:
		return AppendFloat(dst, t)
	case int:
		return strconv.AppendInt(dst, int64(t), 10), true
	case int64:
		return strconv.AppendInt(dst, t, 10), true
	case []any:
		if t == nil {
			return append(dst, "null"...), true
		}
		if depth >= maxDepth {
			return dst, false
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendValue(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), true
		}
		if depth >= maxDepth {
			return dst, false
		}
		var small [16]string // most objects are small: no allocation for their keys
		keys := small[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(AppendString(dst, k), ':')
			if dst, ok = appendValue(dst, t[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// AppendFloat writes f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form only below 1e-6 or from
// 1e21 up, with a two-digit negative exponent cut to one (1e-7, not
// 1e-07). NaN and infinities are not JSON: ok is false.
func AppendFloat(dst []byte, f float64) (_ []byte, ok bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// AppendString appends s as a canonical JSON string, quoted as
// encoding/json quotes it with HTML escaping off: the quote and the
// backslash escaped, control characters as \b \f \n \r \t or \u00XX,
// U+2028 and U+2029 as \u escapes (JavaScript reads them as line ends),
// each byte of invalid UTF-8 as \ufffd; everything else as it is.
func AppendString(dst []byte, s string) []byte {
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

// isNumber says s is a number as JSON writes one, the check encoding/json
// makes before it writes a json.Number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumber(s string) bool {
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
