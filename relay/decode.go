package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
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
				if rc.Prompts[i], err = decodePrompt(r, "prompts["+strconv.Itoa(i)+"]"); err != nil {
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
	return p, normaliseMap(p.Metadata, at+".metadata", CodeInvalidPrompt)
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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(data, at, code, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(code, at, "more than one JSON value")
	}
	return nil
}

func jsonError(data []byte, at string, code Code, err error) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset)
		return errorf(code, at, "line %d, column %d: %s", line, col, se.Error())
	case errors.As(err, &te):
		return errorf(code, join(at, te.Field), "must be %s, not a JSON %s", goKind(te.Type.String()), te.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(code, at, "unexpected end of JSON input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errorf(code, at, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errorf(code, at, "%s", strings.TrimPrefix(err.Error(), "json: "))
}

func join(at, field string) string {
	switch {
	case at == "":
		return field
	case field == "":
		return at
	}
	return at + "." + field
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

func lineCol(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	line, col = 1, 1
	for _, c := range data[:offset] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	// The offset is just past the byte at fault.
	if col > 1 {
		col--
	}
	return line, col
}

func isNull(data []byte) bool { return string(bytes.TrimSpace(data)) == "null" }

// normaliseMap turns the json.Number values of m (at any depth) into int64
// when integral and in range, float64 otherwise.
func normaliseMap(m map[string]any, at string, code Code) error {
	for k, v := range m {
		n, err := normalise(v, at+"."+k, code)
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
			n, err := normalise(e, fmt.Sprintf("%s[%d]", at, i), code)
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
