package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// The small readers of the request decoder. The body is checked once with
// json.Valid, so every object and array is split in one pass
// (strictjson's promise of valid JSON).

// fail is an invalid value at path.
func fail(path, format string, args ...any) error {
	return failCode(chat.CodeInvalidValue, path, format, args...)
}

// failCode is a *chat.Error of the given code at path.
func failCode(code chat.Code, path, format string, args ...any) error {
	return &chat.Error{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// join is the path of member key of the value at path.
func join(path, key string) string { return strictjson.Join(path, key) }

// index is the path of element i of the array at path.
func index(path string, i int) string { return strictjson.Index(path, i) }

func tooMany(err error) bool { return strictjson.CodeOf(err) == strictjson.CodeTooMany }

// objectAtMost reads the members of the object at path, at most max of
// them (a too-many error past it, before they are read).
func objectAtMost(data []byte, path string, max int) (strictjson.Members, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fail(path, "must be a JSON object")
	}
	f, err := strictjson.Object(data, path, max, true)
	if err == nil {
		return f, nil
	}
	switch e := err.(*strictjson.Error); e.Code {
	case strictjson.CodeTooMany:
		return nil, err
	case strictjson.CodeDuplicateKey:
		return nil, failCode(chat.CodeDuplicateField, e.Path, "given twice")
	default:
		return nil, &chat.Error{Code: chat.CodeInvalidJSON, Path: path, Msg: "not valid JSON: " + e.Msg, Err: e}
	}
}

// arrayAtMost reads the elements of the array at path, or stops with a
// too-many error at the element past max.
func arrayAtMost(v json.RawMessage, path string, max int) ([]json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return nil, fail(path, "must be an array")
	}
	out, err := strictjson.Array(v, path, max, true)
	if err != nil && !tooMany(err) {
		return nil, fail(path, "must be an array")
	}
	return out, err
}

func get(f strictjson.Members, k string) json.RawMessage {
	v, _ := f.Get(k)
	return v
}

func isNull(v json.RawMessage) bool { return len(v) == 0 || string(bytes.TrimSpace(v)) == "null" }

func isString(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '"'
}

func stringOf(v json.RawMessage, path string) (string, error) {
	var s string
	if !isString(v) || json.Unmarshal(v, &s) != nil {
		return "", fail(path, "must be a string")
	}
	return s, nil
}

// optString is the string at key k of f, "" when it is absent or null.
func optString(f strictjson.Members, k, path string) (string, error) {
	v, ok := f.Get(k)
	if !ok || isNull(v) {
		return "", nil
	}
	return stringOf(v, join(path, k))
}

// oneOf checks that s, the value at path, is one of allowed.
func oneOf(s, path string, allowed ...string) error {
	if slices.Contains(allowed, s) {
		return nil
	}
	return fail(path, "%q is not one of %s", s, strings.Join(allowed, ", "))
}

func intOf(v json.RawMessage, path string) (int, error) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil {
		return 0, fail(path, "must be an integer")
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, fail(path, "must be between 0 and %d", math.MaxInt32)
	}
	return int(n), nil
}

func floatOf(v json.RawMessage, path string) (*float64, error) {
	v = bytes.TrimSpace(v)
	var f float64
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || json.Unmarshal(v, &f) != nil {
		return nil, fail(path, "must be a number")
	}
	return &f, nil
}

func boolOf(v json.RawMessage, path string) (bool, error) {
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fail(path, "must be true or false")
}

func isDataURL(u string) bool { return len(u) >= 5 && strings.EqualFold(u[:5], "data:") }

// parseDataURL reads "data:<media type>[;params];base64,<data>".
func parseDataURL(u, path string) (mediaType, data string, err error) {
	meta, payload, ok := strings.Cut(u[5:], ",")
	if !ok {
		return "", "", fail(path, "a data URL needs a comma before its data")
	}
	params := strings.Split(meta, ";")
	if len(params) < 2 || !strings.EqualFold(params[len(params)-1], "base64") {
		return "", "", fail(path, "a data URL must be base64 (data:<media type>;base64,...)")
	}
	mediaType = strings.ToLower(strings.TrimSpace(params[0]))
	if mediaType == "" {
		return "", "", fail(path, "a data URL needs a media type")
	}
	if payload == "" {
		return "", "", fail(path, "the data URL has no data")
	}
	return mediaType, payload, nil
}

// rawString is s as a JSON string.
func rawString(s string) json.RawMessage { return chat.AppendString(nil, s) }
