package responses

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// The small readers of the request decoder. The body is checked once with
// json.Valid, so every object and array is split in one pass
// (strictjson's promise of valid JSON).

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
		return nil, reqjson.Fail(path, "must be a JSON object")
	}
	f, err := strictjson.Object(data, path, max, true)
	if err == nil {
		return f, nil
	}
	switch e := err.(*strictjson.Error); e.Code {
	case strictjson.CodeTooMany:
		return nil, err
	case strictjson.CodeDuplicateKey:
		return nil, reqjson.FailCode(chat.CodeDuplicateField, e.Path, "given twice")
	default:
		return nil, &chat.Error{Code: chat.CodeInvalidJSON, Path: path, Msg: "not valid JSON: " + e.Msg, Err: e}
	}
}

// arrayAtMost reads the elements of the array at path, or stops with a
// too-many error at the element past max.
func arrayAtMost(v json.RawMessage, path string, max int) ([]json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return nil, reqjson.Fail(path, "must be an array")
	}
	out, err := strictjson.Array(v, path, max, true)
	if err != nil && !tooMany(err) {
		return nil, reqjson.Fail(path, "must be an array")
	}
	return out, err
}

// optString is the string at key k of f, "" when it is absent or null.
func optString(f strictjson.Members, k, path string) (string, error) {
	v, ok := f.Get(k)
	if !ok || reqjson.IsNull(v) {
		return "", nil
	}
	return reqjson.String(v, join(path, k))
}

// oneOf checks that s, the value at path, is one of allowed.
func oneOf(s, path string, allowed ...string) error {
	if slices.Contains(allowed, s) {
		return nil
	}
	return reqjson.Fail(path, "%q is not one of %s", s, strings.Join(allowed, ", "))
}

// rawString is s as a JSON string.
func rawString(s string) json.RawMessage { return chat.AppendString(nil, s) }
