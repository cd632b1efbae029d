package bedrock_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/bedrock"
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

// TestDecodeResponse: Converse bodies in the shapes the API reference
// documents, each against the ConverseStream of the same answer.
func TestDecodeResponse(t *testing.T) {
	cases := []struct {
		name, body string
		stream     []frame
		want       chat.Response
	}{{
		name: "docs_text",
		body: `{"output":{"message":{"role":"assistant","content":[{"text":"The build fails because go.sum is out of date."}]}},
		"stopReason":"end_turn","usage":{"inputTokens":25,"outputTokens":11,"totalTokens":36},"metrics":{"latencyMs":1175}}`,
		stream: textFrames,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "The build fails because go.sum is out of date."}},
			Usage:   chat.Usage{Input: 25, Output: 11},
			Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "end_turn"},
		},
	}, {
		name: "docs_tool_use",
		body: `{"output":{"message":{"role":"assistant","content":[{"text":"Let me look."},
		{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"top_song","input":{"sign": "WZPZ"}}}]}},
		"stopReason":"tool_use","usage":{"inputTokens":375,"outputTokens":60,"totalTokens":635,"cacheReadInputTokens":200}}`,
		stream: []frame{
			ev("messageStart", start),
			textDelta(0, "Let me look."),
			blockStop(0),
			ev("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"top_song"}}}`),
			toolDelta(1, `{"sign":"WZPZ"}`),
			blockStop(1),
			messageStop("tool_use"),
			metadata(375, 60, 200, 0),
		},
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "Let me look."},
				{Type: chat.TypeToolUse, ID: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", Name: "top_song", Input: json.RawMessage(`{"sign":"WZPZ"}`)}},
			Usage: chat.Usage{Input: 575, Output: 60, CacheRead: 200},
			Stop:  chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"},
		},
	}, {
		name: "reasoning",
		body: `{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"2+2","signature":"sig"}}},
		{"reasoningContent":{"redactedContent":"cmVkYWN0ZWQ="}},{"citationsContent":{"content":[{"text":"x"}]}},{"text":"4"}]}},"stopReason":"max_tokens"}`,
		stream: []frame{
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"2+2"}}}`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig"}}}`),
			blockStop(0),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"redactedContent":"cmVkYWN0ZWQ="}}}`),
			blockStop(1),
			textDelta(3, "4"),
			blockStop(3),
			messageStop("max_tokens"),
		},
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeThinking, Thinking: "2+2", Signature: "sig"}, {Type: chat.TypeRedactedThinking, Data: "cmVkYWN0ZWQ="}, {Type: chat.TypeText, Text: "4"}},
			Stop:    chat.Stop{Reason: chat.StopMaxTokens, Raw: "max_tokens"},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := bedrock.DecodeResponse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(c.want); g != w {
				t.Errorf("\n got %s\nwant %s", g, w)
			}
			var buf bytes.Buffer
			for _, f := range c.stream {
				encodeFrame(t, &buf, f)
			}
			streamed, err := chat.Collect(bedrock.DecodeStream(&buf))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(streamed); g != w {
				t.Errorf("the stream of the same answer:\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	calls := `{"output":{"message":{"content":[` + strings.Repeat(`{"toolUse":{"toolUseId":"t","name":"f","input":{}}},`, bedrock.MaxToolCalls) + `{"toolUse":{}}]}}}`
	big := `{"output":{"message":{"content":[{"toolUse":{"toolUseId":"t","name":"f","input":{"a":"` + strings.Repeat("x", bedrock.MaxArguments) + `"}}}]}}}`
	cases := []struct{ body, want string }{
		{`[]`, "bedrock response"},
		{`{"output":{"message":{"content":{}}}}`, "output.message.content"},
		{`{"output":{"message":{"content":[{"text":1}]}}}`, "output.message.content.text"},
		{`{"usage":{"inputTokens":"x"}}`, "usage.inputTokens"},
		{`{"stopReason":1}`, "stopReason"},
		{calls, "more than 1000 tool calls"},
		{big, "input larger than"},
	}
	for _, c := range cases {
		_, err := bedrock.DecodeResponse([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want one naming %q", c.body, err, c.want)
		}
	}
}

func TestUnaryRow(t *testing.T) {
	u := bedrock.Provider().Upstream.Unary
	if u == nil {
		t.Fatal("no Unary")
	}
	if p := u.Path("anthropic.claude-3/x"); p != "/model/anthropic.claude-3%2Fx/converse" {
		t.Errorf("path %q", p)
	}
	h := http.Header{}
	u.SetHeader(h, "k")
	if h.Get("Authorization") != "Bearer k" || h.Get("Accept") != "application/json" {
		t.Errorf("headers %v", h)
	}
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"a"},{"toolUse":{"toolUseId":"t","name":"f","input":{"x":1}}},
	{"reasoningContent":{"reasoningText":{"text":"r","signature":"s"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":1,"outputTokens":2}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := bedrock.DecodeResponse(body)
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
