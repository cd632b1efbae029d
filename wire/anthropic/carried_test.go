package anthropic_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

// TestCarriedThoughtsBounded: a Gemini client's request (within the
// gateway's 32 MiB body and chat.MaxBlocks parts) holding a few
// thoughtSignatures that carry megabytes of thinking each, and many
// short thought parts found in none of them. The encoder looks each
// thought part up in every carried text with strings.Contains: parts ×
// bytes of thinking, hundreds of gigabytes of scanning for one request.
// Encoding should cost about the request's size (an index of the carried
// text, or a bound on the lookups).
func TestCarriedThoughtsBounded(t *testing.T) {
	envelopes, parts := 7, 19000
	if n := os.Getenv("CARRIED_PARTS"); n != "" {
		parts, _ = strconv.Atoi(n)
	}
	thinking := strings.Repeat("a", 3<<20-64)
	blocks := make([]chat.Block, 0, envelopes+parts+1)
	for range envelopes {
		blocks = append(blocks, chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealSignature(wire.HomeAnthropic, "EqQBsig", thinking)})
	}
	for range parts {
		blocks = append(blocks, chat.Block{Type: chat.TypeReasoning, Text: "ab"})
	}
	blocks = append(blocks, chat.Block{Type: chat.TypeText, Text: "answer"})
	req := chat.Request{Model: "claude", Messages: []chat.Message{
		{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
		{Role: chat.Assistant, Content: chat.Content{Blocks: blocks}},
		{Role: chat.User, Content: chat.Content{IsString: true, Text: "more"}},
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		anthropic.EncodeRequest(req, anthropic.Options{})
	}()
	start := time.Now()
	select {
	case <-done:
		t.Logf("encoded in %v", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatalf("encoding one %d-part request still running after %v", envelopes+parts, time.Since(start))
	}
}
