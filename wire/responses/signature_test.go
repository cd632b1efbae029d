package responses_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// TestSealedSignatures: the Responses API gets back its own encrypted
// reasoning whether a client hands it back sealed in a thinking block's
// signature (an Anthropic client) or a thoughtSignature (a Gemini
// client); another provider's sealed signature is dropped with a warning
// naming the provider.
func TestSealedSignatures(t *testing.T) {
	const enc = "gAAAAABreal"
	own := wire.SealSignature(wire.HomeResponses, enc, "")
	for _, c := range []struct {
		name  string
		block chat.Block
		want  string // the reasoning item's encrypted_content; "" none
		warn  string
	}{
		{"thinking sealed", chat.Block{Type: chat.TypeThinking, Thinking: "Sum.", Signature: own}, enc, ""},
		{"thinking unsealed", chat.Block{Type: chat.TypeThinking, Thinking: "Sum.", Signature: enc}, enc, ""},
		{"thought_signature sealed", chat.Block{Type: chat.TypeThoughtSignature, Signature: own}, enc, ""},
		{"thought_signature of gemini", chat.Block{Type: chat.TypeThoughtSignature, Signature: "CiQB"}, "", "cannot carry thought_signature"},
		{"thinking of anthropic", chat.Block{Type: chat.TypeThinking, Thinking: "T.", Signature: wire.SealSignature(wire.HomeAnthropic, "EqQB", "T.")}, "", "made by anthropic"},
		{"thinking of gemini", chat.Block{Type: chat.TypeThinking, Signature: wire.SealSignature(wire.HomeGemini, "CiQB", "")}, "", "made by gemini"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := chat.Request{Model: "gpt-5", Messages: []chat.Message{
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
				{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{c.block, {Type: chat.TypeText, Text: "answer"}}}},
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "more"}},
			}}
			out, warns, err := responses.EncodeRequest(req, responses.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range out.Input {
				if it.Type == "reasoning" {
					got = append(got, it.EncryptedContent)
				}
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Fatalf("reasoning items %q", got)
			case c.want != "" && (len(got) != 1 || got[0] != c.want):
				t.Fatalf("reasoning items %q, want %q", got, c.want)
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
