package bedrock_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/bedrock"
)

// TestSealedSignatures: Converse gets Bedrock's own signature out of
// ctxkit's envelope, and a thinking block another provider signed is
// dropped with a warning naming it, never sent sealed.
func TestSealedSignatures(t *testing.T) {
	const sig = "EqQBCkgIBedrockOwn"
	for _, c := range []struct {
		name, in, want, warn string
	}{
		{"own sealed", wire.SealSignature(wire.HomeBedrock, sig, ""), sig, ""},
		{"unsealed", sig, sig, ""},
		{"own with its text's digest", wire.Sealed{Home: wire.HomeBedrock, Signature: sig, Digest: sum("Think.")}.Seal(), sig, ""},
		{"own with another text's digest", wire.Sealed{Home: wire.HomeBedrock, Signature: sig, Digest: sum("Other.")}.Seal(), "", "not the text signed"},
		{"gemini's", wire.SealSignature(wire.HomeGemini, "CiQB", ""), "", "made by gemini"},
		{"anthropic's", wire.SealSignature(wire.HomeAnthropic, sig, "Think."), "", "made by anthropic"},
		{"redacted", wire.SealRedacted("ZGF0YQ=="), "", "made by anthropic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := chat.Request{Model: "anthropic.claude", Messages: []chat.Message{
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
				{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{
					{Type: chat.TypeThinking, Thinking: "Think.", Signature: c.in},
					{Type: chat.TypeText, Text: "answer"},
				}}},
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "more"}},
			}}
			out, warns, err := bedrock.EncodeRequest(req, bedrock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			blocks := out.Messages[1].Content
			if c.want == "" {
				if len(blocks) != 1 || blocks[0].ReasoningContent != nil {
					t.Fatalf("the thinking block was kept: %+v", blocks)
				}
				if len(warns) != 1 || warns[0].Path != "messages[1].content[0]" || !strings.Contains(warns[0].Message, c.warn) {
					t.Fatalf("warnings %v, want one with %q", warns, c.warn)
				}
				return
			}
			if len(warns) != 0 {
				t.Fatalf("warnings %v", warns)
			}
			if rc := blocks[0].ReasoningContent; rc == nil || rc.ReasoningText == nil || rc.ReasoningText.Signature != c.want || rc.ReasoningText.Text != "Think." {
				t.Fatalf("first block %+v", blocks[0])
			}
		})
	}
}

// TestSealedRedactedContent: Bedrock's redactedContent that ctxkit
// sealed goes back to Converse as the bytes Bedrock gave, whether a
// client kept it as redacted thinking or in a thinking block's place;
// another provider's sealed redacted thinking, an envelope being valid
// base64, would otherwise go to Converse as bytes it never made: it is
// dropped with a warning.
func TestSealedRedactedContent(t *testing.T) {
	const data = "ZGF0YQ=="
	for _, c := range []struct {
		name  string
		block chat.Block
		want  string // the redactedContent sent; "" none
		warn  string
	}{
		{"own sealed", chat.Block{Type: chat.TypeRedactedThinking, Data: wire.SealRedactedFor(wire.HomeBedrock, data)}, data, ""},
		{"own sealed in a thinking block", chat.Block{Type: chat.TypeThinking, Thinking: "x", Signature: wire.SealRedactedFor(wire.HomeBedrock, data)}, data, ""},
		{"unsealed", chat.Block{Type: chat.TypeRedactedThinking, Data: data}, data, ""},
		{"anthropic's", chat.Block{Type: chat.TypeRedactedThinking, Data: wire.SealRedacted(data)}, "", "redacted thinking made by anthropic"},
		{"a signature as data", chat.Block{Type: chat.TypeRedactedThinking, Data: wire.SealSignature(wire.HomeBedrock, "EqoB", "")}, "", "a signature made by bedrock"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.block
			req := chat.Request{Model: "anthropic.claude", Messages: []chat.Message{
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
				{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{c.block, {Type: chat.TypeText, Text: "answer"}}}},
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "more"}},
			}}
			out, warns, err := bedrock.EncodeRequest(req, bedrock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if b := req.Messages[1].Content.Blocks[0]; b.Data != before.Data || b.Signature != before.Signature || b.Type != before.Type {
				t.Fatalf("the caller's block changed: %+v", req.Messages[1].Content.Blocks[0])
			}
			blocks := out.Messages[1].Content
			if c.want == "" {
				if len(blocks) != 1 || blocks[0].ReasoningContent != nil {
					t.Fatalf("the block was kept: %+v", blocks)
				}
				if len(warns) != 1 || warns[0].Path != "messages[1].content[0]" || !strings.Contains(warns[0].Message, c.warn) {
					t.Fatalf("warnings %v, want one with %q", warns, c.warn)
				}
				return
			}
			if len(warns) != 0 {
				t.Fatalf("warnings %v", warns)
			}
			if rc := blocks[0].ReasoningContent; rc == nil || rc.RedactedContent != c.want || rc.ReasoningText != nil {
				t.Fatalf("first block %+v", blocks[0])
			}
		})
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return string(h[:])
}
