package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

type requestCase struct {
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// TestDecodeRequest runs testdata/requests.json: OpenAI request bodies and
// the canonical request (json.Marshal of chat.Request) or the error each
// must give. A decoded request must also be a valid canonical request:
// chat.DecodeRequest reads its JSON back to the same JSON.
func TestDecodeRequest(t *testing.T) {
	data, err := os.ReadFile("testdata/requests.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []requestCase
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cases); err != nil {
		t.Fatal(err)
	}
	ok, bad := 0, 0
	seen := map[string]bool{}
	for _, c := range cases {
		if c.Name == "" || seen[c.Name] {
			t.Fatalf("missing or repeated name %q", c.Name)
		}
		seen[c.Name] = true
		if c.Error != "" {
			bad++
		} else {
			ok++
		}
		t.Run(c.Name, func(t *testing.T) {
			req, err := openai.DecodeRequest(c.Input)
			if c.Error != "" {
				var ce *chat.Error
				if err == nil || !strings.Contains(err.Error(), c.Error) {
					t.Fatalf("error %v, want one containing %q", err, c.Error)
				}
				if !errors.As(err, &ce) {
					t.Fatalf("error %T, want *chat.Error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			if d := wiretest.Diff(c.Expected, got); d != "" {
				t.Errorf("%s\n got %s", d, got)
			}
			again, err := chat.DecodeRequest(got)
			if err != nil {
				t.Fatalf("not a valid canonical request: %v\n%s", err, got)
			}
			if back, _ := json.Marshal(again); !bytes.Equal(back, got) {
				t.Errorf("canonical round trip differs:\n%s\n%s", got, back)
			}
		})
	}
	if ok < 12 || bad < 10 {
		t.Errorf("%d cases and %d error cases; want at least 12 and 10", ok, bad)
	}
}

// TestDecodeRequestInverse: a canonical request converted to OpenAI
// (EncodeRequest) and read back is the request again, for what both
// directions carry.
func TestDecodeRequestInverse(t *testing.T) {
	in := `{"model":"gpt-4.1","max_tokens":500,"system":"sys","messages":[
		{"role":"user","content":"Weather?"},
		{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"call_1","name":"w","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"18C"},{"type":"text","text":"Thanks"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}],
		"tools":[{"name":"w","description":"weather","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"any"},"temperature":0.5,"stop_sequences":["X"]}`
	req, err := chat.DecodeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	wire, _, err := openai.EncodeRequest(req, openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(wire)
	back, err := openai.DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(back)
	// The tool result's string content and the user's parts come back in
	// one user message; the image follows the text as in the wire request.
	want := `{"model":"gpt-4.1","max_tokens":500,"system":"sys","messages":[
		{"role":"user","content":"Weather?"},
		{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"call_1","name":"w","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"18C"},{"type":"text","text":"Thanks"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}],
		"tools":[{"name":"w","description":"weather","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"any"},"temperature":0.5,"stop_sequences":["X"]}`
	if d := wiretest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\n%s\nwire %s", d, got, body)
	}
}

func TestDecodeRequestNotJSON(t *testing.T) {
	_, err := openai.DecodeRequest([]byte(`{"messages": [`))
	var ce *chat.Error
	if !errors.As(err, &ce) || ce.Path != "" || !strings.Contains(ce.Msg, "not valid JSON") {
		t.Fatalf("error %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	data, err := os.ReadFile("testdata/requests.json")
	if err != nil {
		f.Fatal(err)
	}
	var cases []requestCase
	if err := json.Unmarshal(data, &cases); err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add([]byte(c.Input))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := openai.DecodeRequest(body)
		if err != nil {
			var ce *chat.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v, want *chat.Error", err, err)
			}
			return
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := chat.DecodeRequest(out); err != nil {
			t.Fatalf("not a valid canonical request: %v\n%s\n%s", err, body, out)
		}
	})
}
