package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

func assistant(blocks ...chat.Block) chat.Request {
	return chat.Request{Model: "m", Messages: []chat.Message{
		{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
		{Role: chat.Assistant, Content: chat.Content{Blocks: blocks}},
	}}
}

// TestClaimSignatures: an unsealed signature is its client dialect's
// provider's, one in reasoning_details no provider's, and an upstream
// that is no signature home never gets an envelope.
func TestClaimSignatures(t *testing.T) {
	thinking := func(sig string) chat.Block {
		return chat.Block{Type: chat.TypeThinking, Thinking: "Think.", Signature: sig}
	}
	thought := func(sig string) chat.Block { return chat.Block{Type: chat.TypeThoughtSignature, Signature: sig} }
	text := chat.Block{Type: chat.TypeText, Text: "answer"}
	sealedG := wire.SealSignature(wire.HomeGemini, geminiSig, "")
	for _, c := range []struct {
		name, dialect, upstream string
		in                      []chat.Block
		want                    []chat.Block // nil: unchanged
		warn                    string
	}{
		{name: "anthropic own", dialect: "anthropic", upstream: "anthropic", in: []chat.Block{thinking(anthropicSig), text}},
		{name: "gemini own", dialect: "gemini", upstream: "gemini", in: []chat.Block{thought(geminiSig), text}},
		{name: "anthropic to gemini", dialect: "anthropic", upstream: "gemini", in: []chat.Block{thinking(anthropicSig), text},
			want: []chat.Block{thinking(wire.SealSignature(wire.HomeAnthropic, anthropicSig, "")), text}},
		{name: "gemini to anthropic", dialect: "gemini", upstream: "anthropic", in: []chat.Block{thought(geminiSig), text},
			want: []chat.Block{thought(sealedG), text}},
		{name: "responses to bedrock", dialect: "responses", upstream: "bedrock", in: []chat.Block{thinking(openaiSig), text},
			want: []chat.Block{thinking(wire.SealSignature(wire.HomeResponses, openaiSig, "")), text}},
		{name: "sealed left to the encoder", dialect: "anthropic", upstream: "responses", in: []chat.Block{thinking(sealedG), text}},
		{name: "no home's block to a home", dialect: "openai", upstream: "gemini", in: []chat.Block{thinking(anthropicSig), text},
			want: []chat.Block{text}, warn: "native to no provider"},
		{name: "unsealed to no home", dialect: "anthropic", upstream: "openai", in: []chat.Block{thinking(anthropicSig), text}},
		{name: "sealed thinking to no home", dialect: "anthropic", upstream: "mistral", in: []chat.Block{thinking(sealedG), text},
			want: []chat.Block{thinking(""), text}, warn: "made by gemini, which mistral cannot check"},
		{name: "sealed thought to no home", dialect: "gemini", upstream: "deepseek", in: []chat.Block{text, thought(sealedG)},
			want: []chat.Block{text}, warn: "a signature of gemini, which deepseek cannot take"},
		{name: "redacted to no home", dialect: "anthropic", upstream: "openai", in: []chat.Block{thinking(wire.SealRedacted("data")), text},
			want: []chat.Block{text}, warn: "redacted thinking of anthropic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := assistant(c.in...)
			before, _ := json.Marshal(req)
			warns := wire.ClaimSignatures(&req, c.dialect, c.upstream)
			if after, _ := json.Marshal(assistant(c.in...)); string(after) != string(before) {
				t.Fatalf("the caller's blocks were written")
			}
			want := c.in
			if c.want != nil {
				want = c.want
			}
			got, _ := json.Marshal(req.Messages[1].Content.Blocks)
			w, _ := json.Marshal(want)
			if string(got) != string(w) {
				t.Fatalf("blocks %s\nwant %s", got, w)
			}
			switch {
			case c.warn == "" && len(warns) > 0:
				t.Fatalf("warnings %v", warns)
			case c.warn != "" && (len(warns) != 1 || !strings.HasPrefix(warns[0].Path, "messages[1].content[") || !strings.Contains(warns[0].Message, c.warn)):
				t.Fatalf("warnings %v, want one with %q", warns, c.warn)
			}
			for _, wn := range warns {
				if strings.Contains(wn.Message, anthropicSig) || strings.Contains(wn.Message, geminiSig) {
					t.Fatalf("a warning holds the signature: %v", wn)
				}
			}
		})
	}
}

