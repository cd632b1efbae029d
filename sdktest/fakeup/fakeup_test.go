package fakeup

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// send posts body to a fake with its key and returns the status and body.
func send(t testing.TB, f *Fake, path, body string, header ...string) (int, string) {
	t.Helper()
	r := httptest.NewRequest("POST", path, strings.NewReader(body))
	switch f.Name {
	case "anthropic":
		r.Header.Set("x-api-key", "k")
		r.Header.Set("anthropic-version", "2023-06-01")
	case "gemini":
		r.Header.Set("x-goog-api-key", "k")
	default:
		r.Header.Set("Authorization", "Bearer k")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// TestRefusals: each fake refuses what the real API refuses, with the
// real API's status and message.
func TestRefusals(t *testing.T) {
	long := strings.Repeat("c", 41)
	tests := []struct {
		name, path, body string
		fake             *Fake
		status           int
		want             string
	}{
		{"openai unknown field", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"foo":1}`,
			NewOpenAI("k"), 400, "Unrecognized request argument supplied: foo"},
		{"openai stream_options without stream", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`,
			NewOpenAI("k"), 400, "only allowed when 'stream' is enabled"},
		{"openai id of 41", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"` + long + `","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"` + long + `","content":"x"}]}`,
			NewOpenAI("k"), 400, `"code":"string_above_max_length"`},
		{"openai unanswered call", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"x"}]}`,
			NewOpenAI("k"), 400, "did not have response messages: c1"},
		{"openai json_object without json", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`,
			NewOpenAI("k"), 400, "must contain the word 'json'"},
		{"responses unknown field", "/v1/responses", `{"model":"m","input":"hi","foo":1}`,
			NewOpenAI("k"), 400, "Unknown parameter: 'foo'."},
		{"responses output without call", "/v1/responses", `{"model":"m","input":[{"type":"function_call_output","call_id":"c9","output":"x"}]}`,
			NewOpenAI("k"), 400, "No tool call found for function call output with call_id c9."},
		{"responses encrypted content not issued", "/v1/responses", `{"model":"m","input":[{"type":"reasoning","summary":[],"encrypted_content":"gAAAAABfakeXYZ.forged"},{"role":"user","content":"hi"}]}`,
			NewOpenAI("k"), 400, `"code":"invalid_encrypted_content"`},
		{"responses previous id", "/v1/responses", `{"model":"m","input":"hi","previous_response_id":"resp_1"}`,
			NewOpenAI("k"), 400, "previous_response_not_found"},
		{"anthropic bad id", "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"functions.get_weather:0","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"functions.get_weather:0","content":"x"}]}]}`,
			NewAnthropic("k"), 400, "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"},
		{"anthropic unknown field", "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"seed":1}`,
			NewAnthropic("k"), 400, "seed: Extra inputs are not permitted"},
		{"anthropic count_tokens takes no max_tokens", "/v1/messages/count_tokens", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
			NewAnthropic("k"), 400, "max_tokens: Extra inputs are not permitted"},
		{"anthropic foreign signature", "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"c2ln"},{"type":"text","text":"x"}]},{"role":"user","content":"more"}]}`,
			NewAnthropic("k"), 400, "Invalid `signature` in `thinking` block"},
		{"anthropic signature of other text", "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"edited","signature":"` + anthropicSignature("original") + `"},{"type":"text","text":"x"}]},{"role":"user","content":"more"}]}`,
			NewAnthropic("k"), 400, "messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"anthropic redacted data not issued", "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"Zm9yZ2Vk"},{"type":"text","text":"x"}]},{"role":"user","content":"more"}]}`,
			NewAnthropic("k"), 400, "Invalid `data` in `redacted_thinking` block"},
		{"anthropic tool loop without thinking", "/v1/messages", `{"model":"m","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}]}`,
			NewAnthropic("k"), 400, "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`"},
		{"mistral id", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"x"}]}`,
			NewMistral("k"), 400, "Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9."},
		{"mistral user after tool", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"abcDEF123","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"abcDEF123","content":"x"},{"role":"user","content":"and?"}]}`,
			NewMistral("k"), 400, "Unexpected role 'user' after role 'tool'"},
		{"mistral unknown field", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":1}`,
			NewMistral("k"), 422, "extra_forbidden"},
		{"mistral reasoning_content replayed", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x","reasoning_content":"r"},{"role":"user","content":"more"}]}`,
			NewMistral("k"), 422, `"loc":["body","messages",1,"assistant","reasoning_content"]`},
		{"deepseek json_schema", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}`,
			NewDeepSeek("k"), 400, "This response_format type is unavailable now"},
		{"gemini 3 unsigned call", "/v1beta/models/gemini-3-pro-preview:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"x"}}}]}]}`,
			NewGemini("k"), 400, "Function call is missing a thought_signature"},
		{"gemini unknown field", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"temperature":1}`,
			NewGemini("k"), 400, `Unknown name \"temperature\"`},
		{"gemini response without call", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`,
			NewGemini("k"), 400, "function response turn comes immediately after a function call turn"},
		{"bedrock id", "/model/m/converse-stream", `{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"a:b","name":"f","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"a:b","content":[{"text":"x"}]}}]}]}`,
			NewBedrock("k"), 400, "failed to satisfy constraint: Member must satisfy regular expression pattern"},
		{"bedrock alternation", "/model/m/converse", `{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"user","content":[{"text":"again"}]}]}`,
			NewBedrock("k"), 400, "must alternate between user and assistant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := send(t, tc.fake, tc.path, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s\nwant %d with %q", status, body, tc.status, tc.want)
			}
		})
	}
}

