package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// The scanner below splits JSON objects and arrays that are already known to
// be valid (DecodeRequest checks the whole request once with json.Valid) into
// their members without decoding them, so that a request is read in one pass
// per nesting level with few allocations. It never trusts that promise with
// memory safety: input that is not valid JSON after all gives errMalformed.

var errMalformed = errors.New("malformed JSON")

// member is one member of a JSON object.
type member struct {
	key string
	val json.RawMessage
}

// members are a JSON object's members sorted by key, each key once: what
// the decoder reads a request's objects into. A slice costs one small
// allocation per object where a map costs several hundred bytes, and it
// is read in the order in which unmodelled fields are kept and warned
// about (that of SortedKeys).
type members []member

// get is the value of key k.
func (ms members) get(k string) (json.RawMessage, bool) {
	i, ok := slices.BinarySearchFunc(ms, k, func(m member, k string) int { return strings.Compare(m.key, k) })
	if !ok {
		return nil, false
	}
	return ms[i].val, true
}

// has reports whether key k is given.
func (ms members) has(k string) bool {
	_, ok := ms.get(k)
	return ok
}

func (ms members) sort() {
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
}

// splitObject returns the members of the valid JSON object data, and the
// first key given twice (hasDup says whether one was): the first key, in
// the order of the text, that repeats a key before it.
func splitObject(data []byte) (fields members, dup string, hasDup bool, err error) {
	// Most objects of a request have a few members: they are gathered on
	// the stack, and only the result is allocated, to size. A larger
	// object is read twice rather than into a growing slice.
	var buf [16]member
	n, err := scanObject(data, buf[:])
	if err != nil {
		return nil, "", false, err
	}
	fields = make(members, n)
	if n <= len(buf) {
		copy(fields, buf[:n])
	} else if _, err := scanObject(data, fields); err != nil {
		return nil, "", false, err
	}
	fields.sort()
	for i := 1; i < n; i++ {
		if fields[i].key == fields[i-1].key {
			// Sorting lost the order of the text, which says which key is
			// reported: read the object again (this is an error, so it
			// happens once per request).
			inOrder := make(members, n)
			scanObject(data, inOrder)
			return nil, firstDup(inOrder), true, nil
		}
	}
	return fields, "", false, nil
}

// firstDup is the first key of ms, members in the order of the text, that
// repeats a key before it ("" if none does).
func firstDup(ms members) string {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] {
			return m.key
		}
		seen[m.key] = true
	}
	return ""
}

// scanObject puts the members of the valid JSON object data in ms, in the
// order of the text, and returns how many it has: when it has more than
// len(ms), the first len(ms) (and a key that cannot be decoded past them
// is not noticed).
func scanObject(data []byte, ms []member) (int, error) {
	n := 0
	i := skipSpace(data, 1)
	if i < len(data) && data[i] == '}' {
		return 0, nil
	}
	for i < len(data) {
		if data[i] != '"' {
			return 0, errMalformed
		}
		end := skipString(data, i)
		if end < 0 {
			return 0, errMalformed
		}
		var key string
		if n < len(ms) { // past len(ms), members are only counted
			var err error
			if key, err = unquote(data[i:end]); err != nil {
				return 0, err
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, errMalformed
		}
		i = skipSpace(data, i+1)
		vend := skipValue(data, i)
		if vend < 0 {
			return 0, errMalformed
		}
		if n < len(ms) {
			ms[n] = member{key, json.RawMessage(data[i:vend:vend])}
		}
		n++
		i = skipSpace(data, vend)
		if i >= len(data) {
			break
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return n, nil
		default:
			return 0, errMalformed
		}
	}
	return 0, errMalformed
}

// splitArray returns the elements of the valid JSON array data (nil if it
// turns out not to be one).
func splitArray(data []byte) []json.RawMessage {
	out, _ := splitArrayAtMost(data, math.MaxInt)
	return out
}

// splitArrayAtMost returns the elements of the valid JSON array data (nil
// if it turns out not to be one), or stops at the element past the first
// max (over): the rest of a long array is not read.
func splitArrayAtMost(data []byte, max int) (out []json.RawMessage, over bool) {
	i := skipSpace(data, 1)
	out = []json.RawMessage{}
	if i < len(data) && data[i] == ']' {
		return out, false
	}
	for i < len(data) {
		if len(out) == max {
			return nil, true
		}
		end := skipValue(data, i)
		if end < 0 {
			return nil, false
		}
		out = append(out, json.RawMessage(data[i:end:end]))
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return out, false
		default:
			return nil, false
		}
	}
	return nil, false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at data[i]
// (a '"'), or -1.
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just past the value starting at data[i], or
// -1. Containers are matched by counting brackets outside strings: no
// recursion, so nesting depth costs no stack.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end := skipString(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // a number or a literal
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return -1
				}
				return j
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// unquote decodes a JSON string literal: directly when it holds no escape
// and is valid UTF-8 (the usual key), else as encoding/json does.
func unquote(lit []byte) (string, error) {
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		if k, ok := knownKey(inner); ok {
			return k, nil
		}
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

// knownKey is the key k as a constant string when it is one of those a
// request is made of, so that reading it allocates nothing.
func knownKey(k []byte) (string, bool) {
	switch string(k) {
	case "type":
		return "type", true
	case "text":
		return "text", true
	case "role":
		return "role", true
	case "content":
		return "content", true
	case "id":
		return "id", true
	case "name":
		return "name", true
	case "input":
		return "input", true
	case "tool_use_id":
		return "tool_use_id", true
	case "is_error":
		return "is_error", true
	case "cache_control":
		return "cache_control", true
	case "source":
		return "source", true
	case "media_type":
		return "media_type", true
	case "data":
		return "data", true
	case "url":
		return "url", true
	case "thinking":
		return "thinking", true
	case "signature":
		return "signature", true
	case "citations":
		return "citations", true
	case "title":
		return "title", true
	case "context":
		return "context", true
	case "model":
		return "model", true
	case "system":
		return "system", true
	case "messages":
		return "messages", true
	case "tools":
		return "tools", true
	case "description":
		return "description", true
	case "input_schema":
		return "input_schema", true
	case "tool_choice":
		return "tool_choice", true
	case "max_tokens":
		return "max_tokens", true
	case "stream":
		return "stream", true
	case "metadata":
		return "metadata", true
	}
	return "", false
}