// TestClaimReasoningDetails: a Chat Completions client's reasoning
// details keep an envelope for a home upstream (its encoder opens it) and
// lose an unsealed signature, which names no provider; an upstream that
// is no home keeps the unsealed ones and loses the envelopes.
func TestClaimReasoningDetails(t *testing.T) {
	sealedO := wire.SealSignature(wire.HomeResponses, openaiSig, "")
	details := `[{"type":"reasoning.text","text":"a","signature":"` + sealedO + `"},` +
		`{"type":"reasoning.text","text":"b","signature":"` + anthropicSig + `"},{"type":"reasoning.summary","summary":"c"}]`
	for _, c := range []struct {
		upstream, want string
		warns          int
	}{
		{"responses", `[{"type":"reasoning.text","text":"a","signature":"` + sealedO + `"},{"type":"reasoning.summary","summary":"c"}]`, 1},
		{"openai", `[{"type":"reasoning.text","text":"b","signature":"` + anthropicSig + `"},{"type":"reasoning.summary","summary":"c"}]`, 1},
	} {
		t.Run(c.upstream, func(t *testing.T) {
			req := assistant(chat.Block{Type: chat.TypeText, Text: "answer"})
			req.Messages[1].ReasoningDetails = json.RawMessage(details)
			warns := wire.ClaimSignatures(&req, "openai", c.upstream)
			if got := string(req.Messages[1].ReasoningDetails); got != c.want {
				t.Fatalf("details %s\nwant %s", got, c.want)
			}
			if len(warns) != c.warns || !strings.HasPrefix(warns[0].Path, "messages[1].reasoning_details[") {
				t.Fatalf("warnings %v", warns)
			}
		})
	}
	t.Run("all dropped", func(t *testing.T) {
		req := assistant(chat.Block{Type: chat.TypeText, Text: "answer"})
		req.Messages[1].ReasoningDetails = json.RawMessage(`[{"type":"reasoning.text","signature":"` + anthropicSig + `"}]`)
		wire.ClaimSignatures(&req, "openai", "anthropic")
		if req.Messages[1].ReasoningDetails != nil {
			t.Fatalf("details %s", req.Messages[1].ReasoningDetails)
		}
	})
	t.Run("not an array is the encoder's", func(t *testing.T) {
		req := assistant(chat.Block{Type: chat.TypeText, Text: "answer"})
		req.Messages[1].ReasoningDetails = json.RawMessage(`{"x":1}`)
		if warns := wire.ClaimSignatures(&req, "openai", "responses"); len(warns) != 0 || string(req.Messages[1].ReasoningDetails) != `{"x":1}` {
			t.Fatalf("%v %s", warns, req.Messages[1].ReasoningDetails)
		}
	})
}

// FuzzClaimSignatures: a client's reasoning_details and signatures are
// anything: claiming never panics, leaves valid JSON (or none), and no
// envelope reaches an upstream that is no signature home.
func FuzzClaimSignatures(f *testing.F) {
	sealedO := wire.SealSignature(wire.HomeResponses, openaiSig, "")
	for _, s := range [][2]string{
		{`[{"type":"reasoning.text","signature":"` + sealedO + `"}]`, sealedO},
		{`[{"signature":"` + anthropicSig + `"},{"signature":1}]`, anthropicSig},
		{`[]`, ""}, {`null`, "Y3R4awFh"}, {`[{"signature":"Y3R4awFiYg=="}]`, wire.SealRedacted("d")},
		{`[1,"x",{"signature":null}]`, geminiSig}, {`[{"signature":"` + sealedO + `","signature":1}]`, ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, details, sig string) {
		if len(details) > 1<<16 || len(sig) > 1<<16 {
			return
		}
		for _, up := range []string{"openai", "responses", "gemini"} {
			for _, dialect := range []string{"openai", "anthropic", "gemini"} {
				req := assistant(chat.Block{Type: chat.TypeThinking, Thinking: "t", Signature: sig}, chat.Block{Type: chat.TypeThoughtSignature, Signature: sig})
				req.Messages[1].ReasoningDetails = json.RawMessage(details)
				wire.ClaimSignatures(&req, dialect, up)
				m := req.Messages[1]
				if string(m.ReasoningDetails) != details && m.ReasoningDetails != nil && !json.Valid(m.ReasoningDetails) {
					t.Fatalf("details %q", m.ReasoningDetails)
				}
				if up != "openai" {
					continue
				}
				for _, b := range m.Content.Blocks {
					if _, sealed := wire.OpenSignature(b.Signature); sealed {
						t.Fatalf("an envelope reaches %s: %+v", up, b)
					}
				}
				var list []struct {
					Signature string `json:"signature"`
				}
				if json.Unmarshal(m.ReasoningDetails, &list) == nil {
					for _, d := range list {
						if _, sealed := wire.OpenSignature(d.Signature); sealed {
							t.Fatalf("an envelope reaches %s in %s", up, m.ReasoningDetails)
						}
					}
				}
			}
		}
	})
}
