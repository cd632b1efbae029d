package gateway

import (
	"encoding/json"
	"testing"
)

// FuzzSchemaValue: the value built from a client's tool schema is JSON,
// whatever the schema, and bounded in depth and size.
func FuzzSchemaValue(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"enum":[1,2]}},"required":["a","b","c"]}`,
		`{"type":"array","minItems":5,"items":{"type":"array","minItems":5,"items":{"type":"integer","minimum":2.5}}}`,
		`{"anyOf":[{"type":["null","boolean"]}]}`,
		`{"const":{"x":[1]}}`,
		`{"type":"object","required":["a"],"properties":{"a":{"$ref":"#"}}}`,
		`[]`, `null`, `"x"`, `{"type":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		if len(schema) > 1<<16 {
			return
		}
		v := schemaValue(schema)
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		if len(data) > 2*len(schema)+maxSchemaValues*16 {
			t.Fatalf("%d bytes from a schema of %d", len(data), len(schema))
		}
	})
}

// TestSchemaValueBounded: arrays of arrays stop at the bound of values.
func TestSchemaValueBounded(t *testing.T) {
	schema := `{"type":"string"}`
	for range 12 {
		schema = `{"type":"array","minItems":3,"items":` + schema + `}`
	}
	data, _ := json.Marshal(schemaValue(json.RawMessage(schema)))
	if len(data) > maxSchemaValues*16 {
		t.Fatalf("%d bytes", len(data))
	}
}
