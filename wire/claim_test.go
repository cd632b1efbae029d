package wire_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
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
	sealedBR := wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ==")
	redacted := func(data string) chat.Block { return chat.Block{Type: chat.TypeRedactedThinking, Data: data} }
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
		// An Anthropic client holds Bedrock's redacted content sealed in
		// redacted_thinking data: it goes to Bedrock (whose encoder
		// opens it), to no one else.
		{name: "bedrock's redacted data to bedrock", dialect: "anthropic", upstream: "bedrock", in: []chat.Block{redacted(sealedBR), text}},
		{name: "bedrock's redacted data to anthropic", dialect: "anthropic", upstream: "anthropic", in: []chat.Block{redacted(sealedBR), text},
			want: []chat.Block{text}, warn: "redacted thinking made by bedrock, and anthropic takes back only its own"},
		{name: "bedrock's redacted data to no home", dialect: "anthropic", upstream: "openai", in: []chat.Block{redacted(sealedBR), text},
			want: []chat.Block{text}, warn: "redacted thinking made by bedrock, and openai takes back only its own"},
		{name: "a signature as redacted data", dialect: "anthropic", upstream: "bedrock", in: []chat.Block{redacted(wire.SealSignature(wire.HomeBedrock, anthropicSig, "")), text},
			want: []chat.Block{text}, warn: "a signature made by bedrock"},
		{name: "unsealed redacted data kept", dialect: "anthropic", upstream: "anthropic", in: []chat.Block{redacted("EmwKAhgB"), text}},
		// Unsealed redacted data is the client dialect's provider's (an
		// Anthropic client's, Anthropic's), or names no provider (a
		// Responses client's): no other home takes it.
		{name: "anthropic's unsealed redacted data to bedrock", dialect: "anthropic", upstream: "bedrock", in: []chat.Block{redacted("ZGF0YQ=="), text},
			want: []chat.Block{text}, warn: "unsealed redacted thinking, and bedrock takes back only its own"},
		{name: "responses' unsealed redacted data to anthropic", dialect: "responses", upstream: "anthropic", in: []chat.Block{redacted("ZGF0YQ=="), text},
			want: []chat.Block{text}, warn: "unsealed redacted thinking, and anthropic takes back only its own"},
		{name: "responses' unsealed redacted data to bedrock", dialect: "responses", upstream: "bedrock", in: []chat.Block{redacted("ZGF0YQ=="), text},
			want: []chat.Block{text}, warn: "unsealed redacted thinking, and bedrock takes back only its own"},
		{name: "responses' sealed redacted data to anthropic", dialect: "responses", upstream: "anthropic", in: []chat.Block{redacted(wire.SealRedacted("ZGF0YQ==")), text}},
		{name: "responses' sealed redacted data to bedrock", dialect: "responses", upstream: "bedrock", in: []chat.Block{redacted(sealedBR), text}},
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
// details become, for a signature home upstream, the blocks they were,
// where that provider wants them, and only the upstream's own; an
// upstream that is no home keeps the unsealed ones and loses the
// envelopes.
func TestClaimReasoningDetails(t *testing.T) {
	sealedA := wire.SealSignature(wire.HomeAnthropic, anthropicSig, "Think first.")
	sealedB := wire.SealSignature(wire.HomeBedrock, anthropicSig, "Bedrock thinks.")
	sealedG := wire.SealSignature(wire.HomeGemini, geminiSig, "")
	sealedO := wire.SealSignature(wire.HomeResponses, openaiSig, "")
	sealedR := wire.SealRedacted("opaque")
	sealedBR := wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ==")
	text := func(t, sig string) string {
		return `{"type":"reasoning.text","text":"` + t + `","signature":"` + sig + `","format":"x","index":0}`
	}
	enc := func(data string) string { return `{"type":"reasoning.encrypted","data":"` + data + `"}` }
	reasoning := chat.Block{Type: chat.TypeReasoning, Text: "Think first."}
	answer := chat.Block{Type: chat.TypeText, Text: "answer"}
	call := func(id string) chat.Block {
		return chat.Block{Type: chat.TypeToolUse, ID: id, Name: "f", Input: json.RawMessage(`{}`)}
	}
	for _, c := range []struct {
		name, upstream, details string
		in, want                []chat.Block
		wantDetails             string
		warns                   []string // substrings, one per warning, in order
	}{
		{name: "anthropic", upstream: "anthropic",
			details: "[" + text("garbled by the client", sealedA) + "," + enc(sealedR) + "," + text("b", anthropicSig) + "," + enc(sealedG) + `,{"type":"reasoning.summary","summary":"s"}]`,
			in:      []chat.Block{reasoning, answer, call("c1")},
			want: []chat.Block{{Type: chat.TypeThinking, Thinking: "Think first.", Signature: sealedA},
				{Type: chat.TypeRedactedThinking, Data: "opaque"}, answer, call("c1")},
			warns: []string{"[2]: the signature came unsealed", "[3]: a signature made by gemini, and anthropic takes back only its own"}},
		{name: "bedrock", upstream: "bedrock", details: "[" + text("", sealedB) + "," + text("x", sealedA) + "]",
			in:    []chat.Block{reasoning, call("c1")},
			want:  []chat.Block{{Type: chat.TypeThinking, Thinking: "Bedrock thinks.", Signature: sealedB}, call("c1")},
			warns: []string{"[1]: a signature made by anthropic, and bedrock takes back"}},
		// Bedrock's redactedContent goes back to Bedrock, first in the
		// message as it came, and to no one else; Anthropic's redacted
		// thinking is not Bedrock's.
		{name: "bedrock redacted", upstream: "bedrock", details: "[" + enc(sealedBR) + "," + text("", sealedB) + "," + enc(sealedR) + "]",
			in: []chat.Block{reasoning, call("c1")},
			want: []chat.Block{{Type: chat.TypeRedactedThinking, Data: "ZGF0YQ=="},
				{Type: chat.TypeThinking, Thinking: "Bedrock thinks.", Signature: sealedB}, call("c1")},
			warns: []string{"[2]: redacted thinking made by anthropic, and bedrock takes back only its own"}},
		{name: "anthropic refuses bedrock's redacted", upstream: "anthropic", details: "[" + enc(sealedBR) + "," + text("x", sealedA) + "]",
			in:    []chat.Block{reasoning, call("c1")},
			want:  []chat.Block{{Type: chat.TypeThinking, Thinking: "Think first.", Signature: sealedA}, call("c1")},
			warns: []string{"[0]: redacted thinking made by bedrock, and anthropic takes back only its own"}},
		{name: "gemini refuses bedrock's redacted", upstream: "gemini", details: "[" + enc(sealedBR) + "]",
			in: []chat.Block{answer}, want: []chat.Block{answer},
			warns: []string{"[0]: redacted thinking made by bedrock, and gemini takes back only its own"}},
		{name: "no home drops bedrock's redacted", upstream: "openai", details: "[" + enc(sealedBR) + "]",
			in: []chat.Block{answer}, want: []chat.Block{answer},
			warns: []string{"[0]: redacted thinking of bedrock, which openai cannot take"}},
		{name: "gemini signs the first call", upstream: "gemini", details: "[" + text("x", sealedA) + "," + enc(sealedG) + "]",
			in:    []chat.Block{reasoning, answer, call("c1"), call("c2")},
			want:  []chat.Block{reasoning, answer, {Type: chat.TypeThoughtSignature, Signature: sealedG}, call("c1"), call("c2")},
			warns: []string{"[0]: a signature made by anthropic, and gemini takes back"}},
		{name: "gemini signatures with no call go first", upstream: "gemini", details: "[" + text("A thought.", sealedG) + "," + enc(sealedG) + "," + enc(sealedG) + "]",
			in: []chat.Block{reasoning, answer},
			want: []chat.Block{{Type: chat.TypeThoughtSignature, Signature: sealedG}, {Type: chat.TypeThoughtSignature, Signature: sealedG},
				{Type: chat.TypeThoughtSignature, Signature: sealedG}, reasoning, answer}},
		{name: "responses", upstream: "responses", details: "[" + enc(sealedO) + "]",
			in:   []chat.Block{reasoning, answer},
			want: []chat.Block{{Type: chat.TypeThinking, Signature: sealedO}, answer}},
		{name: "no home keeps its own", upstream: "openai", details: "[" + text("a", sealedO) + "," + text("b", anthropicSig) + "," + enc(sealedR) + `,{"type":"reasoning.summary","summary":"c"}]`,
			in: []chat.Block{answer}, want: []chat.Block{answer},
			wantDetails: "[" + text("b", anthropicSig) + `,{"type":"reasoning.summary","summary":"c"}]`,
			warns:       []string{"[0]: a signature of responses, which openai cannot take", "[2]: redacted thinking of anthropic, which openai cannot take"}},
		{name: "malformed", upstream: "anthropic",
			details: `[1,{"type":"reasoning.text","signature":5},{"type":"reasoning.image"},{"type":"reasoning.encrypted"},{"type":"reasoning.text","text":"only text"}]`,
			in:      []chat.Block{reasoning, answer}, want: []chat.Block{reasoning, answer},
			warns: []string{"[0]: not a reasoning detail", "[1]: not a reasoning detail", `[2]: type "reasoning.image"`, "[3]: a reasoning.encrypted detail without data"}},
		{name: "not an array", upstream: "gemini", details: `{"x":1}`, in: []chat.Block{answer}, want: []chat.Block{answer},
			warns: []string{"reasoning_details: not an array"}},
		{name: "too many", upstream: "anthropic", details: "[" + strings.Repeat(enc(sealedR)+",", wire.MaxReasoningDetails) + enc(sealedR) + "]",
			in: []chat.Block{answer}, want: []chat.Block{answer}, warns: []string{"reasoning_details: 10001 reasoning details past the request"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := assistant(c.in...)
			req.Messages[1].ReasoningDetails = json.RawMessage(c.details)
			before, _ := json.Marshal(req)
			warns := wire.ClaimSignatures(&req, "openai", c.upstream)
			orig := assistant(c.in...)
			orig.Messages[1].ReasoningDetails = json.RawMessage(c.details)
			if after, _ := json.Marshal(orig); string(after) != string(before) {
				t.Fatalf("the caller's message was written")
			}
			m := req.Messages[1]
			if string(m.ReasoningDetails) != c.wantDetails {
				t.Fatalf("details %s\nwant %s", m.ReasoningDetails, c.wantDetails)
			}
			got, _ := json.Marshal(m.Content.Blocks)
			w, _ := json.Marshal(c.want)
			if string(got) != string(w) {
				t.Fatalf("blocks %s\nwant %s", got, w)
			}
			if len(warns) != len(c.warns) {
				t.Fatalf("warnings %v, want %q", warns, c.warns)
			}
			for k, wn := range warns {
				if s := wn.String(); !strings.HasPrefix(s, "messages[1].reasoning_details") || !strings.Contains(s, c.warns[k]) {
					t.Fatalf("warning %q, want one with %q", s, c.warns[k])
				}
				if strings.Contains(wn.Message, anthropicSig) || strings.Contains(wn.Message, geminiSig) {
					t.Fatalf("a warning holds a signature: %v", wn)
				}
			}
		})
	}
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
		{`[]`, wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ==")}, {`[]`, wire.SealSignature(wire.HomeBedrock, anthropicSig, "t")},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, details, sig string) {
		if len(details) > 1<<16 || len(sig) > 1<<16 {
			return
		}
		for _, up := range []string{"openai", "responses", "gemini", "anthropic", "bedrock"} {
			for _, dialect := range []string{"openai", "anthropic", "gemini", "responses"} {
				req := assistant(chat.Block{Type: chat.TypeThinking, Thinking: "t", Signature: sig}, chat.Block{Type: chat.TypeThoughtSignature, Signature: sig},
					chat.Block{Type: chat.TypeRedactedThinking, Data: sig})
				req.Messages[1].ReasoningDetails = json.RawMessage(details)
				wire.ClaimSignatures(&req, dialect, up)
				m := req.Messages[1]
				if string(m.ReasoningDetails) != details && m.ReasoningDetails != nil && !json.Valid(m.ReasoningDetails) {
					t.Fatalf("details %q", m.ReasoningDetails)
				}
				// Redacted data ctxkit sealed goes only to its maker.
				for _, b := range m.Content.Blocks {
					if s, sealed := wire.OpenSignature(b.Data); b.Type == chat.TypeRedactedThinking && sealed && (!s.Redacted || s.Home != up) {
						t.Fatalf("%+v reaches %s", s, up)
					}

				}
				// Unsealed, a client's redacted data is its dialect's
				// provider's, or no provider's: only that one, or an
				// upstream that is no home, gets it.
				plain := assistant(chat.Block{Type: chat.TypeRedactedThinking, Data: sig})
				wire.ClaimSignatures(&plain, dialect, up)
				for _, b := range plain.Messages[1].Content.Blocks {
					if _, sealed := wire.OpenSignature(b.Data); b.Type == chat.TypeRedactedThinking && !sealed &&
						wire.SignatureHome(up) != "" && wire.SignatureHome(dialect) != up {
						t.Fatalf("unsealed redacted data of a %s client reaches %s", dialect, up)
					}
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

// FuzzClaimReasoningDetails: whatever a client puts in reasoning_details,
// a signature home upstream gets only blocks sealed by itself (each opened
// by its encoder) and no reasoning_details, and an upstream that is no
// home gets no envelope.
// anyEnvelope says whether a string of v (a decoded JSON value), a key
// or a value at any depth, is a ctxkit envelope.
func anyEnvelope(v any) bool {
	switch v := v.(type) {
	case string:
		_, sealed := wire.OpenSignature(v)
		return sealed
	case []any:
		return slices.ContainsFunc(v, anyEnvelope)
	case map[string]any:
		for k, e := range v {
			if anyEnvelope(k) || anyEnvelope(e) {
				return true
			}
		}
	}
	return false
}

func FuzzClaimReasoningDetails(f *testing.F) {
	sealedA := wire.SealSignature(wire.HomeAnthropic, anthropicSig, "Think first.")
	sealedG := wire.SealSignature(wire.HomeGemini, geminiSig, "")
	for _, s := range []string{
		`[{"type":"reasoning.text","text":"t","signature":"` + sealedA + `","format":"anthropic-claude-v1","index":0}]`,
		`[{"type":"reasoning.encrypted","data":"` + wire.SealRedacted("opaque") + `"},{"type":"reasoning.encrypted","data":"` + sealedG + `"}]`,
		`[{"type":"reasoning.text","text":"A thought.","signature":"` + sealedG + `"},{"type":"reasoning.summary","summary":"s"}]`,
		`[{"type":"reasoning.encrypted","data":"` + wire.SealSignature(wire.HomeBedrock, anthropicSig, "b") + `"}]`,
		`[{"type":"reasoning.encrypted","data":"` + wire.SealSignature(wire.HomeResponses, openaiSig, "") + `"}]`,
		`[{"type":"reasoning.encrypted","data":"` + wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ==") + `"},{"type":"reasoning.encrypted","data":"` + wire.SealRedacted("opaque") + `"}]`,
		`[{"type":"reasoning.text","text":"r","signature":"` + wire.Sealed{Home: wire.HomeBedrock, Signature: anthropicSig, Digest: digestOf("r")}.Seal() + `"}]`,
		`[{"type":"reasoning.text","text":"not it","signature":"` + wire.Sealed{Home: wire.HomeAnthropic, Signature: anthropicSig, Digest: digestOf("r")}.Seal() + `"}]`,
		`[1,{"type":"reasoning.text","signature":5},{"type":"reasoning.image"},{"type":"reasoning.encrypted"}]`,
		`[{"type":"reasoning.text","signature":"` + wire.Sealed{Home: wire.HomeBedrock, Signature: anthropicSig, Digest: digestOf("r"), Length: 1}.Seal() + `"},{"type":"reasoning.encrypted","data":"` + wire.Sealed{Home: wire.HomeBedrock, Signature: anthropicSig, Digest: digestOf("r"), Length: 1}.Seal() + `"}]`,
		`[{"type":"reasoning.text","signature":"` + wire.SealSignature(wire.HomeAnthropic, anthropicSig, "x") + `"},{"type":"reasoning.text","signature":"` + wire.Sealed{Home: wire.HomeAnthropic, Signature: anthropicSig, Digest: digestOf(""), Length: 1}.Seal() + `"}]`,
		`{"x":1}`, `[]`, `null`, `[{"type":"reasoning.text","signature":"Y3R4awFn"}]`,
		`["` + sealedA + `",{"a":{"b":["` + sealedG + `"]}},{"type":"reasoning.text","Signature":"x","signature":"` + sealedA + `"}]`,
	} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, details string, calls int) {
		if len(details) > 1<<16 || calls < 0 || calls > 4 {
			return
		}
		in := []chat.Block{{Type: chat.TypeReasoning, Text: "r"}, {Type: chat.TypeText, Text: "answer"}}
		for k := range calls {
			in = append(in, chat.Block{Type: chat.TypeToolUse, ID: "c" + strings.Repeat("x", k), Name: "f"})
		}
		for _, up := range []string{"anthropic", "bedrock", "gemini", "responses", "openai"} {
			req := assistant(in...)
			req.Messages[1].ReasoningDetails = json.RawMessage(details)
			wire.ClaimSignatures(&req, "openai", up)
			m := req.Messages[1]
			if up == "openai" {
				if string(m.ReasoningDetails) == details {
					continue
				}
				var list []any
				if len(m.ReasoningDetails) > 0 && json.Unmarshal(m.ReasoningDetails, &list) != nil {
					t.Fatalf("details %q", m.ReasoningDetails)
				}
				if anyEnvelope(list) {
					t.Fatalf("an envelope reaches %s in %s", up, m.ReasoningDetails)
				}
				continue
			}
			if len(m.ReasoningDetails) > 0 && strings.TrimSpace(details) != "" {
				t.Fatalf("reasoning_details reach %s: %s", up, m.ReasoningDetails)
			}
			calls := 0
			for _, b := range m.Content.Blocks {
				switch b.Type {
				case chat.TypeToolUse:
					calls++
				case chat.TypeThinking, chat.TypeThoughtSignature:
					s, sealed := wire.OpenSignature(b.Signature)
					if !sealed || s.Home != up || s.Redacted {
						t.Fatalf("%s gets %+v", up, b)
					}
					if b.Type == chat.TypeThinking && !s.Signs(b.Thinking) {
						t.Fatalf("%s gets a signature over text it does not sign: %q", up, b.Thinking)
					}
				case chat.TypeRedactedThinking:
					// Only the homes with redacted thinking of their own.
					if up != "anthropic" && up != "bedrock" {
						t.Fatalf("%s gets %+v", up, b)
					}
				}
			}
			if calls != len(in)-2 || len(m.Content.Blocks) > len(in)+wire.MaxReasoningDetails {
				t.Fatalf("blocks %+v", m.Content.Blocks)
			}
		}
	})
}

func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return string(h[:])
}

// TestClaimLongThinking: a thinking text too long for an envelope is
// carried as its SHA-256. Handed back, the signature goes back with the
// text only when the text is the one signed (the detail's, or the
// message's reasoning_content, which a streamed client joined from its
// deltas); any other text is one ctxkit cannot vouch for, and the
// signature is dropped with a warning rather than sent over it.
func TestClaimLongThinking(t *testing.T) {
	half := strings.Repeat("t", wire.MaxSealedSignature/2+1)
	long := half + half
	chunks := collectChunks(t, wire.SealChunks(sigStream(
		chat.Chunk{Type: chat.ChunkReasoning, Text: half},
		chat.Chunk{Type: chat.ChunkReasoning, Text: half},
		chat.Chunk{Type: chat.ChunkReasoning, Signature: anthropicSig},
	), "bedrock", "openai"))
	env := chunks[2].Signature
	if s, ok := wire.OpenSignature(env); !ok || s.Home != wire.HomeBedrock || s.Thinking != "" || s.Digest != digestOf(long) {
		t.Fatalf("sealed %.40q", env)
	}
	changed := long[:len(long)-1] + "u"
	detail := func(text string) string {
		return `[{"type":"reasoning.text","text":"` + text + `","signature":"` + env + `","format":"anthropic-claude-v1","index":0}]`
	}
	call := chat.Block{Type: chat.TypeToolUse, ID: "c1", Name: "f", Input: json.RawMessage(`{}`)}
	for _, c := range []struct {
		name, details, reasoning string
		want                     string // the restored thinking; "" none
	}{
		{"the detail's text", detail(long), "", long},
		{"the streamed reasoning_content", detail(""), long, long},
		{"a changed detail, the reasoning_content as signed", detail(changed), long, long},
		{"changed text", detail(changed), changed, ""},
		{"no text", detail(""), "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var in []chat.Block
			if c.reasoning != "" {
				in = append(in, chat.Block{Type: chat.TypeReasoning, Text: c.reasoning})
			}
			req := assistant(append(in, call)...)
			req.Messages[1].ReasoningDetails = json.RawMessage(c.details)
			warns := wire.ClaimSignatures(&req, "openai", "bedrock")
			blocks := req.Messages[1].Content.Blocks
			if c.want == "" {
				if len(warns) != 1 || !strings.Contains(warns[0].Message, "too long for its envelope") {
					t.Fatalf("warnings %v", warns)
				}
				if len(blocks) != len(in)+1 || blocks[0].Type == chat.TypeThinking {
					t.Fatalf("a signature went back over text it does not sign: %d blocks, first %s", len(blocks), blocks[0].Type)
				}
				return
			}
			if len(warns) != 0 {
				t.Fatalf("warnings %v", warns)
			}
			if len(blocks) != 2 || blocks[0].Type != chat.TypeThinking || blocks[0].Thinking != c.want || blocks[0].Signature != env || blocks[1].Type != chat.TypeToolUse {
				t.Fatalf("%d blocks, first %s of %d bytes", len(blocks), blocks[0].Type, len(blocks[0].Thinking))
			}
		})
	}
}

// TestClaimLongThinkingOnce: a message's reasoning_content stands for
// the text of one envelope that carries a digest, not of every detail
// that names it: a request of one long text and many copies of its
// envelope would otherwise make as many copies of the text for the
// upstream (and hash it as many times).
func TestClaimLongThinkingOnce(t *testing.T) {
	long := strings.Repeat("t", wire.MaxSealedSignature)
	env := wire.Sealed{Home: wire.HomeBedrock, Signature: anthropicSig, Digest: digestOf(long)}.Seal()
	const copies = 64
	d := make([]string, copies)
	for k := range d {
		d[k] = `{"type":"reasoning.encrypted","data":"` + env + `"}`
	}
	req := assistant(chat.Block{Type: chat.TypeReasoning, Text: long}, chat.Block{Type: chat.TypeText, Text: "answer"})
	req.Messages[1].ReasoningDetails = json.RawMessage("[" + strings.Join(d, ",") + "]")
	warns := wire.ClaimSignatures(&req, "openai", "bedrock")
	total, thinking := 0, 0
	for _, b := range req.Messages[1].Content.Blocks {
		if b.Type == chat.TypeThinking {
			thinking++
			total += len(b.Thinking)
		}
	}
	if thinking != 1 || total != len(long) {
		t.Fatalf("%d thinking blocks of %d bytes in all from one text of %d", thinking, total, len(long))
	}
	if len(warns) == 0 || !strings.Contains(warns[0].Message, "too long for its envelope") {
		t.Fatalf("warnings %v", warns)
	}
}

// TestClaimSeveralLongThinkings: a streamed turn of several thinking
// blocks, each signed, two of them too long for an envelope: a Chat
// Completions client joins all their text into one reasoning_content and
// hands back details without text. The envelopes give each long text's
// digest and length, so the joined text is cut at each signature in turn
// and every block goes back with the text it signs. A text changed on the
// way loses its signature (with a warning), the others still go back: a
// short text's envelope carries the text itself, and gives its length as
// a long one's does, so where each text starts stays known; a text
// missing shifts the ones after it, whose digests then fail.
func TestClaimSeveralLongThinkings(t *testing.T) {
	size := wire.MaxSealedSignature*3/4 + 1
	t1, t3 := strings.Repeat("a", size), strings.Repeat("c", size+5)
	t2 := "A short thought between."
	chunks := collectChunks(t, wire.SealChunks(sigStream(
		chat.Chunk{Type: chat.ChunkReasoning, Text: t1[:size/2]},
		chat.Chunk{Type: chat.ChunkReasoning, Text: t1[size/2:]},
		chat.Chunk{Type: chat.ChunkReasoning, Signature: "sig1"},
		chat.Chunk{Type: chat.ChunkReasoning, Text: t2},
		chat.Chunk{Type: chat.ChunkReasoning, Signature: "sig2"},
		chat.Chunk{Type: chat.ChunkReasoning, Text: t3},
		chat.Chunk{Type: chat.ChunkReasoning, Signature: "sig3"},
	), "bedrock", "openai"))
	var envs []string
	for _, c := range chunks {
		if c.Signature != "" {
			envs = append(envs, c.Signature)
		}
	}
	if s, ok := wire.OpenSignature(envs[0]); !ok || s.Digest != digestOf(t1) || s.Length != len(t1) {
		t.Fatalf("the first envelope opens as %v: digest %x, length %d", ok, s.Digest, s.Length)
	}
	var details []string
	for k, e := range envs {
		details = append(details, fmt.Sprintf(`{"type":"reasoning.text","text":"","signature":%q,"format":"anthropic-claude-v1","index":%d}`, e, k))
	}
	call := chat.Block{Type: chat.TypeToolUse, ID: "c1", Name: "f", Input: json.RawMessage(`{}`)}
	for _, c := range []struct {
		name   string
		joined string
		want   []string // the thinking restored, in order
	}{
		{"as streamed", t1 + t2 + t3, []string{t1, t2, t3}},
		{"in two reasoning blocks", "", []string{t1, t2, t3}},
		{"the last text changed", t1 + t2 + t3[1:] + "x", []string{t1, t2}},
		{"the short text changed", t1 + "B" + t2[1:] + t3, []string{t1, t2, t3}},
		{"the first text changed", "x" + t1[1:] + t2 + t3, []string{t2, t3}},
		{"a text missing", t1 + t3, []string{t1, t2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := []chat.Block{{Type: chat.TypeReasoning, Text: c.joined}}
			if c.joined == "" {
				in = []chat.Block{{Type: chat.TypeReasoning, Text: t1 + t2[:5]}, {Type: chat.TypeReasoning, Text: t2[5:] + t3}}
			}
			req := assistant(append(in, call)...)
			req.Messages[1].ReasoningDetails = json.RawMessage("[" + strings.Join(details, ",") + "]")
			warns := wire.ClaimSignatures(&req, "openai", "bedrock")
			var got []string
			for _, b := range req.Messages[1].Content.Blocks {
				if b.Type == chat.TypeThinking {
					got = append(got, b.Thinking)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("restored %d texts (%v), want %d", len(got), lens(got), len(c.want))
			}
			if (len(warns) == 0) != (len(c.want) == 3) {
				t.Fatalf("warnings %v", warns)
			}
		})
	}
}

func lens(ss []string) []int {
	var out []int
	for _, s := range ss {
		out = append(out, len(s))
	}
	return out
}

// TestClaimLongThinkingBounded: details that repeat an envelope giving
// its text's length take the message's reasoning at most once over (each
// part of it for one detail), and the first that fails ends the reading.
func TestClaimLongThinkingBounded(t *testing.T) {
	long := strings.Repeat("t", wire.MaxSealedSignature)
	env := wire.Sealed{Home: wire.HomeBedrock, Signature: anthropicSig, Digest: digestOf(long), Length: len(long)}.Seal()
	if s, ok := wire.OpenSignature(env); !ok || s.Length != len(long) {
		t.Fatalf("opened %v, length %d", ok, s.Length)
	}
	d := make([]string, 64)
	for k := range d {
		d[k] = `{"type":"reasoning.encrypted","data":"` + env + `"}`
	}
	for _, text := range []string{long, long + long, "x" + long[1:] + long} {
		req := assistant(chat.Block{Type: chat.TypeReasoning, Text: text}, chat.Block{Type: chat.TypeText, Text: "answer"})
		req.Messages[1].ReasoningDetails = json.RawMessage("[" + strings.Join(d, ",") + "]")
		warns := wire.ClaimSignatures(&req, "openai", "bedrock")
		total := 0
		for _, b := range req.Messages[1].Content.Blocks {
			if b.Type == chat.TypeThinking {
				total += len(b.Thinking)
			}
		}
		if total > len(text) || len(warns) == 0 {
			t.Fatalf("%d bytes of thinking restored from a text of %d; warnings %v", total, len(text), warns)
		}
	}
}

// TestClaimGeminiThoughtsForBedrock: a Gemini client hands Bedrock's
// signed thinking back as thought parts (one per streamed chunk, each in
// a model content of its own, or none when it keeps only signatures) and
// the signature, whose envelope carries the text, on the call after them.
// For Bedrock the thought_signature becomes the thinking block it was, in
// its place, and the thought parts whose text joined is that text are
// left out (with the assistant messages they leave empty); thought parts
// of other text stay. Other upstreams get the blocks as they were.
func TestClaimGeminiThoughtsForBedrock(t *testing.T) {
	env := wire.SealSignature(wire.HomeBedrock, anthropicSig, "Let me look.")
	red := wire.SealRedactedFor(wire.HomeBedrock, "ZW5j")
	call := chat.Block{Type: chat.TypeToolUse, ID: "c1", Name: "f", Input: json.RawMessage(`{}`)}
	sigBlock := chat.Block{Type: chat.TypeThoughtSignature, Signature: env}
	thinking := chat.Block{Type: chat.TypeThinking, Thinking: "Let me look.", Signature: env}
	reasoning := func(s string) chat.Block { return chat.Block{Type: chat.TypeReasoning, Text: s} }
	asst := func(blocks ...chat.Block) chat.Message {
		return chat.Message{Role: chat.Assistant, Content: chat.Content{Blocks: blocks}}
	}
	user := chat.Message{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}}
	result := chat.Message{Role: chat.User, Content: chat.Content{Blocks: []chat.Block{{Type: chat.TypeToolResult, ToolUseID: "c1"}}}}
	for _, c := range []struct {
		name     string
		in, want []chat.Message
	}{
		{"streamed", []chat.Message{user, asst(chat.Block{Type: chat.TypeRedactedThinking, Data: red}), asst(reasoning("Let ")), asst(reasoning("me look.")), asst(sigBlock, call), result},
			[]chat.Message{user, asst(chat.Block{Type: chat.TypeRedactedThinking, Data: red}), asst(thinking, call), result}},
		{"unary", []chat.Message{user, asst(reasoning("Let me look."), sigBlock, call), result},
			[]chat.Message{user, asst(thinking, call), result}},
		{"thoughts left out", []chat.Message{user, asst(sigBlock, call), result},
			[]chat.Message{user, asst(thinking, call), result}},
		{"other thoughts", []chat.Message{user, asst(reasoning("Something else."), sigBlock, call), result},
			[]chat.Message{user, asst(reasoning("Something else."), thinking, call), result}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, up := range []string{"bedrock", "anthropic"} {
				req := chat.Request{Model: "m", Messages: slices.Clone(c.in)}
				before, _ := json.Marshal(c.in)
				wire.ClaimSignatures(&req, "gemini", up)
				if after, _ := json.Marshal(c.in); string(after) != string(before) {
					t.Fatalf("the caller's messages changed: %s", after)
				}
				got, _ := json.Marshal(req.Messages)
				if up != "bedrock" {
					// The Anthropic encoder rebuilds its own; Bedrock's
					// envelope is its to refuse.
					if strings.Contains(string(got), `"type":"thinking"`) || !strings.Contains(string(got), `"type":"thought_signature"`) {
						t.Fatalf("%s: got %s", up, got)
					}
					continue
				}
				if w, _ := json.Marshal(c.want); string(got) != string(w) {
					t.Fatalf("%s: got %s\nwant %s", up, got, w)
				}
			}
		})
	}
}
