package gemini_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

func TestStructuredOutputAndMappedFields(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	for _, tc := range []struct {
		name   string
		opts   gemini.Options
		format *chat.OutputFormat
		want   string // generationConfig
	}{
		{"json_schema as responseJsonSchema", gemini.Options{}, &chat.OutputFormat{Type: "json_schema", Schema: schema},
			`{"maxOutputTokens":8192,"seed":9,"presencePenalty":0.5,"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`},
		{"json_schema as responseSchema", gemini.Options{Schema: gemini.SchemaOpenAPI}, &chat.OutputFormat{Type: "json_schema", Schema: schema},
			`{"maxOutputTokens":8192,"seed":9,"presencePenalty":0.5,"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}`},
		{"json_object", gemini.Options{}, &chat.OutputFormat{Type: "json_object"},
			`{"maxOutputTokens":8192,"seed":9,"presencePenalty":0.5,"responseMimeType":"application/json"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := chat.Request{Model: "gemini-2.5-flash", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("where?")}}, Format: tc.format,
				Extra: map[string]json.RawMessage{"seed": json.RawMessage(`9`), "presence_penalty": json.RawMessage(`0.5`),
					"safetySettings": json.RawMessage(`[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]`)}}
			out, warns, err := gemini.EncodeRequest(req, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 0 {
				t.Errorf("warnings %v", warns)
			}
			got, _ := json.Marshal(out.GenerationConfig)
			if d := wiretest.Diff([]byte(tc.want), got); d != "" {
				t.Errorf("%s\n got %s", d, got)
			}
			if string(out.SafetySettings) == "" {
				t.Errorf("safetySettings not carried")
			}
		})
	}
}
