package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/strictjson"
)

var contextKeys = []string{"source_agent", "target_agent", "task", "prompts", "memory", "constraints"}

// DecodeContext reads a relay context (JSON: source_agent, target_agent,
// task, prompts, memory, constraints) strictly, normalises it (numbers in
// metadata and memory become int64 when integral, float64 otherwise; an
// empty position becomes DefaultPosition) and validates it with lim.
// Errors are *Error naming the place: "prompts[3].position: unknown
// position \"sytem\" ...", "line 2, column 7: invalid character ...".
func DecodeContext(data []byte, lim Limits) (*Context, error) {
	lim = lim.withDefaults()
	if len(data) > lim.MaxBytes {
		return nil, errorf(CodeTooLarge, "", "the relay context is %d bytes; the limit is %d", len(data), lim.MaxBytes)
	}
	fields, err := decodeObject(data, "", CodeInvalidContext)
	if err != nil {
		return nil, err
	}
	rc := &Context{}
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		switch k {
		case "source_agent":
			err = decodeStrict(v, k, CodeInvalidContext, &rc.SourceAgent)
		case "target_agent":
			err = decodeStrict(v, k, CodeInvalidContext, &rc.TargetAgent)
		case "task":
			err = decodeStrict(v, k, CodeInvalidContext, &rc.Task)
		case "constraints":
			err = decodeStrict(v, k, CodeInvalidContext, &rc.Constraints)
		case "memory":
			if err = decodeStrict(v, k, CodeInvalidContext, &rc.Memory); err == nil {
				err = normaliseMap(rc.Memory, k, CodeInvalidContext)
			}
		case "prompts":
			var raw []json.RawMessage
			if err = decodeStrict(v, k, CodeInvalidContext, &raw); err != nil {
				break
			}
			if len(raw) > lim.MaxPrompts {
				return nil, errorf(CodeTooLarge, "prompts", "%d prompts; the limit is %d", len(raw), lim.MaxPrompts)
			}
			rc.Prompts = make([]Prompt, len(raw))
			for i, r := range raw {
				if rc.Prompts[i], err = decodePrompt(r, strictjson.Index("prompts", i)); err != nil {
					break
				}
			}
		default:
			err = errorf(CodeInvalidContext, "", "unknown field %q (known: %s)", k, strings.Join(contextKeys, ", "))
		}
		if err != nil {
			return nil, err
		}
	}
	if rc.Prompts == nil {
		rc.Prompts = []Prompt{}
	}
	if err := rc.Validate(lim); err != nil {
		return nil, err
	}
	return rc, nil
}

var promptKeys = []string{"id", "name", "description", "position", "content", "variables", "conditions", "examples", "priority", "metadata"}

func decodePrompt(data []byte, at string) (Prompt, error) {
	var p Prompt
	if isNull(data) {
		return p, errorf(CodeInvalidPrompt, at, "must be an object, not null")
	}
	if err := decodeStrict(data, at, CodeInvalidPrompt, &p); err != nil {
		var e *Error
		if errors.As(err, &e) && strings.HasPrefix(e.Msg, "unknown field") {
			e.Msg += " (known: " + strings.Join(promptKeys, ", ") + ")"
		}
		return p, err
	}
	if p.Position == "" {
		p.Position = DefaultPosition
	}
	return p, normaliseMap(p.Metadata, strictjson.Join(at, "metadata"), CodeInvalidPrompt)
}

// decodeObject reads data as one JSON object, keeping the values raw.
func decodeObject(data []byte, at string, code Code) (map[string]json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, errorf(code, at, "not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errorf(code, at, "empty input: expected a JSON object")
	}
	if trimmed[0] != '{' {
		if json.Valid(trimmed) {
			return nil, errorf(code, at, "must be a JSON object")
		}
	}
	var fields map[string]json.RawMessage
	if err := decodeStrict(data, at, code, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		return nil, errorf(code, at, "must be a JSON object, not null")
	}
	return fields, nil
}

// decodeStrict decodes one JSON value into v: no unknown fields, numbers as
// json.Number, nothing after the value. Errors name the place under at.
func decodeStrict(data []byte, at string, code Code, v any) error {
	err := strictjson.Unmarshal(data, v, strictjson.Limits{})
	if err == nil {
		return nil
	}
	e := err.(*strictjson.Error)
	switch e.Code {
	case strictjson.CodeTrailing:
		return errorf(code, at, "more than one JSON value")
	case strictjson.CodeType:
		var te *json.UnmarshalTypeError
		errors.As(e.Err, &te)
		return errorf(code, join(at, te.Field), "must be %s, not a JSON %s", goKind(te.Type.String()), te.Value)
	case strictjson.CodeUnknownField:
		return errorf(code, at, "unknown field %s", e.Msg)
	case strictjson.CodeUTF8:
		return errorf(code, at, "not valid UTF-8")
	}
	// A syntax error is placed by line and column, counted in characters;
	// the message is encoding/json's.
	if e.Line > 0 {
		return errorf(code, at, "line %d, column %d: %s", e.Line, e.Column, e.Err.Error())
	}
	return errorf(code, at, "%s", e.Msg)
}

// join roots the path field (of a value under at) at at: at itself when
// field is empty.
func join(at, field string) string {
	if field == "" {
		return at
	}
	return strictjson.Join(at, field)
}

func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case t == "string", t == "relay.Position":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "map"), strings.HasPrefix(t, "struct"), strings.HasPrefix(t, "relay."):
		return "an object"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"), t == "json.Number":
		return "a number"
	}
	return t
}

func isNull(data []byte) bool { return string(bytes.TrimSpace(data)) == "null" }

// normaliseMap turns the json.Number values of m (at any depth) into int64
// when integral and in range, float64 otherwise.
func normaliseMap(m map[string]any, at string, code Code) error {
	for k, v := range m {
		n, err := normalise(v, strictjson.Join(at, k), code)
		if err != nil {
			return err
		}
		m[k] = n
	}
	return nil
}

func normalise(v any, at string, code Code) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, errorf(code, at, "%s is out of range", x)
		}
		return f, nil
	case map[string]any:
		return x, normaliseMap(x, at, code)
	case []any:
		for i, e := range x {
			n, err := normalise(e, strictjson.Index(at, i), code)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
