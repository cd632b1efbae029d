package responses_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// TestDecodeResponseMatchesStream: a Response object reads as the stream
// of the same answer collected. Each stream fixture is collected, written
// as the Response object ctxkit answers with, and read back.
func TestDecodeResponseMatchesStream(t *testing.T) {
	files, _ := filepath.Glob("testdata/stream/*.sse")
	if len(files) == 0 {
		t.Fatal("no stream fixtures")
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := chat.Collect(responses.DecodeStream(strings.NewReader(string(data))))
		if err != nil || want.Error != nil || want.Stop.Reason == "" {
			continue // a fixture of a failure: no Response object answers it
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := responses.EncodeResponse(want, &chat.Request{Model: "m"}, "m", "resp_1", 1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := responses.DecodeResponse(body)
			if err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			if !reflect.DeepEqual(got.Usage, want.Usage) || got.Stop.Reason != want.Stop.Reason || len(got.Content) != len(want.Content) {
				t.Fatalf("got %+v\nwant %+v\nbody %s", got, want, body)
			}
			for i := range got.Content {
				g, w := got.Content[i], want.Content[i]
				if g.Type != w.Type || g.Text != w.Text || g.Thinking != w.Thinking || g.Signature != w.Signature || g.ID != w.ID || g.Name != w.Name || string(g.Input) != string(w.Input) {
					t.Fatalf("block %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
	if n < 4 {
		t.Fatalf("only %d fixtures of complete answers", n)
	}
}

func TestDecodeResponseStatus(t *testing.T) {
	res, err := responses.DecodeResponse([]byte(`{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
		"output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hel"}]}],
		"usage":{"input_tokens":5,"output_tokens":3}}`))
	if err != nil || res.Stop.Reason != chat.StopMaxTokens || len(res.Content) != 1 || res.Content[0].Text != "Hel" || res.Usage.Output != 3 {
		t.Fatalf("incomplete: %+v %v", res, err)
	}
	res, err = responses.DecodeResponse([]byte(`{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`))
	if err != nil || res.Error == nil || !strings.Contains(res.Error.Message, "boom") {
		t.Fatalf("failed: %+v %v", res, err)
	}
	res, err = responses.DecodeResponse([]byte(`{"object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}],"usage":{"input_tokens":1,"output_tokens":1}}`))
	if err != nil || res.Stop.Reason != chat.StopToolUse || len(res.Content) != 1 || res.Content[0].ID != "call_1" || string(res.Content[0].Input) != `{"a":1}` {
		t.Fatalf("call: %+v %v", res, err)
	}
	for _, bad := range []string{`[`, `{"output":{}}`, `{"output":[{"type":"function_call","arguments":1}]}`} {
		if _, err := responses.DecodeResponse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "responses response") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"x"}]}]}`))
	f.Add([]byte(`{"status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}`))
	f.Add([]byte(`{"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"e"},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := responses.DecodeResponse(body)
		if err != nil {
			return
		}
		if len(res.Content) > chat.MaxCollectedBlocks {
			t.Fatalf("%d blocks", len(res.Content))
		}
	})
}
