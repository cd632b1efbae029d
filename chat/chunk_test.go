package chat_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

type closer struct {
	io.Reader
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

func chunks(cs ...chat.Chunk) func(yield func(chat.Chunk) bool) error {
	return func(yield func(chat.Chunk) bool) error {
		for _, c := range cs {
			if !yield(c) {
				return nil
			}
		}
		return nil
	}
}

// TestCollectKeepsTheLastUsage: usage chunks are running totals; the
// response's usage is the last one, never their sum.
func TestCollectKeepsTheLastUsage(t *testing.T) {
	body := &closer{Reader: strings.NewReader("")}
	r, err := chat.Collect(chat.Stream(body, chunks(
		chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 100, CacheRead: 80, Output: 1}},
		chat.Chunk{Type: chat.ChunkReasoning, Text: "let me "},
		chat.Chunk{Type: chat.ChunkReasoning, Text: "think"},
		chat.Chunk{Type: chat.ChunkReasoning, Signature: "sig"},
		chat.Chunk{Type: chat.ChunkText, Text: "Hello"},
		chat.Chunk{Type: chat.ChunkText, Text: ", world"},
		chat.Chunk{Type: chat.ChunkToolCallStart, Index: 0, ID: "c1", Name: "f"},
		chat.Chunk{Type: chat.ChunkToolCallStart, Index: 1, ID: "c2", Name: "g"},
		chat.Chunk{Type: chat.ChunkToolCallDelta, Index: 1, Arguments: `{"b":`},
		chat.Chunk{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"a":1}`},
		chat.Chunk{Type: chat.ChunkToolCallDelta, Index: 1, Arguments: `2}`},
		chat.Chunk{Type: chat.ChunkToolCallEnd, Index: 0},
		chat.Chunk{Type: chat.ChunkToolCallEnd, Index: 1, Arguments: `{"b":2}`},
		chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 100, CacheRead: 80, Output: 40, Reasoning: 12}},
		chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse, Raw: "tool_calls"}},
	)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage.Output != 40 || r.Usage.Input != 100 || r.Usage.Reasoning != 12 {
		t.Fatalf("usage %+v: the last running total, not a sum", r.Usage)
	}
	if len(r.Content) != 4 || r.Content[0].Thinking != "let me think" || r.Content[0].Signature != "sig" ||
		r.Content[1].Text != "Hello, world" || string(r.Content[2].Input) != `{"a":1}` || string(r.Content[3].Input) != `{"b":2}` {
		t.Fatalf("content %+v", r.Content)
	}
	if r.Stop.Reason != chat.StopToolUse || !body.closed {
		t.Fatalf("stop %+v, closed %v", r.Stop, body.closed)
	}
}

// TestStreamClosesOnBreak: leaving the loop early closes the body, and a
// decode error is the last item.
func TestStreamClosesOnBreak(t *testing.T) {
	body := &closer{Reader: strings.NewReader("")}
	for range chat.Stream(body, chunks(chat.Chunk{Type: chat.ChunkText}, chat.Chunk{Type: chat.ChunkText})) {
		break
	}
	if !body.closed {
		t.Fatal("breaking out did not close the body")
	}
	boom := errors.New("boom")
	var last error
	for _, err := range chat.Stream(strings.NewReader(""), func(yield func(chat.Chunk) bool) error {
		yield(chat.Chunk{Type: chat.ChunkText})
		return boom
	}) {
		last = err
	}
	if last != boom {
		t.Fatalf("last item %v", last)
	}
	r, err := chat.Collect(chat.Stream(strings.NewReader(""), chunks(chat.Chunk{Type: chat.ChunkError, Error: &chat.StreamError{Type: "overloaded_error", Message: "Overloaded", Retryable: true}})))
	if err != nil || r.Error == nil || r.Stop.Reason != chat.StopError {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestCollectKeepsBrokenArguments: arguments that are not a JSON object (a
// stream cut inside them) are kept as {"_raw": ...}, never dropped or
// passed on as invalid JSON.
func TestCollectKeepsBrokenArguments(t *testing.T) {
	r, err := chat.Collect(chat.Stream(strings.NewReader(""), chunks(
		chat.Chunk{Type: chat.ChunkToolCallStart, Index: 0, ID: "c", Name: "f"},
		chat.Chunk{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"path": "a`},
	)))
	if err != nil || string(r.Content[0].Input) != `{"_raw":"{\"path\": \"a"}` {
		t.Fatalf("%v %s", err, r.Content[0].Input)
	}
}

// BenchmarkCollectLongText: putting a long response together costs time
// in proportion to its length (128k small text chunks).
func BenchmarkCollectLongText(b *testing.B) {
	cs := make([]chat.Chunk, 128<<10)
	for i := range cs {
		cs[i] = chat.Chunk{Type: chat.ChunkText, Text: "abcd"}
	}
	for b.Loop() {
		r, _ := chat.Collect(chat.Stream(strings.NewReader(""), chunks(cs...)))
		if len(r.Content[0].Text) != 4*len(cs) {
			b.Fatal("lost text")
		}
	}
}
