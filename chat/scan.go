package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The scanner below splits JSON objects and arrays that are already known to
// be valid (DecodeRequest checks the whole request once with json.Valid) into
// their members without decoding them, so that a request is read in one pass
// per nesting level with few allocations. It never trusts that promise with
// memory safety: input that is not valid JSON after all gives errMalformed.

var errMalformed = errors.New("malformed JSON")

// splitObject returns the members of the valid JSON object data, and the
// first key given twice (hasDup says whether one was).
func splitObject(data []byte) (fields map[string]json.RawMessage, dup string, hasDup bool, err error) {
	i := skipSpace(data, 1)
	fields = make(map[string]json.RawMessage, 8)
	if i < len(data) && data[i] == '}' {
		return fields, "", false, nil
	}
	for i < len(data) {
		if data[i] != '"' {
			return nil, "", false, errMalformed
		}
		end := skipString(data, i)
		if end < 0 {
			return nil, "", false, errMalformed
		}
		key, err := unquote(data[i:end])
		if err != nil {
			return nil, "", false, err
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, "", false, errMalformed
		}
		i = skipSpace(data, i+1)
		vend := skipValue(data, i)
		if vend < 0 {
			return nil, "", false, errMalformed
		}
		if _, seen := fields[key]; seen && !hasDup {
			dup, hasDup = key, true
		}
		fields[key] = json.RawMessage(data[i:vend:vend])
		i = skipSpace(data, vend)
		if i >= len(data) {
			break
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return fields, dup, hasDup, nil
		default:
			return nil, "", false, errMalformed
		}
	}
	return nil, "", false, errMalformed
}

// splitArray returns the elements of the valid JSON array data (nil if it
// turns out not to be one).
func splitArray(data []byte) []json.RawMessage {
	i := skipSpace(data, 1)
	out := []json.RawMessage{}
	if i < len(data) && data[i] == ']' {
		return out
	}
	for i < len(data) {
		end := skipValue(data, i)
		if end < 0 {
			return nil
		}
		out = append(out, json.RawMessage(data[i:end:end]))
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return out
		default:
			return nil
		}
	}
	return nil
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
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}
