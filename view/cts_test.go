package view_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/view"
)

// TestJSONPathCompliance runs the RFC 9535 JSONPath Compliance Test Suite
// (testdata/jsonpath-cts, BSD-2, vendored with its licence) through extract
// rules: every invalid selector is refused at compile time, and every
// valid one compiles and selects the suite's nodes (a singular query gives
// its one node's value, or null for none).
func TestJSONPathCompliance(t *testing.T) {
	data, err := os.ReadFile("testdata/jsonpath-cts/cts.json")
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests []struct {
			Name     string            `json:"name"`
			Selector string            `json:"selector"`
			Document json.RawMessage   `json:"document"`
			Result   json.RawMessage   `json:"result"`
			Results  []json.RawMessage `json:"results"`
			Invalid  bool              `json:"invalid_selector"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(data, &suite); err != nil {
		t.Fatal(err)
	}
	valid, invalid := 0, 0
	for _, c := range suite.Tests {
		hints, _ := json.Marshal(map[string]any{"transform": map[string]any{"v": map[string]any{"type": "extract", "value": c.Selector}}})
		v, err := view.Compile(hints)
		if c.Invalid {
			invalid++
			if err == nil {
				t.Errorf("%s: %q compiled; the suite says it is invalid", c.Name, c.Selector)
			}
			continue
		}
		valid++
		if err != nil {
			t.Errorf("%s: %q refused: %v", c.Name, c.Selector, err)
			continue
		}
		out, res, err := v.ApplyJSON(context.Background(), c.Document, view.Record{})
		if err != nil || res.Status != view.StatusOK {
			t.Errorf("%s: %q: %v %v", c.Name, c.Selector, err, res.Err)
			continue
		}
		var got struct{ V any }
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		wants := c.Results
		if c.Result != nil {
			wants = []json.RawMessage{c.Result}
		}
		if !matchesOne(t, got.V, wants) {
			t.Errorf("%s: %q on %s: got %s, want one of %s", c.Name, c.Selector, c.Document, mustJSON(t, got.V), wants)
		}
	}
	t.Logf("%d valid selectors selected the suite's nodes, %d invalid ones refused", valid, invalid)
	if valid < 400 || invalid < 200 {
		t.Fatalf("suite read wrongly: %d valid, %d invalid", valid, invalid)
	}
}

// matchesOne reports whether got, an extract rule's value, is one of the
// suite's node lists: the list itself for a query that is not singular,
// or its one value (null for none) for a singular one.
func matchesOne(t *testing.T, got any, wants []json.RawMessage) bool {
	g := mustJSON(t, got)
	for _, w := range wants {
		var nodes []any
		if err := json.Unmarshal(w, &nodes); err != nil {
			t.Fatal(err)
		}
		if g == mustJSON(t, nodes) {
			return true
		}
		switch len(nodes) {
		case 0:
			if got == nil {
				return true
			}
		case 1:
			if g == mustJSON(t, nodes[0]) {
				return true
			}
		}
	}
	return false
}

func mustJSON(t *testing.T, v any) string {
	b, err := canonjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
