package gemini

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// schemaKeywords are the keywords of Gemini's Schema (its OpenAPI 3.0
// subset) that JSON Schema spells alike.
var schemaKeywords = map[string]bool{
	"format": true, "title": true, "description": true, "enum": true, "required": true,
	"minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	"minLength": true, "maxLength": true, "pattern": true, "minimum": true, "maximum": true,
	"default": true,
}

// jsonSchemaOf converts a Gemini Schema (responseSchema, a declaration's
// parameters) to the JSON Schema every other provider takes: type
// lower-cased (TYPE_UNSPECIFIED: no type), nullable as "null" added to
// the type, example as examples [example], properties, items and anyOf
// converted in turn, propertyOrdering left out (a Gemini ordering hint JSON
// Schema has no word for), the other keywords as they are. A keyword the
// Schema does not have is refused, naming it (snake_case names are
// accepted, as for every field of a request).
func jsonSchemaOf(v json.RawMessage, path string) (json.RawMessage, error) {
	tree, err := strictjson.Decode(v, strictjson.Limits{Depth: maxSchemaDepth, Members: maxSchemaMembers})
	if err != nil {
		e := err.(*strictjson.Error)
		code := chat.CodeInvalidValue
		switch e.Code {
		case strictjson.CodeTooDeep, strictjson.CodeTooMany:
			code = chat.CodeTooLarge
		case strictjson.CodeDuplicateKey:
			code = chat.CodeDuplicateField
		}
		return nil, &chat.Error{Code: code, Path: joinPath(path, e.Path), Msg: e.Msg, Err: err}
	}
	out, err := convertOpenAPI(tree, path)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func joinPath(path, sub string) string {
	switch {
	case sub == "":
		return path
	case strings.HasPrefix(sub, "["):
		return path + sub
	}
	return strictjson.Join(path, sub)
}

func convertOpenAPI(v any, path string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, reqjson.Fail(path, "a schema must be a JSON object")
	}
	out := make(map[string]any, len(m))
	nullable := false
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first fault in a stable order
	seen := map[string]string{}
	for _, key := range keys {
		val := m[key]
		k := camel(key)
		p := strictjson.Join(path, key)
		if prev, dup := seen[k]; dup {
			return nil, reqjson.FailCode(chat.CodeDuplicateField, p, "given twice (as %q and %q)", prev, key)
		}
		seen[k] = key
		if val == nil {
			continue
		}
		switch {
		case schemaKeywords[k]:
			out[k] = val
		case k == "type":
			s, ok := val.(string)
			if !ok {
				return nil, reqjson.Fail(p, "must be a string")
			}
			switch t := strings.ToLower(s); t {
			case "string", "number", "integer", "boolean", "array", "object", "null":
				out["type"] = t
			case "type_unspecified":
			default:
				return nil, reqjson.Fail(p, "%q is not one of STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL", s)
			}
		case k == "nullable":
			b, ok := val.(bool)
			if !ok {
				return nil, reqjson.Fail(p, "must be true or false")
			}
			nullable = b
		case k == "example":
			out["examples"] = []any{val}
		case k == "propertyOrdering":
		case k == "properties":
			props, ok := val.(map[string]any)
			if !ok {
				return nil, reqjson.Fail(p, "must be a JSON object")
			}
			conv := make(map[string]any, len(props))
			for name, s := range props {
				c, err := convertOpenAPI(s, strictjson.Join(p, name))
				if err != nil {
					return nil, err
				}
				conv[name] = c
			}
			out["properties"] = conv
		case k == "items":
			c, err := convertOpenAPI(val, p)
			if err != nil {
				return nil, err
			}
			out["items"] = c
		case k == "anyOf":
			list, ok := val.([]any)
			if !ok {
				return nil, reqjson.Fail(p, "must be an array")
			}
			conv := make([]any, len(list))
			for n, s := range list {
				c, err := convertOpenAPI(s, strictjson.Index(p, n))
				if err != nil {
					return nil, err
				}
				conv[n] = c
			}
			out["anyOf"] = conv
		default:
			return nil, reqjson.Fail(p, "not a keyword of Gemini's Schema (use responseJsonSchema or parametersJsonSchema for JSON Schema)")
		}
	}
	if nullable {
		if t, ok := out["type"].(string); ok && t != "null" {
			out["type"] = []any{t, "null"}
		}
	}
	return out, nil
}
