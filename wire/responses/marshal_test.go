package responses_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/wire/responses"
)

// plainRequest is responses.Request without its MarshalJSON: what
// encoding/json writes of it by reflection.
type plainRequest responses.Request

// sameAsEncodingJSON checks that r's own JSON is valid and is what
// encoding/json writes of its fields, but for the HTML escapes
// encoding/json adds (json.Marshal of r adds them to r's own JSON, so
// the two compare byte for byte).
func sameAsEncodingJSON(t *testing.T, r *responses.Request) {
	t.Helper()
	own, err := r.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	if !json.Valid(own) {
		t.Fatalf("MarshalJSON wrote invalid JSON: %s", own)
	}
	got, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal((*plainRequest)(r))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("MarshalJSON differs from encoding/json:\n got %s\nwant %s", got, want)
	}
}

func TestRequestMarshalJSON(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	yes := true
	args := `{"city":"Paris"}`
	none := []responses.Part(nil)
	empty := []responses.Part{}
	summary := []responses.Part{{Type: "summary_text", Text: "thought <a> & b"}}
	cases := map[string]*responses.Request{
		"zero":  {},
		"empty": {Model: "m", Input: []responses.Item{}},
		"full": {Model: "gpt-5", Instructions: "Be terse.\n\t\"quoted\" \\ <html> & \u2028 \x01 \xff",
			Input: []responses.Item{
				{Type: "message", Role: "user", Content: []responses.Part{
					{Type: "input_text", Text: "hi"},
					{Type: "input_image", ImageURL: "data:image/png;base64,AAAA", Detail: "high"},
					{Type: "input_image", FileID: "file_1"},
					{Type: "input_file", FileData: "data:application/pdf;base64,AA", Filename: "a.pdf"},
					{Type: "input_file", FileURL: "https://example.com/a.pdf"}}},
				{Type: "reasoning", Summary: &summary, EncryptedContent: "enc"},
				{Type: "reasoning", Summary: &empty},
				{Type: "reasoning", Summary: &none},
				{Type: "function_call", CallID: "call_1", Name: "get_weather", Arguments: &args},
				{Type: "function_call", CallID: "call_2", Name: "noargs", Arguments: new(string)},
				{Type: "function_call_output", CallID: "call_1", Output: json.RawMessage(`"sunny"`)},
				{Type: "function_call_output", CallID: "call_2", Output: json.RawMessage(` [ {"type" : "input_text", "text":"x"} ] `)},
			},
			Tools: []responses.Tool{
				{Type: "function", Name: "get_weather", Description: "The weather.", Parameters: json.RawMessage(`{"type":"object"}`), Strict: true},
				{Type: "function", Name: "bare"},
			},
			ToolChoice: json.RawMessage(`"auto"`), ParallelToolCalls: &yes, MaxOutputTokens: 200,
			Temperature: f(0.7), TopP: f(1),
			Reasoning: &responses.Reasoning{Effort: "high", Summary: "auto"},
			Text:      json.RawMessage("{\"format\": {\"type\": \"json_schema\"}}"),
			Include:   []string{"reasoning.encrypted_content"},
			Store:     false, Stream: true,
			Metadata: json.RawMessage(`{"k":"v"}`), User: json.RawMessage(`"u"`), SafetyIdentifier: json.RawMessage(`"s"`),
			PromptCacheKey: json.RawMessage(`"p"`), PromptCacheRetention: json.RawMessage(`"24h"`),
			ServiceTier: json.RawMessage(`"auto"`), Truncation: json.RawMessage(`"auto"`), MaxToolCalls: json.RawMessage(`3`),
			Prompt: json.RawMessage(`{"id":"pmpt_1"}`)},
		"effort only":  {Model: "m", Reasoning: &responses.Reasoning{Effort: "low"}},
		"summary only": {Model: "m", Reasoning: &responses.Reasoning{Summary: "concise"}},
		"no reasoning": {Model: "m", Reasoning: &responses.Reasoning{}},
		"floats":       {Model: "m", Temperature: f(1e-7), TopP: f(1e21)},
		"tiny floats":  {Model: "m", Temperature: f(-2.5e-9), TopP: f(0)},
		"deep":         {Model: "m", ToolChoice: json.RawMessage(strings.Repeat("[", 200) + strings.Repeat("]", 200))},
		"long":         {Model: "m", Instructions: strings.Repeat("a\"b", 5000)},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) { sameAsEncodingJSON(t, r) })
	}

	// What encoding/json cannot write is an error naming the field.
	for name, c := range map[string]struct {
		r     *responses.Request
		field string
	}{
		"invalid raw": {&responses.Request{Model: "m", Metadata: json.RawMessage(`{"k":`)}, "metadata"},
		"invalid output": {&responses.Request{Model: "m", Input: []responses.Item{{Type: "function_call_output", Output: json.RawMessage(`nope`)}}},
			"input[0].output"},
		"invalid parameters": {&responses.Request{Model: "m", Tools: []responses.Tool{{Type: "function", Name: "t", Parameters: json.RawMessage(`{`)}}},
			"tools[0].parameters"},
		"NaN": {&responses.Request{Model: "m", Temperature: f(math.NaN())}, "temperature"},
	} {
		_, err := c.r.MarshalJSON()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: MarshalJSON error %v, want one naming %s", name, err, c.field)
		}
	}
}

// BenchmarkRequestMarshal writes the request the gateway sends a
// Responses upstream for the benchmarks' client, by its own MarshalJSON
// ("own") and by encoding/json's reflection ("reflect").
//
//	go test ./wire/responses -run '^$' -bench RequestMarshal -benchmem
func BenchmarkRequestMarshal(b *testing.B) {
	req, err := responses.DecodeRequest([]byte(`{"model":"resp-bench","stream":true,"store":false,"max_output_tokens":200,"instructions":"You are terse.","input":"Say hello in twenty words.","tools":[{"type":"function","name":"get_weather","description":"The weather of a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	out, _, err := responses.EncodeRequest(req, responses.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := out.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal((*plainRequest)(out)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