// TestAccepts: what the real APIs accept, each fake answers 200 with the
// canned content: a tool call made from the tool's schema, JSON from a
// response schema, signatures a Gemini 3 model gave back to it.
func TestAccepts(t *testing.T) {
	status, body := send(t, NewOpenAI("k"), "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	if status != 200 || !strings.Contains(body, `"arguments":"{\"city\":\"Paris\"}"`) || !strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Fatalf("tool call: %d %s", status, body)
	}
	status, body = send(t, NewOpenAI("k"), "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"n":{"type":"integer"}}}}}}`)
	if status != 200 || !strings.Contains(body, `"content":"{\"n\":21}"`) {
		t.Fatalf("json_schema: %d %s", status, body)
	}
	g := NewGemini("k")
	status, body = send(t, g, "/v1beta/models/gemini-3-pro-preview:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object"}}]}]}`)
	var res struct {
		Candidates []struct {
			Content struct {
				Parts []map[string]json.RawMessage `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &res) != nil || res.Candidates[0].Content.Parts[0]["thoughtSignature"] == nil {
		t.Fatalf("gemini 3 call: %d %s", status, body)
	}
	model, _ := json.Marshal(map[string]any{"role": "model", "parts": res.Candidates[0].Content.Parts})
	status, body = send(t, g, "/v1beta/models/gemini-3-pro-preview:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},`+string(model)+`,{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"x"}}}]}]}`)
	if status != 200 || !strings.Contains(body, AfterTool) {
		t.Fatalf("gemini 3 signed history: %d %s", status, body)
	}
	status, body = send(t, g, "/v1beta/models/gemini-3-pro-preview:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"x"}}}]}]}`)
	if status != 200 {
		t.Fatalf("gemini 3 placeholder: %d %s", status, body)
	}
	status, body = send(t, NewMistral("k"), "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"abcDEF123","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"abcDEF123","content":"x"},{"role":"assistant","content":"Noted."},{"role":"user","content":"and?"}]}`)
	if status != 200 {
		t.Fatalf("mistral with an assistant between tool and user: %d %s", status, body)
	}
}

// TestStreams: the streamed answers end as the real APIs end them: OpenAI
// with data: [DONE] and a usage chunk only when asked, Anthropic with
// message_stop, Bedrock with a metadata frame.
func TestStreams(t *testing.T) {
	_, body := send(t, NewOpenAI("k"), "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Contains(body, `"choices":[]`) {
		t.Fatalf("openai stream: %s", body)
	}
	_, body = send(t, NewOpenAI("k"), "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(body, `"choices":[]`) {
		t.Fatalf("openai stream with usage: %s", body)
	}
	_, body = send(t, NewAnthropic("k"), "/v1/messages", `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("anthropic stream: %s", body)
	}
	_, body = send(t, NewOpenAI("k"), "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`)
	if !strings.HasPrefix(body, "event: response.created\ndata: {") || !strings.Contains(body, `"sequence_number":0`) ||
		!strings.Contains(body, "event: response.output_text.delta") || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("responses stream: %s", body)
	}
	_, body = send(t, NewGemini("k"), "/v1beta/models/gemini-2.5-flash:streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	var chunks []map[string]any
	if err := json.Unmarshal([]byte(body), &chunks); err != nil || len(chunks) < 2 {
		t.Fatalf("gemini array stream: %v %s", err, body)
	}
	_, body = send(t, NewGemini("k"), "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if !strings.HasPrefix(body, "data: {") || !strings.HasSuffix(body, "\n\n") || !strings.Contains(body, `"finishReason":"STOP"`) {
		t.Fatalf("gemini sse stream: %s", body)
	}
	_, body = send(t, NewBedrock("k"), "/model/m/converse-stream", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	if !strings.Contains(body, "metadata") || !strings.Contains(body, Greeting("bedrock")[:5]) {
		t.Fatalf("bedrock stream: %q", body)
	}
}

// FuzzFakes: no request body makes a fake fail other than with a JSON
// error or a 200.
func FuzzFakes(f *testing.F) {
	f.Add(0, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	f.Add(1, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"y"}]}]}`)
	f.Add(2, `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}],"generationConfig":{"responseSchema":{"type":"OBJECT"},"responseMimeType":"application/json"}}`)
	f.Add(3, `{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"a","content":[]}}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"array","items":{"type":"object"}}}}}]}}`)
	f.Add(4, `{"model":"m","messages":[{"role":"tool","tool_call_id":"abcdefghi","content":"x"}]}`)
	f.Add(5, `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}],"stream":true}`)
	f.Add(6, `{"model":"m","input":["a",[1,2]],"encoding_format":"base64"}`)
	targets := []struct {
		fake *Fake
		path string
	}{
		{NewOpenAI("k"), "/v1/chat/completions"},
		{NewAnthropic("k"), "/v1/messages"},
		{NewGemini("k"), "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"},
		{NewBedrock("k"), "/model/m/converse-stream"},
		{NewMistral("k"), "/v1/chat/completions"},
		{NewOpenAI("k"), "/v1/responses"},
		{NewOpenAI("k"), "/v1/embeddings"},
	}
	f.Fuzz(func(t *testing.T, which int, body string) {
		if which < 0 {
			which = -which
		}
		tg := targets[which%len(targets)]
		tg.fake.Reset()
		status, out := send(t, tg.fake, tg.path, body)
		if status != 200 && !json.Valid([]byte(out)) {
			t.Fatalf("%d with a body that is not JSON: %q", status, out)
		}
		if status >= 500 {
			t.Fatalf("%d: %s", status, out)
		}
		if status == 200 && len(bytes.TrimSpace([]byte(out))) == 0 {
			t.Fatal("an empty 200")
		}
	})
}
