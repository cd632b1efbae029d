package gemini

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// openAPIKeywords are the JSON Schema keywords Gemini's Schema (its OpenAPI
// 3.0 subset) takes as they are.
var openAPIKeywords = map[string]bool{
	"format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"required": true, "minItems": true, "maxItems": true, "minProperties": true,
	"maxProperties": true, "minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "example": true, "default": true, "propertyOrdering": true,
}

// openAPISchema converts a tool's JSON Schema to Gemini's Schema subset
// (see the package documentation), warning at path about what it drops.
// It returns nil for an object schema without properties.
func (e *encoder) openAPISchema(raw json.RawMessage, path string) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		e.warn(path, "not valid JSON (%v): not sent", err)
		return nil
	}
	var dropped []string
	out := convertSchema(v, "", &dropped)
	if len(dropped) > 0 {
		sort.Strings(dropped) // map order must not show in the warning
		e.warn(path, "keywords outside Gemini's schema subset are not sent: %s", strings.Join(dropped, ", "))
	}
	if out["type"] == "OBJECT" {
		if props, _ := out["properties"].(map[string]any); len(props) == 0 {
			return nil
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		e.warn(path, "cannot be encoded (%v): not sent", err)
		return nil
	}
	return data
}

func convertSchema(v any, at string, dropped *[]string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		// A boolean schema, or no schema at all: Gemini has no form for it.
		*dropped = append(*dropped, orRoot(at))
		return map[string]any{}
	}
	out := make(map[string]any, len(m))
	drop := func(p string) { *dropped = append(*dropped, p) }
	for k, val := range m {
		p := strictjson.Join(at, k)
		switch {
		case openAPIKeywords[k]:
			out[k] = val
		case k == "type":
			convertType(val, m, out, p, drop)
		case k == "properties":
			props, ok := val.(map[string]any)
			if !ok {
				drop(p)
				continue
			}
			conv := make(map[string]any, len(props))
			for name, s := range props {
				conv[name] = convertSchema(s, p+"."+name, dropped)
			}
			out[k] = conv
		case k == "items":
			if _, ok := val.(map[string]any); !ok {
				drop(p) // the tuple form
				continue
			}
			out[k] = convertSchema(val, p, dropped)
		case k == "anyOf" || k == "oneOf":
			list, ok := val.([]any)
			if !ok || (k == "oneOf" && m["anyOf"] != nil) {
				drop(p)
				continue
			}
			conv := make([]any, len(list))
			for n, s := range list {
				conv[n] = convertSchema(s, p+"["+strconv.Itoa(n)+"]", dropped)
			}
			out["anyOf"] = conv
		case k == "const":
			if s, ok := val.(string); ok && m["enum"] == nil {
				out["enum"] = []any{s}
				if m["type"] == nil {
					out["type"] = "STRING"
				}
				continue
			}
			drop(p)
		default:
			drop(p)
		}
	}
	return out
}

// convertType upper-cases a type; a type list becomes its one non-null
// type (or an anyOf of them) with nullable when it holds "null".
func convertType(val any, in, out map[string]any, p string, drop func(string)) {
	switch t := val.(type) {
	case string:
		out["type"] = strings.ToUpper(t)
	case []any:
		var types []string
		nullable := false
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				drop(p)
				return
			}
			if s == "null" {
				nullable = true
			} else {
				types = append(types, strings.ToUpper(s))
			}
		}
		if nullable {
			out["nullable"] = true
		}
		switch {
		case len(types) == 0:
			out["type"] = "NULL"
		case len(types) == 1:
			out["type"] = types[0]
		case in["anyOf"] == nil && in["oneOf"] == nil:
			alts := make([]any, len(types))
			for n, s := range types {
				alts[n] = map[string]any{"type": s}
			}
			out["anyOf"] = alts
		default:
			drop(p)
		}
	default:
		drop(p)
	}
}

func orRoot(at string) string {
	if at == "" {
		return "(the schema itself)"
	}
	return at
}
