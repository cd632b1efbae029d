package openai_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// TestDecodeResponseMatchesStream: the non-streamed body of an answer
// (testdata/responses.json, written by EncodeResponse from the stream
// fixture of the same name) reads as the collected stream reads.
func TestDecodeResponseMatchesStream(t *testing.T) {
	data, err := os.ReadFile("testdata/responses.json")
	if err != nil {
		t.Fatal(err)
	}
	var bodies map[string]json.RawMessage
	if err := json.Unmarshal(data, &bodies); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(bodies)) {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(streamDir, name+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := chat.Collect(openai.DecodeStream(f))
			if err != nil {
				t.Fatal(err)
			}
			got, err := openai.DecodeResponse(bodies[name])
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(want); g != w {
				t.Errorf("\n got %s\nwant %s", g, w)
			}
		})
	}
}

// normal is r as JSON with its tool inputs compacted (EncodeResponse
// compacts them) and its cost by value.
func normal(r chat.Response) string {
	for i := range r.Content {
		// The unary response keeps its reasoning details as they came
		// on their blocks (a stream has them on its chunks).
		delete(r.Content[i].Extra, "reasoning_details")
		if len(r.Content[i].Extra) == 0 {
			r.Content[i].Extra = nil
		}
		if in := r.Content[i].Input; len(in) > 0 {
			var b bytes.Buffer
			if json.Compact(&b, in) == nil {
				r.Content[i].Input = b.Bytes()
			}
		}
	}
	out, err := json.Marshal(r)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// TestDecodeResponse: bodies as the API reference documents them, and
// the compatible servers' variants.
func TestDecodeResponse(t *testing.T) {
	cost := 0.0021
	cases := []struct {
		name, body string
		want       chat.Response
	}{{
		name: "docs_text",
		body: `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I assist you today?","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],
		"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
		"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
		"service_tier":"default"}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "Hello! How can I assist you today?"}},
			Usage:   chat.Usage{Input: 19, Output: 10},
			Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "stop"},
		},
	}, {
		name: "docs_tool_call",
		body: `{"id":"chatcmpl-abc123","object":"chat.completion","created":1699896916,"model":"gpt-4o-mini",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc123","type":"function",
		"function":{"name":"get_current_weather","arguments":"{\n\"location\": \"Boston, MA\"\n}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"completion_tokens_details":{"reasoning_tokens":0}}}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeToolUse, ID: "call_abc123", Name: "get_current_weather", Input: json.RawMessage("{\n\"location\": \"Boston, MA\"\n}")}},
			Usage:   chat.Usage{Input: 82, Output: 17},
			Stop:    chat.Stop{Reason: chat.StopToolUse, Raw: "tool_calls"},
		},
	}, {
		name: "refusal",
		body: `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "I can't help with that."}},
			Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "stop"},
		},
	}, {
		name: "think_tags",
		body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"<think>step 1</think>The answer is 4."},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":5,"completion_tokens":9,"cost":0.0021}}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeThinking, Thinking: "step 1"}, {Type: chat.TypeText, Text: "The answer is 4."}},
			Usage:   chat.Usage{Input: 5, Output: 9, Cost: &cost},
			Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "stop"},
		},
	}, {
		name: "second_choice_ignored",
		body: `{"choices":[{"index":1,"message":{"content":"B"},"finish_reason":"stop"},{"index":0,"message":{"content":"A"},"finish_reason":"length"}]}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "A"}},
			Stop:    chat.Stop{Reason: chat.StopMaxTokens, Raw: "length"},
		},
	}, {
		name: "error_in_200",
		body: `{"error":{"message":"Provider returned error","code":502}}`,
		want: chat.Response{Error: &chat.StreamError{Type: "502", Message: "Provider returned error", Retryable: true}, Stop: chat.Stop{Reason: chat.StopError}},
	}, {
		name: "no_arguments",
		body: `{"choices":[{"index":0,"message":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeToolUse, ID: "c1", Name: "now", Input: json.RawMessage("{}")}},
			Stop:    chat.Stop{Reason: chat.StopToolUse, Raw: "tool_calls"},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := openai.DecodeResponse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	many := `{"choices":[` + strings.Repeat(`{"index":1},`, openai.MaxChoices) + `{"index":0}]}`
	cases := []struct{ body, want string }{
		{`[]`, "openai response"},
		{`{"choices":{}}`, "choices: a JSON object where ctxkit reads a array"},
		{`{"choices":[{"message":{"content":["a"]}}]}`, "choices.message.content"},
		{`{"choices":[{"message":{"tool_calls":[{"function":{"name":1}}]}}]}`, "choices.message.tool_calls.function.name"},
		{`{"usage":{"prompt_tokens":"x"}}`, "usage.prompt_tokens"},
		{many, "more than 128"},
		{`{"choices":[{"message":{"content":"a"}}]} x`, "openai response"},
	}
	for _, c := range cases {
		_, err := openai.DecodeResponse([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want one naming %q", c.body, err, c.want)
		}
	}
}

func TestUnaryRow(t *testing.T) {
	u := openai.Provider().Upstream.Unary
	if u == nil {
		t.Fatal("no Unary")
	}
	if p := u.Path("gpt-4.1"); p != "/chat/completions" {
		t.Errorf("path %q", p)
	}
	h := http.Header{}
	u.SetHeader(h, "sk-test")
	if h.Get("Authorization") != "Bearer sk-test" || h.Get("Accept") != "application/json" {
		t.Errorf("headers %v", h)
	}
	// A request that is not streamed asks for no stream.
	body, _, _, err := openai.Provider().Encode(chat.Request{Model: "m", Messages: []chat.Message{{Role: "user", Content: chat.Str("hi")}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(body)
	if strings.Contains(string(data), `"stream`) {
		t.Errorf("a request with Stream false: %s", data)
	}
}

func FuzzDecodeResponse(f *testing.F) {
	data, err := os.ReadFile("testdata/responses.json")
	if err != nil {
		f.Fatal(err)
	}
	var bodies map[string]json.RawMessage
	if err := json.Unmarshal(data, &bodies); err != nil {
		f.Fatal(err)
	}
	for _, b := range bodies {
		f.Add([]byte(b))
	}
	f.Add([]byte(`{"choices":[{"index":0,"message":{"content":"<think>a</think>b","tool_calls":[{"index":3,"id":"x","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := openai.DecodeResponse(body)
		if err != nil {
			return
		}
		// What is read encodes, and the encoded body reads the same.
		out, err := openai.EncodeResponse(r, "m", "id", 1)
		if err != nil {
			return // tool arguments that are not JSON: EncodeResponse refuses them
		}
		again, err := openai.DecodeResponse(out)
		if err != nil {
			t.Fatalf("DecodeResponse of EncodeResponse's %s: %v", out, err)
		}
		if len(again.Content) != len(r.Content) {
			t.Fatalf("%d blocks, then %d\n%s", len(r.Content), len(again.Content), out)
		}
	})
}
