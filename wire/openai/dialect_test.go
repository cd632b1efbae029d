package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// streamLines runs a client's request body and an upstream's stream
// fixture through the dialect's row as the gateway does, and returns the
// data lines written.
func streamLines(t *testing.T, body, fixture string) []string {
	t.Helper()
	d := openai.Dialect()
	req, err := d.Decode([]byte(body), wire.Incoming{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	out := wire.Outgoing{Request: &req, Model: "gpt-x", ID: "chatcmpl-1", Created: 1}
	if err := d.Stream(&buf, out, openai.DecodeStream(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			lines = append(lines, d)
		}
	}
	if len(lines) == 0 || lines[len(lines)-1] != "[DONE]" {
		t.Fatalf("the stream does not end with [DONE]:\n%s", buf.String())
	}
	return lines[:len(lines)-1]
}

type streamChunk struct {
	Choices []json.RawMessage `json:"choices"`
	Usage   *json.RawMessage  `json:"usage"` // nil: no usage key, or null
}

func parseChunk(t *testing.T, line string) (streamChunk, map[string]json.RawMessage) {
	t.Helper()
	var c streamChunk
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &c); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	_ = json.Unmarshal([]byte(line), &keys)
	return c, keys
}

// TestDialectStreamUsageOnlyWhenAsked: like the API, the dialect writes
// the final usage chunk ("choices": []) only for a client that asked with
// stream_options.include_usage, and then every other chunk carries
// "usage": null; a client that did not ask gets one choice in every chunk
// (it may read choices[0]) and no usage key.
func TestDialectStreamUsageOnlyWhenAsked(t *testing.T) {
	const fixture = "testdata/stream/text_usage.sse"
	for _, body := range []string{
		`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-x","stream":true,"stream_options":null,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-x","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-x","stream":true,"stream_options":{"include_obfuscation":true},"messages":[{"role":"user","content":"hi"}]}`,
	} {
		for _, line := range streamLines(t, body, fixture) {
			c, keys := parseChunk(t, line)
			if len(c.Choices) != 1 {
				t.Fatalf("%s\na chunk with %d choices: %s", body, len(c.Choices), line)
			}
			if _, ok := keys["usage"]; ok {
				t.Fatalf("%s\na usage key the client did not ask for: %s", body, line)
			}
		}
	}

	body := `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	lines := streamLines(t, body, fixture)
	for _, line := range lines[:len(lines)-1] {
		c, keys := parseChunk(t, line)
		if len(c.Choices) != 1 || string(keys["usage"]) != "null" {
			t.Fatalf("a chunk before the usage chunk: %s", line)
		}
	}
	last, _ := parseChunk(t, lines[len(lines)-1])
	if last.Choices == nil || len(last.Choices) != 0 || last.Usage == nil {
		t.Fatalf("the last chunk is not the usage chunk: %s", lines[len(lines)-1])
	}
	var u struct {
		Prompt     int64 `json:"prompt_tokens"`
		Completion int64 `json:"completion_tokens"`
		Details    struct {
			Cached int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	if err := json.Unmarshal(*last.Usage, &u); err != nil || u.Prompt == 0 || u.Completion == 0 {
		t.Fatalf("usage %s (%v)", *last.Usage, err)
	}
	// What the client reads back is the upstream's usage.
	data, _ := os.ReadFile(fixture)
	want, err := chat.Collect(openai.DecodeStream(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	if u.Prompt != want.Usage.Input || u.Completion != want.Usage.Output || u.Details.Cached != want.Usage.CacheRead {
		t.Fatalf("usage %+v, upstream's %+v", u, want.Usage)
	}
}

// TestDecodeStreamOptions: stream_options is read strictly, and a bad
// value names its field.
func TestDecodeStreamOptions(t *testing.T) {
	for _, c := range []struct {
		body  string
		usage bool
		path  string
	}{
		{`{"stream_options":{"include_usage":true}}`, true, ""},
		{`{"stream_options":{"include_usage":null}}`, false, ""},
		{`{"stream_options":{}}`, false, ""},
		{`{"stream_options":{"include_usage":"yes"}}`, false, "stream_options.include_usage"},
		{`{"stream_options":[true]}`, false, "stream_options"},
		{`{"stream_options":{"include_usage":true,"include_usage":false}}`, false, "stream_options"},
	} {
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],` + c.body[1:]
		req, err := openai.DecodeRequest([]byte(body))
		if c.path != "" {
			var ce *chat.Error
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.Path, c.path) {
				t.Errorf("%s: error %v, want one at %s", c.body, err, c.path)
			}
			continue
		}
		if err != nil || req.StreamUsage != c.usage {
			t.Errorf("%s: StreamUsage %v (%v), want %v", c.body, req.StreamUsage, err, c.usage)
		}
	}
}
