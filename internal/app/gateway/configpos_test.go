package gateway

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzFieldPosition: the path→place mapper never panics, whatever the
// file and the path, and a place it gives is in the file; in JSON, at the
// key or the element the last step it found names.
func FuzzFieldPosition(f *testing.F) {
	for _, s := range []struct {
		data, path string
		yaml       bool
	}{
		{`{"providers":[{"name":"a","mock":{"errors":[{"on":1}]}}]}`, "providers[0].mock.errors[0].on", false},
		{"{\n \"a\": [1, [2, {\"b\": 3}]],\n \"c\": {}}", "a[1][1].b", false},
		{`{"a":{"a":{"a":1}}}`, "a.a.a.a", false},
		{`[1,2,3]`, "[2]", false},
		{`{"a":`, "a.b", false},
		{"providers:\n  - name: a\n    mock: {errors: [{on: 1}]}\n", "providers[0].mock.errors[0].on", true},
		{"a: &x {b: 1}\nc:\n  <<: *x\n  d: 2\n", "c.b", true},
		{"a: [", "a[0]", true},
		{"", "", false},
		{"x", "[", false},
	} {
		f.Add([]byte(s.data), s.path, s.yaml)
	}
	f.Fuzz(func(t *testing.T, data []byte, path string, yaml bool) {
		if len(data) > 1<<16 || len(path) > 1<<10 {
			return
		}
		format := formatJSON
		if yaml {
			format = formatYAML
		}
		line, col := fieldPosition(data, format, path)
		if line < 0 || col < 0 || (line == 0) != (col == 0) || line > bytes.Count(data, []byte{'\n'})+1 {
			t.Fatalf("%d:%d in %d lines", line, col, bytes.Count(data, []byte{'\n'})+1)
		}
		if yaml {
			return
		}
		steps := parsePath(path)
		off, ok := jsonPosition(data, steps)
		if !ok {
			return
		}
		if off < 0 || off >= int64(len(data)) {
			t.Fatalf("offset %d of %d bytes", off, len(data))
		}
		if c := data[off]; bytes.IndexByte([]byte("\"{[-0123456789tfn"), c) < 0 {
			t.Fatalf("offset %d is at %q, not at a key or a value", off, c)
		}
	})
}

// FuzzParseConfig: a configuration file of any bytes, JSON or YAML, is
// read or refused with a *ConfigError whose place is in the file; never
// a panic.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("providers:\n  - name: demo\n    type: mock\n    models: [m]\n    mock: {errors: [{status: 429, on: 2}]}\n"), true)
	f.Add([]byte(`{"providers":[{"name":"a","type":"mock","models":["m"],"mock":{"chunk_words":2,"latency":"1s"}}]}`), false)
	f.Add([]byte(`{"providers":[{"name":"a","type":"openai","base_url":"ftp://x","api_key_env":"K","models":["m"]}]}`), false)
	f.Add([]byte("providers:\n  - <<: &b {type: mock}\n    name: x\n    models: *m\n"), true)
	f.Add([]byte(`{"providers":[{"name":"a","type":"mock","models":["m"],"extra":{"a":[1,2]}}],"routes":[{"model":3}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, yaml bool) {
		if len(data) > 1<<16 {
			return
		}
		format := formatJSON
		if yaml {
			format = formatYAML
		}
		_, err := parseConfig("g", data, format, func(string) string { return "k" })
		if err == nil {
			return
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("%v (%T), not a *ConfigError", err, err)
		}
		if ce.Line < 0 || ce.Line > bytes.Count(data, []byte{'\n'})+1 {
			t.Fatalf("line %d of %d: %v", ce.Line, bytes.Count(data, []byte{'\n'})+1, err)
		}
	})
}
