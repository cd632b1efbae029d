package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// SplitObject and SplitArray split JSON objects and arrays that their
// caller knows to be valid (it has checked the whole document once with
// json.Valid) into their members, without decoding the members' values:
// a document is read in one pass per level of nesting, with few
// allocations, and the values are the document's own bytes, not copies.
// They never trust that promise with memory safety: input that turns out
// not to be valid JSON gives ErrMalformed.

// ErrMalformed is the answer of SplitObject and SplitArray to input that
// turns out not to be valid JSON.
var ErrMalformed = errors.New("malformed JSON")

// ErrTooMany is the answer of SplitObject and SplitArray to an object or
// array of more members than the caller allows. The caller names the
// limit.
var ErrTooMany = errors.New("too many elements")

// DuplicateKeyError is SplitObject's answer to an object that gives a key
// twice.
type DuplicateKeyError struct {
	// Key is the first key, in the order of the text, that repeats a key
	// before it (decoded: "\u0061" repeats "a").
	Key string
}

func (e *DuplicateKeyError) Error() string { return fmt.Sprintf("key %q given twice", e.Key) }

// Member is one member of a JSON object: its key, decoded, and its value
// as written.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Members are a JSON object's members sorted by key, each key once. A
// slice costs one small allocation per object where a map costs several
// hundred bytes, and it is read in sorted order, which never shows a
// map's random order.
type Members []Member

// Get is the value of key k.
func (ms Members) Get(k string) (json.RawMessage, bool) {
	i, ok := slices.BinarySearchFunc(ms, k, func(m Member, k string) int { return strings.Compare(m.Key, k) })
	if !ok {
		return nil, false
	}
	return ms[i].Value, true
}

// Has reports whether key k is given.
func (ms Members) Has(k string) bool {
	_, ok := ms.Get(k)
	return ok
}

// SplitObject returns the members of the valid JSON object data (which
// starts with its '{'), sorted by key. An object of more than max members
// is ErrTooMany, found by counting them before any is kept; one that gives
// a key twice is a *DuplicateKeyError.
func SplitObject(data []byte, max int) (Members, error) {
	// Most objects have a few members: they are gathered on the stack,
	// and only the result is allocated, to size. A larger object is read
	// twice rather than into a growing slice.
	var buf [16]Member
	n, err := scanObject(data, buf[:])
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, ErrTooMany
	}
	ms := make(Members, n)
	if n <= len(buf) {
		copy(ms, buf[:n])
	} else if _, err := scanObject(data, ms); err != nil {
		return nil, err
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
	for i := 1; i < n; i++ {
		if ms[i].Key == ms[i-1].Key {
			// Sorting lost the order of the text, which says which key is
			// reported: read the object again (an error, so once per
			// document).
			inOrder := make(Members, n)
			scanObject(data, inOrder)
			return nil, &DuplicateKeyError{Key: firstDup(inOrder)}
		}
	}
	return ms, nil
}

// firstDup is the first key of ms, members in the order of the text, that
// repeats a key before it ("" if none does).
func firstDup(ms Members) string {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.Key] {
			return m.Key
		}
		seen[m.Key] = true
	}
	return ""
}

// scanObject puts the members of the valid JSON object data in ms, in the
// order of the text, and returns how many it has: when it has more than
// len(ms), the first len(ms) (and a key past them that cannot be decoded
// is not noticed).
func scanObject(data []byte, ms []Member) (int, error) {
	n := 0
	i := skipSpace(data, 1)
	if i < len(data) && data[i] == '}' {
		return 0, nil
	}
	for i < len(data) {
		if data[i] != '"' {
			return 0, ErrMalformed
		}
		end := skipString(data, i)
		if end < 0 {
			return 0, ErrMalformed
		}
		var key string
		if n < len(ms) { // past len(ms), members are only counted
			var err error
			if key, err = Unquote(data[i:end]); err != nil {
				return 0, err
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, ErrMalformed
		}
		i = skipSpace(data, i+1)
		vend := skipValue(data, i)
		if vend < 0 {
			return 0, ErrMalformed
		}
		if n < len(ms) {
			ms[n] = Member{key, json.RawMessage(data[i:vend:vend])}
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
			return 0, ErrMalformed
		}
	}
	return 0, ErrMalformed
}

// SplitArray returns the elements of the valid JSON array data (which
// starts with its '['), each its own bytes, or ErrTooMany at the element
// past the first max: the rest of a long array is not read.
func SplitArray(data []byte, max int) ([]json.RawMessage, error) {
	i := skipSpace(data, 1)
	out := []json.RawMessage{}
	if i < len(data) && data[i] == ']' {
		return out, nil
	}
	for i < len(data) {
		if len(out) == max {
			return nil, ErrTooMany
		}
		end := skipValue(data, i)
		if end < 0 {
			return nil, ErrMalformed
		}
		out = append(out, json.RawMessage(data[i:end:end]))
		i = skipSpace(data, end)
		if i >= len(data) {
			break
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return out, nil
		default:
			return nil, ErrMalformed
		}
	}
	return nil, ErrMalformed
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
// (a '"'), or -1. It jumps from quote to quote: a quote closes the string
// unless an odd run of backslashes stands before it (the last of them
// escapes it).
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		b := j - 1
		for b > i && data[b] == '\\' {
			b--
		}
		if (j-1-b)%2 == 0 {
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
		return j
	}
}

// Unquote decodes the JSON string literal lit (its quotes included):
// directly when it holds no escape and is valid UTF-8 (the usual key),
// else as encoding/json does.
func Unquote(lit []byte) (string, error) {
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

// knownKey is k as a constant string when it is one of the keys of the
// chat requests that ctxkit reads (in the Anthropic and the OpenAI
// shape), so that reading it allocates nothing.
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
	// The OpenAI shape's own.
	case "tool_calls":
		return "tool_calls", true
	case "tool_call_id":
		return "tool_call_id", true
	case "function":
		return "function", true
	case "arguments":
		return "arguments", true
	case "parameters":
		return "parameters", true
	case "image_url":
		return "image_url", true
	case "refusal":
		return "refusal", true
	case "reasoning_content":
		return "reasoning_content", true
	}
	return "", false
}
