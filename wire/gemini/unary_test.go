package gemini_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/gemini"
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

// unaryCases are generateContent bodies in the shapes the API reference
// documents.
var unaryCases = []struct {
	name, body string
	want       chat.Response
}{{
	name: "docs_text",
	body: `{"candidates":[{"content":{"parts":[{"text":"A robot named Unit 7 found a seed."}],"role":"model"},"finishReason":"STOP","index":0,
	"safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"NEGLIGIBLE"}]}],
	"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":10,"totalTokenCount":18},"modelVersion":"gemini-2.0-flash"}`,
	want: chat.Response{
		Content: []chat.Block{{Type: chat.TypeText, Text: "A robot named Unit 7 found a seed."}},
		Usage:   chat.Usage{Input: 8, Output: 10},
		Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "STOP"},
	},
}, {
	name: "docs_function_call",
	body: `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"set_light_values","args":{"brightness":25,"color_temp":"warm"}},
	"thoughtSignature":"c2lnbmF0dXJl"}]},"finishReason":"STOP"}],
	"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":20,"thoughtsTokenCount":50,"cachedContentTokenCount":64}}`,
	want: chat.Response{
		Content: []chat.Block{
			{Type: chat.TypeThinking, Signature: "c2lnbmF0dXJl"},
			{Type: chat.TypeToolUse, ID: "call_0_f7a23aa8", Name: "set_light_values", Input: json.RawMessage(`{"brightness":25,"color_temp":"warm"}`)},
		},
		Usage: chat.Usage{Input: 100, Output: 70, CacheRead: 64, Reasoning: 50},
		Stop:  chat.Stop{Reason: chat.StopToolUse, Raw: "STOP"},
	},
}, {
	name: "blocked_prompt",
	body: `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":4}}`,
	want: chat.Response{
		Usage: chat.Usage{Input: 4},
		Stop:  chat.Stop{Reason: chat.StopContentFilter, Raw: "SAFETY"},
	},
}, {
	name: "thought_and_text",
	body: `{"candidates":[{"content":{"parts":[{"text":"Let me think.","thought":true},{"text":"42"}]},"finishReason":"MAX_TOKENS"}]}`,
	want: chat.Response{
		Content: []chat.Block{{Type: chat.TypeThinking, Thinking: "Let me think."}, {Type: chat.TypeText, Text: "42"}},
		Stop:    chat.Stop{Reason: chat.StopMaxTokens, Raw: "MAX_TOKENS"},
	},
}}

func TestDecodeResponse(t *testing.T) {
	for _, c := range unaryCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := gemini.DecodeResponse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			// The body reads as a stream of one chunk reads.
			want, err := chat.Collect(gemini.DecodeStream(strings.NewReader("data: " + strings.ReplaceAll(c.body, "\n", " ") + "\n\n")))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(want); g != w {
				t.Errorf("stream of one chunk:\n got %s\nwant %s", g, w)
			}
			if g, w := normal(got), normal(c.want); g != w {
				t.Errorf("\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	calls := `{"candidates":[{"content":{"parts":[` + strings.Repeat(`{"functionCall":{"name":"f"}},`, gemini.MaxToolCalls) + `{"functionCall":{"name":"f"}}]}}]}`
	cases := []struct{ body, want string }{
		{`[]`, "gemini response"},
		{`{"candidates":{}}`, "candidates"},
		{`{"candidates":[{"content":{"parts":[{"text":1}]}}]}`, "candidates.content.parts.text"},
		{`{"usageMetadata":{"promptTokenCount":"x"}}`, "usageMetadata.promptTokenCount"},
		{`{"candidates":[{},{},{},{},{},{},{},{},{}]}`, "more than 8"},
		{calls, "function calls"},
	}
	for _, c := range cases {
		_, err := gemini.DecodeResponse([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want one naming %q", c.body, err, c.want)
		}
	}
	// An error object in a 200 body is the response's error.
	r, err := gemini.DecodeResponse([]byte(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`))
	if err != nil || r.Error == nil || r.Error.Type != "UNAVAILABLE" || !r.Error.Retryable {
		t.Errorf("%+v %v", r, err)
	}
}

func TestUnaryRow(t *testing.T) {
	u := gemini.Provider().Upstream.Unary
	if u == nil {
		t.Fatal("no Unary")
	}
	if p := u.Path("gemini-2.5-flash"); p != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("path %q", p)
	}
	h := http.Header{}
	u.SetHeader(h, "k")
	if h.Get("x-goog-api-key") != "k" || h.Get("Accept") != "application/json" {
		t.Errorf("headers %v", h)
	}
}

func FuzzDecodeResponse(f *testing.F) {
	for _, c := range unaryCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := gemini.DecodeResponse(body)
		if err != nil || got.Stop.Reason == "" || bytes.ContainsAny(body, "\r\n") || !json.Valid(body) {
			return
		}
		// A body with a stop reads as the stream of that one chunk.
		want, err := chat.Collect(gemini.DecodeStream(bytes.NewReader(append(append([]byte("data: "), body...), "\n\n"...))))
		if err != nil {
			t.Fatalf("the stream of the chunk: %v", err)
		}
		if g, w := normal(got), normal(want); g != w {
			t.Fatalf("\n got %s\nwant %s", g, w)
		}
	})
}
