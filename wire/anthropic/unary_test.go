package anthropic_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
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

// TestDecodeResponseMatchesStream: each Message body of
// testdata/response reads as the collected stream of the same name.
func TestDecodeResponseMatchesStream(t *testing.T) {
	files, err := filepath.Glob("testdata/response/*.json")
	if err != nil || len(files) < 3 {
		t.Fatalf("response fixtures: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(streamDir, name+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := chat.Collect(anthropic.DecodeStream(bytes.NewReader(in)))
			if err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := anthropic.DecodeResponse(body)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(want); g != w {
				t.Errorf("\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestDecodeResponse: Message bodies in the shapes the API reference
// documents.
func TestDecodeResponse(t *testing.T) {
	cases := []struct {
		name, body string
		want       chat.Response
	}{{
		name: "docs_text",
		body: `{"content":[{"text":"Hi! My name is Claude.","type":"text"}],"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","model":"claude-sonnet-4-5",
		"role":"assistant","stop_reason":"end_turn","stop_sequence":null,"type":"message","usage":{"input_tokens":2095,"output_tokens":503}}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "Hi! My name is Claude."}},
			Usage:   chat.Usage{Input: 2095, Output: 503},
			Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "end_turn"},
		},
	}, {
		name: "docs_tool_use",
		body: `{"id":"msg_01Aq9w938a90dw8q","model":"claude-sonnet-4-5","stop_reason":"tool_use","role":"assistant","type":"message",
		"content":[{"type":"text","text":"I'll check the weather."},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather",
		"input":{"location": "San Francisco, CA", "unit": "celsius"}}],
		"usage":{"input_tokens":400,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":50}}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "I'll check the weather."},
				{Type: chat.TypeToolUse, ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Input: json.RawMessage(`{"location":"San Francisco, CA","unit":"celsius"}`)}},
			Usage: chat.Usage{Input: 2500, Output: 50, CacheRead: 2000, CacheWrite: 100},
			Stop:  chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"},
		},
	}, {
		name: "server_tool_skipped",
		body: `{"type":"message","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}},
		{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"Found it."}],"stop_reason":"end_turn"}`,
		want: chat.Response{
			Content: []chat.Block{{Type: chat.TypeText, Text: "Found it."}},
			Stop:    chat.Stop{Reason: chat.StopEndTurn, Raw: "end_turn"},
		},
	}, {
		name: "refusal",
		body: `{"type":"message","content":[],"stop_reason":"refusal","usage":{"input_tokens":3,"output_tokens":0}}`,
		want: chat.Response{
			Usage: chat.Usage{Input: 3},
			Stop:  chat.Stop{Reason: chat.StopContentFilter, Raw: "refusal"},
		},
	}, {
		name: "error_body",
		body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		want: chat.Response{Error: &chat.StreamError{Type: "overloaded_error", Message: "Overloaded", Retryable: true}, Stop: chat.Stop{Reason: chat.StopError}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := anthropic.DecodeResponse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normal(got), normal(c.want); g != w {
				t.Errorf("\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	many := `{"content":[` + strings.Repeat(`{"type":"text","text":"a"},`, chat.MaxCollectedBlocks) + `{"type":"text"}]}`
	tools := `{"content":[` + strings.Repeat(`{"type":"tool_use","id":"t","name":"f"},`, anthropic.MaxToolCalls) + `{"type":"tool_use"}]}`
	cases := []struct{ body, want string }{
		{`[]`, "anthropic response"},
		{`{"content":{}}`, "content: a JSON object"},
		{`{"content":[{"type":"text","text":1}]}`, "content.text"},
		{`{"usage":{"input_tokens":"x"}}`, "usage.input_tokens"},
		{`{"stop_reason":5}`, "stop_reason"},
		{many, "more than 10000"},
		{tools, "tool calls"},
	}
	for _, c := range cases {
		_, err := anthropic.DecodeResponse([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want one naming %q", c.body, err, c.want)
		}
	}
}

func TestUnaryRow(t *testing.T) {
	u := anthropic.Provider().Upstream.Unary
	if u == nil {
		t.Fatal("no Unary")
	}
	if p := u.Path("claude-x"); p != "/v1/messages" {
		t.Errorf("path %q", p)
	}
	h := http.Header{}
	u.SetHeader(h, "k")
	if h.Get("x-api-key") != "k" || h.Get("anthropic-version") == "" || h.Get("Accept") != "application/json" {
		t.Errorf("headers %v", h)
	}
	body, _, _, err := anthropic.Provider().Encode(chat.Request{Model: "m", MaxTokens: 10, Messages: []chat.Message{{Role: "user", Content: chat.Str("hi")}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(body)
	if strings.Contains(string(data), `"stream"`) {
		t.Errorf("a request with Stream false: %s", data)
	}
}

func FuzzDecodeResponse(f *testing.F) {
	files, _ := filepath.Glob("testdata/response/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"error","error":{"type":"api_error","message":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := anthropic.DecodeResponse(body)
		if err != nil {
			return
		}
		out, err := anthropic.EncodeResponse(r, "m", "id")
		if err != nil {
			return // an error response, or input that is not JSON
		}
		again, err := anthropic.DecodeResponse(out)
		if err != nil {
			t.Fatalf("DecodeResponse of EncodeResponse's %s: %v", out, err)
		}
		// The API's stop reasons that have no canonical one come back as
		// their canonical reason.
		again.Stop.Raw, r.Stop.Raw = "", ""
		if g, w := normal(again), normal(r); g != w {
			t.Fatalf("\n got %s\nwant %s", g, w)
		}
	})
}
