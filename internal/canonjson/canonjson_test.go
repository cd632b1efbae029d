package canonjson_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/internal/canonjson"
)

func TestMarshal(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": []any{"<x>", "&"}}, `{"a":["<x>","&"],"b":1}`},
		{json.Number("1.50"), `1.50`},
		{nil, `null`},
		{"", `""`},
	} {
		got, err := canonjson.Marshal(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := canonjson.Marshal(func() {}); err == nil {
		t.Error("a value JSON cannot hold was written")
	}
}
