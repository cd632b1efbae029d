package simple_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/simple"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is the wiretest adapter: options are decoded strictly.
func encode(req chat.Request, raw json.RawMessage) (any, []chat.Warning, error) {
	var opts simple.Options
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			return nil, nil, err
		}
	}
	out, warns, err := simple.EncodeRequest(req, opts)
	if err != nil {
		return nil, nil, err
	}
	return out, warns, nil
}

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

// TestConformanceThinkingText runs the corpus with reasoning rendered as text.
func TestConformanceThinkingText(t *testing.T) {
	wiretest.Run(t, func(req chat.Request, _ json.RawMessage) (any, []chat.Warning, error) {
		return encode(req, json.RawMessage(`{"thinking":"text"}`))
	})
}

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

// TestCasesKeepInput: no case changes its input, and encoding is
// deterministic.
func TestCasesKeepInput(t *testing.T) {
	data, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []wiretest.Case
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		req, err := chat.DecodeRequest(c.Input)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		before, _ := json.Marshal(req)
		first, _, err := encode(req, c.Options)
		if err != nil {
			continue
		}
		firstJSON, _ := json.Marshal(first)
		if after, _ := json.Marshal(req); !bytes.Equal(before, after) {
			t.Errorf("%s: the input changed:\nbefore %s\nafter  %s", c.Name, before, after)
		}
		second, _, _ := encode(req, c.Options)
		if secondJSON, _ := json.Marshal(second); !bytes.Equal(firstJSON, secondJSON) {
			t.Errorf("%s: two encodings differ", c.Name)
		}
	}
}

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }
