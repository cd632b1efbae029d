package bedrock_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/bedrock"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

func TestStructuredOutputAsForcedTool(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	own := []chat.Tool{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		name  string
		tools []chat.Tool
		want  string // toolConfig
	}{
		{"no tools of its own: the format's tool is forced", nil,
			`{"tools":[{"toolSpec":{"name":"structured_output","description":"the count\n\nAnswer by calling this tool: its input is your answer, which must be JSON matching the input schema.","inputSchema":{"json":{"type":"object","properties":{"n":{"type":"integer"}}}}}}],"toolChoice":{"tool":{"name":"structured_output"}}}`},
		{"with tools: any tool", own,
			`{"tools":[{"toolSpec":{"name":"lookup","inputSchema":{"json":{"type":"object"}}}},{"toolSpec":{"name":"structured_output","description":"the count\n\nAnswer by calling this tool: its input is your answer, which must be JSON matching the input schema.","inputSchema":{"json":{"type":"object","properties":{"n":{"type":"integer"}}}}}}],"toolChoice":{"any":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := chat.Request{Model: "anthropic.claude-sonnet-4", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("count")}},
				Tools: tc.tools, Format: &chat.OutputFormat{Type: "json_schema", Description: "the count", Schema: schema}}
			out, warns, err := bedrock.EncodeRequest(req, bedrock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 0 {
				t.Errorf("warnings %v", warns)
			}
			got, _ := json.Marshal(out.ToolConfig)
			if d := wiretest.Diff([]byte(tc.want), got); d != "" {
				t.Errorf("%s\n got %s", d, got)
			}
		})
	}
}

func TestStructuredOutputToolNameTaken(t *testing.T) {
	req := chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("x")}},
		Tools:  []chat.Tool{{Name: "structured_output", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Format: &chat.OutputFormat{Type: "json_object"}}
	_, _, err := bedrock.EncodeRequest(req, bedrock.Options{})
	if ce, ok := err.(*chat.Error); !ok || ce.Path != "tools[0].name" {
		t.Errorf("err %v, want a *chat.Error at tools[0].name", err)
	}
}
