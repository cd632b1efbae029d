// Package reqjson reads the values of a client's request body for the
// request decoders of the client dialects (wire/openai, wire/responses,
// wire/gemini): each reader checks a value's kind and answers a
// *chat.Error naming the value's path, so that every dialect refuses a
// bad value in the same words.
package reqjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// Fail is a *chat.Error of code invalid_value at path.
func Fail(path, format string, args ...any) error {
	return FailCode(chat.CodeInvalidValue, path, format, args...)
}

// FailCode is a *chat.Error of code at path.
func FailCode(code chat.Code, path, format string, args ...any) error {
	return &chat.Error{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Get is the value of key k in f, nil when it is not given.
func Get(f strictjson.Members, k string) json.RawMessage {
	v, _ := f.Get(k)
	return v
}

// IsNull reports whether v is absent or null.
func IsNull(v json.RawMessage) bool { return len(v) == 0 || string(bytes.TrimSpace(v)) == "null" }

// IsString reports whether v is a JSON string.
func IsString(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '"'
}

// String reads a string: in one pass (jsonscan) when it is plain, else
// (an escaped surrogate, invalid UTF-8, a fault) by encoding/json.
func String(v json.RawMessage, path string) (string, error) {
	if !IsString(v) {
		return "", Fail(path, "must be a string")
	}
	r := jsonscan.New(v)
	if s, ok := r.String(math.MaxInt); ok && r.End() {
		return s, nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", Fail(path, "must be a string")
	}
	return s, nil
}

// Int reads an integer of 0 to math.MaxInt32.
func Int(v json.RawMessage, path string) (int, error) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil {
		return 0, Fail(path, "must be an integer")
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, Fail(path, "must be between 0 and %d", math.MaxInt32)
	}
	return int(n), nil
}

// Float reads a number.
func Float(v json.RawMessage, path string) (*float64, error) {
	v = bytes.TrimSpace(v)
	var f float64
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || json.Unmarshal(v, &f) != nil {
		return nil, Fail(path, "must be a number")
	}
	return &f, nil
}

// Bool reads true or false.
func Bool(v json.RawMessage, path string) (bool, error) {
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, Fail(path, "must be true or false")
}

// IsDataURL reports whether u is a data: URL.
func IsDataURL(u string) bool { return len(u) >= 5 && strings.EqualFold(u[:5], "data:") }

// ParseDataURL reads u, a data: URL, "data:<media type>[;params];base64,<data>".
func ParseDataURL(u, path string) (mediaType, data string, err error) {
	meta, payload, ok := strings.Cut(u[5:], ",")
	if !ok {
		return "", "", Fail(path, "a data URL needs a comma before its data")
	}
	params := strings.Split(meta, ";")
	if len(params) < 2 || !strings.EqualFold(params[len(params)-1], "base64") {
		return "", "", Fail(path, "a data URL must be base64 (data:<media type>;base64,...)")
	}
	mediaType = strings.ToLower(strings.TrimSpace(params[0]))
	if mediaType == "" {
		return "", "", Fail(path, "a data URL needs a media type")
	}
	if payload == "" {
		return "", "", Fail(path, "the data URL has no data")
	}
	return mediaType, payload, nil
}
