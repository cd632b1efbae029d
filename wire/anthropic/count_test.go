package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

var count = anthropic.Provider().Upstream.CountTokens

// TestCountBody: the count is sent the request as the row encodes it,
// without the fields count_tokens refuses; those the client gave are
// warned of (max_tokens, which the encoder always adds, is not).
func TestCountBody(t *testing.T) {
	req, err := chat.DecodeRequest([]byte(`{"model":"claude-x","temperature":0.2,"stop_sequences":["x"],"system":"s","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}}`))
	if err != nil {
		t.Fatal(err)
	}
	enc, _, _, err := anthropic.Provider().Encode(req, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(enc)
	body, warns, err := count.Body(data)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(body, &m)
	for _, k := range []string{"max_tokens", "temperature", "stop_sequences"} {
		if _, ok := m[k]; ok {
			t.Fatalf("%s sent: %s", k, body)
		}
	}
	for _, k := range []string{"model", "system", "messages", "tools", "tool_choice"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("%s not sent: %s", k, body)
		}
	}
	if len(warns) != 2 || warns[0].Path != "temperature" || warns[1].Path != "stop_sequences" {
		t.Fatalf("warnings %v", warns)
	}
	if count.Path("claude-x") != "/v1/messages/count_tokens" {
		t.Fatal(count.Path("claude-x"))
	}
}

func TestDecodeCount(t *testing.T) {
	if n, err := count.Decode([]byte(`{"input_tokens":1234}`)); err != nil || n != 1234 {
		t.Fatalf("%d %v", n, err)
	}
	for _, body := range []string{`{}`, `{"input_tokens":-1}`, `{"input_tokens":"3"}`, `{"input_tokens":1e300}`, `[`} {
		if _, err := count.Decode([]byte(body)); err == nil {
			t.Errorf("%s: read", body)
		}
	}
}

func FuzzDecodeCount(f *testing.F) {
	f.Add([]byte(`{"input_tokens":42}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if n, err := count.Decode(body); err == nil && n < 0 {
			t.Fatalf("%d", n)
		}
	})
}
