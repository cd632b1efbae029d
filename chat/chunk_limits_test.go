package chat_test

import (
	"errors"
	"iter"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// generated is a chunk stream of n chunks made by mk, built as it is read.
func generated(n int, mk func(i int) chat.Chunk) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for i := range n {
			if !yield(mk(i), nil) {
				return
			}
		}
	}
}

// TestCollectBlockBound: every chunk that starts a block counts against
// MaxCollectedBlocks; one block more is refused with ErrTooManyBlocks (and
// what came before), a stream at the bound is collected whole.
func TestCollectBlockBound(t *testing.T) {
	kinds := map[string]func(i int) chat.Chunk{
		"redacted reasoning": func(int) chat.Chunk {
			return chat.Chunk{Type: chat.ChunkReasoning, Redacted: "x"}
		},
		"tool call starts": func(i int) chat.Chunk {
			return chat.Chunk{Type: chat.ChunkToolCallStart, Index: i, ID: "c", Name: "f"}
		},
		"signed reasoning": func(int) chat.Chunk {
			return chat.Chunk{Type: chat.ChunkReasoning, Text: "x", Signature: "s"}
		},
		"text after reasoning": func(i int) chat.Chunk {
			if i%2 == 0 {
				return chat.Chunk{Type: chat.ChunkText, Text: "x"}
			}
			return chat.Chunk{Type: chat.ChunkReasoning, Text: "x"}
		},
	}
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) {
			r, err := chat.Collect(generated(chat.MaxCollectedBlocks, mk))
			if err != nil {
				t.Fatalf("a response of %d blocks: %v", chat.MaxCollectedBlocks, err)
			}
			if len(r.Content) != chat.MaxCollectedBlocks {
				t.Fatalf("got %d blocks, want %d", len(r.Content), chat.MaxCollectedBlocks)
			}
			r, err = chat.Collect(generated(chat.MaxCollectedBlocks+1, mk))
			if !errors.Is(err, chat.ErrTooManyBlocks) {
				t.Fatalf("a response of %d blocks: got error %v, want ErrTooManyBlocks", chat.MaxCollectedBlocks+1, err)
			}
			if !strings.Contains(err.Error(), "more than "+strconv.Itoa(chat.MaxCollectedBlocks)+" content blocks") {
				t.Errorf("the error does not say what is at fault: %v", err)
			}
			if len(r.Content) != chat.MaxCollectedBlocks {
				t.Errorf("with the error: got %d blocks, want the %d before it", len(r.Content), chat.MaxCollectedBlocks)
			}
		})
	}
}

// TestCollectManyDeltas: chunks that add to the block being built are not
// counted: a million text deltas make one block, a million argument
// fragments one tool call.
func TestCollectManyDeltas(t *testing.T) {
	const n = 1_000_000
	r, err := chat.Collect(generated(n+2, func(i int) chat.Chunk {
		switch i {
		case n:
			return chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Output: n}}
		case n + 1:
			return chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}}
		}
		return chat.Chunk{Type: chat.ChunkText, Text: "x"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 1 || len(r.Content[0].Text) != n {
		t.Fatalf("got %d blocks, want one text block of %d bytes", len(r.Content), n)
	}

	r, err = chat.Collect(generated(n+2, func(i int) chat.Chunk {
		switch i {
		case 0:
			return chat.Chunk{Type: chat.ChunkToolCallStart, ID: "c", Name: "f"}
		case n + 1:
			return chat.Chunk{Type: chat.ChunkToolCallEnd}
		}
		return chat.Chunk{Type: chat.ChunkToolCallDelta, Arguments: "1"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != chat.TypeToolUse {
		t.Fatalf("got %d blocks, want one tool_use block", len(r.Content))
	}
}
