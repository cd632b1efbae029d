package store_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// TestMergeContextIsJSONMergePatch: context/merge applies RFC 7396: a
// null deletes, objects merge recursively, anything else (an array
// included) replaces, and nulls inside a value that replaces are dropped.
func TestMergeContextIsJSONMergePatch(t *testing.T) {
	for _, c := range []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{`{"a":{"x":1}}`, `{"a":{"y":{"z":null,"w":2}}}`, `{"a":{"x":1,"y":{"w":2}}}`},
		{`{"l":[1,{"k":1}]}`, `{"l":[{"k":null}]}`, `{"l":[{"k":null}]}`},
	} {
		got, err := store.MergeContext(json.RawMessage(c.target), json.RawMessage(c.patch))
		if err != nil || string(got) != c.want {
			t.Errorf("merge %s into %s: %s %v; want %s", c.patch, c.target, got, err, c.want)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `null`, `{`} {
		if _, err := store.MergeContext(json.RawMessage(`{}`), json.RawMessage(bad)); err == nil {
			t.Errorf("patch %s accepted", bad)
		}
	}
}
