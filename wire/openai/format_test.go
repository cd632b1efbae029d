package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// An OpenAI client's structured-output request and carried fields reach an
// OpenAI upstream as they were sent.
func TestStructuredOutputAndCarriedFields(t *testing.T) {
	body := `{"model":"gpt-5","messages":[{"role":"user","content":"json please"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}}}}},
		"seed":7,"user":"u-1","logit_bias":{"50256":-100},"presence_penalty":0.5,"metadata":{"k":"v"},"store":false,"service_tier":"flex"}`
	req, err := openai.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, warns, err := openai.EncodeRequest(req, openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v, want none", warns)
	}
	got, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-5","messages":[{"role":"user","content":"json please"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}}}}},
		"seed":7,"user":"u-1","logit_bias":{"50256":-100},"presence_penalty":0.5,"metadata":{"k":"v"},"store":false,"service_tier":"flex"}`
	if d := wiretest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\n got %s", d, got)
	}
}

func TestResponseFormatFromCanonical(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format *chat.OutputFormat
		want   string
	}{
		{"json_object", &chat.OutputFormat{Type: "json_object"}, `{"type":"json_object"}`},
		{"unnamed schema gets a name", &chat.OutputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)},
			`{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object"}}}`},
		{"name and description kept", &chat.OutputFormat{Type: "json_schema", Name: "n", Description: "d", Schema: json.RawMessage(`{"type":"object"}`)},
			`{"type":"json_schema","json_schema":{"name":"n","description":"d","schema":{"type":"object"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("x")}}, Format: tc.format}
			out, _, err := openai.EncodeRequest(req, openai.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(out.ResponseFormat)
			if d := wiretest.Diff([]byte(tc.want), got); d != "" {
				t.Errorf("%s\n got %s", d, got)
			}
		})
	}
}

// A field the policy does not carry to OpenAI is not sent, with a warning.
func TestUncarriedFieldWarned(t *testing.T) {
	req := chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("x")}},
		Extra: map[string]json.RawMessage{"top_k": json.RawMessage(`3`), "seed": json.RawMessage(`1`)}}
	out, warns, err := openai.EncodeRequest(req, openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	if d := wiretest.Diff([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"seed":1}`), got); d != "" {
		t.Errorf("%s\n got %s", d, got)
	}
	if len(warns) != 1 || warns[0].Path != "top_k" {
		t.Errorf("warnings %v, want one for top_k", warns)
	}
}
