package anthropic_test

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

// TestSealedSignatures: signatures ctxkit sealed for a client of another
// dialect are opened: Anthropic's own go out as Anthropic made them (a
// thought_signature block holding one, what a Gemini client hands back,
// becomes the thinking or redacted_thinking block it carries), another
// provider's thinking block is dropped with a warning naming the
// provider, and unsealed signatures pass as they came.
func TestSealedSignatures(t *testing.T) {
	const sig = "EqQBCkgIAReal"
	for _, c := range []struct {
		name  string
		block chat.Block
		want  string // the first block of the assistant message as JSON; "" none
		warn  string
	}{
		{"thought_signature with text", chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealSignature(wire.HomeAnthropic, sig, "Think.")},
			`{"type":"thinking","thinking":"Think.","signature":"` + sig + `"}`, ""},
		{"thought_signature redacted", chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealRedacted("opaque")},
			`{"type":"redacted_thinking","data":"opaque"}`, ""},
		{"thought_signature without text", chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealSignature(wire.HomeAnthropic, sig, "")},
			"", "without its thinking"},
		{"thought_signature of gemini", chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealSignature(wire.HomeGemini, "CiQB", "")},
			"", "thought_signature is Gemini's"},
		{"thinking sealed", chat.Block{Type: chat.TypeThinking, Thinking: "Think.", Signature: wire.SealSignature(wire.HomeAnthropic, sig, "")},
			`{"type":"thinking","thinking":"Think.","signature":"` + sig + `"}`, ""},
		{"thinking without text takes the envelope's", chat.Block{Type: chat.TypeThinking, Signature: wire.SealSignature(wire.HomeAnthropic, sig, "Think.")},
			`{"type":"thinking","thinking":"Think.","signature":"` + sig + `"}`, ""},
		{"thinking of responses", chat.Block{Type: chat.TypeThinking, Thinking: "Sum.", Signature: wire.SealSignature(wire.HomeResponses, "gAAA", "")},
			"", "made by responses"},
		{"thinking of gemini", chat.Block{Type: chat.TypeThinking, Thinking: "Sum.", Signature: wire.SealSignature(wire.HomeGemini, "CiQB", "")},
			"", "made by gemini"},
		{"thinking with redacted envelope", chat.Block{Type: chat.TypeThinking, Thinking: "x", Signature: wire.SealRedacted("opaque")},
			`{"type":"redacted_thinking","data":"opaque"}`, ""},
		{"thinking with bedrock's redacted envelope", chat.Block{Type: chat.TypeThinking, Thinking: "x", Signature: wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ==")},
			"", "made by bedrock"},
		{"thought_signature of bedrock's redacted", chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ==")},
			"", "not an Anthropic block"},
		// A Responses client holds redacted thinking sealed in its
		// encrypted_content: the data inside, for Anthropic's own only.
		{"redacted_thinking sealed", chat.Block{Type: chat.TypeRedactedThinking, Data: wire.SealRedacted("opaque")},
			`{"type":"redacted_thinking","data":"opaque"}`, ""},
		{"redacted_thinking of bedrock", chat.Block{Type: chat.TypeRedactedThinking, Data: wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ==")},
			"", "made by bedrock"},
		{"redacted_thinking holding a signature", chat.Block{Type: chat.TypeRedactedThinking, Data: wire.SealSignature(wire.HomeAnthropic, sig, "")},
			"", "made by anthropic"},
		// A signature sealed with its text's digest goes back only over
		// that text.
		{"thinking sealed with its text's digest", chat.Block{Type: chat.TypeThinking, Thinking: "Think.", Signature: wire.Sealed{Home: wire.HomeAnthropic, Signature: sig, Digest: sum("Think.")}.Seal()},
			`{"type":"thinking","thinking":"Think.","signature":"` + sig + `"}`, ""},
		{"thinking sealed with another text's digest", chat.Block{Type: chat.TypeThinking, Thinking: "Think.", Signature: wire.Sealed{Home: wire.HomeAnthropic, Signature: sig, Digest: sum("Other.")}.Seal()},
			"", "not the text signed"},
		{"no thinking under a digest", chat.Block{Type: chat.TypeThinking, Signature: wire.Sealed{Home: wire.HomeAnthropic, Signature: sig, Digest: sum("Other.")}.Seal()},
			"", "not the text signed"},
		{"thinking unsealed", chat.Block{Type: chat.TypeThinking, Thinking: "Think.", Signature: sig},
			`{"type":"thinking","thinking":"Think.","signature":"` + sig + `"}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := chat.Request{Model: "claude", Messages: []chat.Message{
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
				{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{c.block, {Type: chat.TypeText, Text: "answer"}}}},
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "more"}},
			}}
			out, warns, err := anthropic.EncodeRequest(req, anthropic.Options{})
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Messages []struct {
					Content json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			var blocks []json.RawMessage
			if err := json.Unmarshal(body, &got); err != nil || json.Unmarshal(got.Messages[1].Content, &blocks) != nil {
				t.Fatalf("%s: %v", body, err)
			}
			first := string(blocks[0])
			if c.want == "" {
				if len(blocks) != 1 || !strings.Contains(first, `"text"`) {
					t.Fatalf("the block was kept: %s", body)
				}
			} else if first != c.want {
				t.Fatalf("first block %s, want %s", first, c.want)
			}
			switch {
			case c.warn == "" && len(warns) > 0:
				t.Fatalf("warnings %v", warns)
			case c.warn != "" && (len(warns) != 1 || warns[0].Path != "messages[1].content[0]" || !strings.Contains(warns[0].Message, c.warn)):
				t.Fatalf("warnings %v, want one with %q", warns, c.warn)
			}
		})
	}
}

// TestSealedThinkingCarriesThoughts: a Gemini client hands back its
// thought parts (reasoning blocks) before the signature: the ones whose
// text the rebuilt thinking block carries go without a warning, any
// other is dropped with one.
func TestSealedThinkingCarriesThoughts(t *testing.T) {
	sealed := wire.SealSignature(wire.HomeAnthropic, "EqQBCkgIAReal", "Let me think.")
	req := chat.Request{Model: "claude", Messages: []chat.Message{
		{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
		{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{{Type: chat.TypeReasoning, Text: "Let me"}}}},
		{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{
			{Type: chat.TypeReasoning, Text: " think."},
			{Type: chat.TypeReasoning, Text: "Something else."},
			{Type: chat.TypeThoughtSignature, Signature: sealed},
			{Type: chat.TypeText, Text: "answer"},
		}}},
		{Role: chat.User, Content: chat.Content{IsString: true, Text: "more"}},
	}}
	out, warns, err := anthropic.EncodeRequest(req, anthropic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || warns[0].Path != "messages[2].content[1]" {
		t.Fatalf("warnings %v, want one for the thought nothing carries", warns)
	}
	body, _ := json.Marshal(out.Messages)
	want := `[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"Let me think.","signature":"EqQBCkgIAReal"},{"type":"text","text":"answer"}]},{"role":"user","content":"more"}]`
	if string(body) != want {
		t.Fatalf("messages\n%s\nwant\n%s", body, want)
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return string(h[:])
}
