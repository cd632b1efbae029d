package mistral_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

const streamDir = "testdata/stream"

func TestStreamFixtures(t *testing.T) {
	wiretest.RunStreamFixtures(t, streamDir, ".sse", 5, mistral.DecodeStream)
}

func TestStopReason(t *testing.T) {
	for raw, want := range map[string]chat.StopReason{
		"stop": chat.StopEndTurn, "length": chat.StopMaxTokens, "model_length": chat.StopMaxTokens,
		"tool_calls": chat.StopToolUse, "error": chat.StopError,
	} {
		if got := mistral.StopReason(raw); got != want {
			t.Errorf("%s: %s, want %s", raw, got, want)
		}
	}
}

// TestContentShapes: string content with escapes, null content, content
// chunks of every kind in one delta.
func TestContentShapes(t *testing.T) {
	in := `data: {"choices":[{"index":0,"delta":{"content":"a\"b\u00e9"}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":null}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"t1"},{"type":"image_url","image_url":"x"},{"type":"thinking","thinking":[{"type":"text","text":"r"},{"type":"reference","reference_ids":[2]}]},{"type":"text","text":""}]}}]}` + "\n\n" +
		`data: {"choices":[{"index":1,"delta":{"content":"other choice"}}]}` + "\n\n"
	got, err := wiretest.DecodeAll(mistral.DecodeStream, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range got {
		parts = append(parts, string(c.Type)+":"+c.Text)
	}
	if s := strings.Join(parts, " "); s != `text:a"bé text:t1 reasoning:r` {
		t.Errorf("got %q", s)
	}
}

// TestSpacedArrayContent: an array written with spaces ("content": [) is
// read too; content of another shape is an error.
func TestSpacedArrayContent(t *testing.T) {
	in := `data: {"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "spaced"}]}}]}` + "\n\n"
	got, err := wiretest.DecodeAll(mistral.DecodeStream, strings.NewReader(in))
	if err != nil || len(got) != 1 || got[0].Text != "spaced" {
		t.Fatalf("%+v %v", got, err)
	}
	in = `data: {"choices":[{"index":0,"delta":{"content":{"type":"text"}}}]}` + "\n\n"
	if _, err := wiretest.DecodeAll(mistral.DecodeStream, strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "event 1") {
		t.Fatalf("error %v", err)
	}
}

func FuzzDecodeStream(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(streamDir, "*.sse"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		chunks, err := wiretest.DecodeAll(mistral.DecodeStream, bytes.NewReader(in))
		started := map[int]bool{}
		ended := map[int]bool{}
		for i, c := range chunks {
			switch c.Type {
			case chat.ChunkToolCallStart:
				if started[c.Index] || c.Index != len(started) || c.ID == "" {
					t.Fatalf("chunk %d: start %+v after %d calls", i, c, len(started))
				}
				started[c.Index] = true
			case chat.ChunkToolCallDelta, chat.ChunkToolCallEnd:
				if !started[c.Index] || ended[c.Index] || c.Arguments == "" {
					t.Fatalf("chunk %d: %+v", i, c)
				}
				ended[c.Index] = c.Type == chat.ChunkToolCallEnd
			case chat.ChunkText:
				if c.Text == "" {
					t.Fatalf("chunk %d: empty text", i)
				}
			}
		}
		if err == nil {
			for i := range started {
				if !ended[i] {
					t.Fatalf("call %d never ended", i)
				}
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	path := filepath.Join(streamDir, "long_stream.sse")
	in, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var payloads [][]byte
	for ev, err := range sse.Read(bytes.NewReader(in), 0) {
		if err != nil {
			b.Fatal(err)
		}
		if string(ev.Data) != "[DONE]" {
			payloads = append(payloads, ev.Data)
		}
	}
	wiretest.BenchDecode(b, path, mistral.DecodeStream, payloads)
}
