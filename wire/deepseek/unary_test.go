package deepseek_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/deepseek"
)

// TestUnary: a request that is not streamed asks for no stream (and no
// stream_options, which the API refuses without one), and its answer, a
// chat.completion with reasoning_content, reads through the row.
func TestUnary(t *testing.T) {
	p := deepseek.Provider()
	for _, stream := range []bool{false, true} {
		body, _, _, err := p.Encode(chat.Request{Model: "deepseek-reasoner", Stream: stream, Messages: []chat.Message{{Role: "user", Content: chat.Str("hi")}}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(body)
		if got := strings.Contains(string(data), `"stream":true`) && strings.Contains(string(data), `"stream_options"`); got != stream {
			t.Errorf("Stream %v: %s", stream, data)
		}
	}
	u := p.Upstream.Unary
	if u == nil || u.Path("deepseek-reasoner") != "/chat/completions" {
		t.Fatal("no Unary, or another path")
	}
	r, err := u.Decode([]byte(`{"id":"930c60df","object":"chat.completion","model":"deepseek-reasoner","choices":[{"index":0,
	"message":{"role":"assistant","content":"9.11 < 9.8","reasoning_content":"Compare the tenths."},"logprobs":null,"finish_reason":"stop"}],
	"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":12,
	"completion_tokens_details":{"reasoning_tokens":20}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 2 || r.Content[0].Thinking != "Compare the tenths." || r.Content[1].Text != "9.11 < 9.8" ||
		r.Usage.Input != 12 || r.Usage.Reasoning != 20 || r.Stop.Reason != chat.StopEndTurn {
		t.Errorf("%+v", r)
	}
}
