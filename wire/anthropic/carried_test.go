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
// short thought parts found in none of them. Looking each thought part
// up in every carried text (strings.Contains) is parts × bytes of
// thinking, hundreds of gigabytes of scanning for one request.
// Encoding costs about the request's size: each part is matched at a
// cursor in the text of the envelope after it.
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
	// Matched at a cursor this takes a few seconds under -race; looked
	// up with strings.Contains it took over a minute without.
	case <-time.After(60 * time.Second):
		t.Fatalf("encoding one %d-part request still running after %v", envelopes+parts, time.Since(start))
	}
}

// TestCarriedThoughtsInOrder: each thought part is matched as the next
// piece of the first envelope after it, joined or split as the client
// kept them; a part that is not (one repeated, or one of an earlier
// envelope) is dropped with a warning.
func TestCarriedThoughtsInOrder(t *testing.T) {
	first := wire.SealSignature(wire.HomeAnthropic, "EqQBone", "Let me think. Then call.")
	second := wire.SealSignature(wire.HomeAnthropic, "EqQBtwo", "Done.")
	thought := func(s string) chat.Block { return chat.Block{Type: chat.TypeReasoning, Text: s} }
	req := chat.Request{Model: "claude", Messages: []chat.Message{
		{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
		{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{
			thought("Let me think."), thought(" Then"), thought(" call."),
			{Type: chat.TypeThoughtSignature, Signature: first},
			thought("Let me think."), thought("Done."),
			{Type: chat.TypeThoughtSignature, Signature: second},
			{Type: chat.TypeText, Text: "answer"},
		}}},
		{Role: chat.User, Content: chat.Content{IsString: true, Text: "more"}},
	}}
	out, warns, err := anthropic.EncodeRequest(req, anthropic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || warns[0].Path != "messages[1].content[4]" {
		t.Fatalf("warnings %v, want one for messages[1].content[4]", warns)
	}
	got := out.Messages[1].Content.Blocks
	if len(got) != 3 || got[0].Signature != "EqQBone" || got[0].Thinking != "Let me think. Then call." || got[1].Signature != "EqQBtwo" {
		t.Fatalf("blocks %+v", got)
	}
}
