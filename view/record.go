package view

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/canonjson"
)

// DecodeRecord reads a whole breadcrumb as JSON ({"title": …, "context": …,
// "tags": […], …}) into a Record, and returns its llm_hints as raw JSON when
// the record carries them (nil otherwise). Fields other than the ones a view
// uses are ignored, so the full record a server returns is accepted as is.
// Errors name the field at fault.
func DecodeRecord(data []byte) (Record, []byte, error) {
	v, err := DecodeJSON(data)
	if err != nil {
		return Record{}, nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Record{}, nil, fmt.Errorf("record: must be a JSON object, not %s", kindOf(v))
	}
	var rec Record
	str := func(k string, dst *string) error {
		switch x := m[k].(type) {
		case nil:
			return nil
		case string:
			*dst = x
			return nil
		default:
			return fmt.Errorf("record.%s: must be a string, not %s", k, kindOf(x))
		}
	}
	for k, dst := range map[string]*string{"id": &rec.ID, "title": &rec.Title, "description": &rec.Description, "schema_name": &rec.SchemaName} {
		if err := str(k, dst); err != nil {
			return Record{}, nil, err
		}
	}
	switch x := m["tags"].(type) {
	case nil:
	case []any:
		rec.Tags = make([]string, len(x))
		for i, t := range x {
			s, ok := t.(string)
			if !ok {
				return Record{}, nil, fmt.Errorf("record.tags[%d]: must be a string, not %s", i, kindOf(t))
			}
			rec.Tags[i] = s
		}
	default:
		return Record{}, nil, fmt.Errorf("record.tags: must be an array of strings, not %s", kindOf(x))
	}
	switch x := m["version"].(type) {
	case nil:
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return Record{}, nil, fmt.Errorf("record.version: must be an integer, not %s", x)
		}
		rec.Version = n
	default:
		return Record{}, nil, fmt.Errorf("record.version: must be an integer, not %s", kindOf(x))
	}
	c, ok := m["context"]
	if !ok {
		return Record{}, nil, fmt.Errorf("record.context: missing: a record holds its JSON context under \"context\"")
	}
	rec.Context = c
	var hints []byte
	if h, ok := m["llm_hints"]; ok && h != nil {
		if hints, err = canonjson.Marshal(h); err != nil {
			return Record{}, nil, fmt.Errorf("record.llm_hints: %w", err)
		}
	}
	return rec, hints, nil
}
