package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// BenchmarkSealStream: a Bedrock turn's reasoning (64 deltas and a
// signature) sealed for a Chat Completions client.
func BenchmarkSealStream(b *testing.B) {
	var stream []chat.Chunk
	for range 64 {
		stream = append(stream, chat.Chunk{Type: chat.ChunkReasoning, Text: strings.Repeat("w", 64)})
	}
	stream = append(stream, chat.Chunk{Type: chat.ChunkReasoning, Signature: anthropicSig}, chat.Chunk{Type: chat.ChunkText, Text: "hi"})
	for b.Loop() {
		for c, err := range wire.SealChunks(sigStream(stream...), "bedrock", "openai") {
			_, _ = c, err
		}
	}
}

// BenchmarkClaimDetails: a Chat Completions client hands back a signed
// thinking detail and a redacted one.
func BenchmarkClaimDetails(b *testing.B) {
	env := wire.SealSignature(wire.HomeBedrock, anthropicSig, strings.Repeat("w", 4096))
	details := json.RawMessage(`[{"type":"reasoning.text","text":"","signature":"` + env + `","format":"anthropic-claude-v1","index":0},` +
		`{"type":"reasoning.encrypted","data":"` + wire.SealRedacted("opaque") + `"}]`)
	for b.Loop() {
		req := assistant(chat.Block{Type: chat.TypeReasoning, Text: "r"}, chat.Block{Type: chat.TypeText, Text: "a"})
		req.Messages[1].ReasoningDetails = details
		wire.ClaimSignatures(&req, "openai", "bedrock")
	}
}
