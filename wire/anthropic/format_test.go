package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

func TestStructuredOutput(t *testing.T) {
	msgs := []chat.Message{{Role: chat.User, Content: chat.Str("weather?")}}
	strict := true
	for _, tc := range []struct {
		name string
		req  chat.Request
		want string
	}{
		{"json_schema in output_config.format, effort kept",
			chat.Request{Model: "m", MaxTokens: 100, Messages: msgs,
				Format: &chat.OutputFormat{Type: "json_schema", Name: "w", Strict: &strict, Schema: json.RawMessage(`{"type":"object"}`)},
				Extra:  map[string]json.RawMessage{"output_config": json.RawMessage(`{"effort":"low"}`)}},
			`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"weather?"}],"output_config":{"effort":"low","format":{"type":"json_schema","schema":{"type":"object"}}}}`},
		{"json_object as a forced tool",
			chat.Request{Model: "m", MaxTokens: 100, Messages: msgs, Format: &chat.OutputFormat{Type: "json_object"}},
			`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"weather?"}],
			  "tools":[{"name":"structured_output","description":"Answer by calling this tool: its input is your answer, which must be JSON matching the input schema.","input_schema":{"type":"object"}}],
			  "tool_choice":{"type":"tool","name":"structured_output"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := anthropic.EncodeRequest(tc.req, anthropic.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if d := wiretest.Diff([]byte(tc.want), got); d != "" {
				t.Errorf("%s\n got %s", d, got)
			}
		})
	}
	if wire.FormatTool("anthropic", &chat.OutputFormat{Type: "json_object"}) != wire.FormatToolName {
		t.Error("the gateway would not turn the json_object tool call back into text")
	}
}
