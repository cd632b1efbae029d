package mistral_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// normal is r as JSON with its tool inputs compacted.
func normal(r chat.Response) string {
	for i := range r.Content {
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

// unaryCases are chat completion bodies in the shapes Mistral's API
// reference documents.
var unaryCases = []struct {
	name, body string
	want       chat.Response
}{{
	name: "docs_text",
	body: `{"id":"cmpl-e5cc70bb28c444948073e77776eb30ef","object":"chat.completion","model":"mistral-small-latest",
	"usage":{"prompt_tokens":16,"completion_tokens":34,"total_tokens":50},"created":1702256327,
	"choices":[{"index":0,"message":{"content":"Bonjour.","tool_calls":null,"prefix":false,"role":"assistant"},"finish_reason":"stop"}]}`,
	want: chat.Response{
		Content: []chat.Block{{Type: chat.TypeText, Text: "Bonjour."}},
		Usage:   chat.Usage{Input: 16, Output: 34},
		Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "stop"},
	},
}, {
	name: "docs_tool_call_object_arguments",
	body: `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"",
	"tool_calls":[{"id":"D681PevKs","type":"function","function":{"name":"retrieve_payment_status","arguments":{"transaction_id": "T1001"}}}]},
	"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":20,"total_tokens":140}}`,
	want: chat.Response{
		Content: []chat.Block{{Type: chat.TypeToolUse, ID: "D681PevKs", Name: "retrieve_payment_status", Input: json.RawMessage(`{"transaction_id":"T1001"}`)}},
		Usage:   chat.Usage{Input: 120, Output: 20},
		Stop:    chat.Stop{Reason: chat.StopToolUse, Raw: "tool_calls"},
	},
}, {
	name: "magistral_thinking",
	body: `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":[
	{"type":"thinking","thinking":[{"type":"text","text":"Two plus two."}]},{"type":"text","text":"4"}]},"finish_reason":"model_length"}]}`,
	want: chat.Response{
		Content: []chat.Block{{Type: chat.TypeThinking, Thinking: "Two plus two."}, {Type: chat.TypeText, Text: "4"}},
		Stop:    chat.Stop{Reason: chat.StopMaxTokens, Raw: "model_length"},
	},
}}

// asStream is the stream of one chunk that carries body's message as its
// delta.
func asStream(body string) string {
	return "data: " + strings.ReplaceAll(strings.ReplaceAll(body, `"message"`, `"delta"`), "\n", " ") + "\n\ndata: [DONE]\n\n"
}

func TestDecodeResponse(t *testing.T) {
	for _, c := range unaryCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := mistral.DecodeResponse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(c.want); g != w {
				t.Errorf("\n got %s\nwant %s", g, w)
			}
			streamed, err := chat.Collect(mistral.DecodeStream(strings.NewReader(asStream(c.body))))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(streamed); g != w {
				t.Errorf("the stream of the same answer:\n got %s\nwant %s", g, w)
			}
		})
	}
	r, err := mistral.DecodeResponse([]byte(`{"object":"error","message":"Service tier capacity exceeded","type":"service_tier_capacity_exceeded","code":"3505"}`))
	if err != nil || r.Error == nil || r.Error.Message != "Service tier capacity exceeded" {
		t.Errorf("an error body: %+v %v", r, err)
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{`[]`, "mistral response"},
		{`{"choices":[{"message":{"content":1}}]}`, "choices.message.content"},
		{`{"choices":[{"message":{"tool_calls":{}}}]}`, "choices.message.tool_calls"},
		{`{"choices":[` + strings.Repeat(`{"index":1},`, openai.MaxChoices) + `{}]}`, "more than 128"},
	}
	for _, c := range cases {
		_, err := mistral.DecodeResponse([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want one naming %q", c.body, err, c.want)
		}
	}
	if mistral.Provider().Upstream.Unary == nil {
		t.Error("no Unary in the row")
	}
}

func FuzzDecodeResponse(f *testing.F) {
	for _, c := range unaryCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := mistral.DecodeResponse(body)
		if err != nil {
			return
		}
		for i, b := range r.Content {
			if b.Type == chat.TypeToolUse && !json.Valid(b.Input) {
				t.Fatalf("content[%d]: input %q is not JSON", i, b.Input)
			}
		}
	})
}
