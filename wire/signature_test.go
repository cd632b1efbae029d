package wire_test

import (
	"encoding/base64"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// Signatures shaped like the providers' own: base64 of protobuf bytes
// (Gemini's), Anthropic's, a Responses encrypted_content.
const (
	geminiSig    = "CiQBjz1rX1nN3r2sYVfLxkQ9H0m3Jq1dU5pUwAq5o8tVJq3mXo0="
	anthropicSig = "EqQBCkgIARABGAIiQL8jX3Jx0p9z0Q1bQk7cX2s5gYw3dV4lP0m9u2tYb1c8e3f4g5h6i7j8k9l0m1n2o3p4q5r6s7t8u9v0w1x2y3z4=="
	openaiSig    = "gAAAAABoZ9x1c2VjcmV0LXJlYXNvbmluZy1ieXRlcy1oZXJl"
)

func TestSealOpen(t *testing.T) {
	cases := []struct {
		name           string
		sealed         string
		home, sig, txt string
		redacted       bool
	}{
		{"anthropic with text", wire.SealSignature(wire.HomeAnthropic, anthropicSig, "I should call\x00 the tool."), wire.HomeAnthropic, anthropicSig, "I should call\x00 the tool.", false},
		{"anthropic without text", wire.SealSignature(wire.HomeAnthropic, anthropicSig, ""), wire.HomeAnthropic, anthropicSig, "", false},
		{"gemini ignores text", wire.SealSignature(wire.HomeGemini, geminiSig, "ignored"), wire.HomeGemini, geminiSig, "", false},
		{"responses", wire.SealSignature(wire.HomeResponses, openaiSig, ""), wire.HomeResponses, openaiSig, "", false},
		{"bedrock with text", wire.SealSignature(wire.HomeBedrock, anthropicSig, "The signed text."), wire.HomeBedrock, anthropicSig, "The signed text.", false},
		{"bedrock without text", wire.SealSignature(wire.HomeBedrock, anthropicSig, ""), wire.HomeBedrock, anthropicSig, "", false},
		{"redacted", wire.SealRedacted("opaque\x00data"), wire.HomeAnthropic, "opaque\x00data", "", true},
		{"anthropic redacted for anthropic", wire.SealRedactedFor(wire.HomeAnthropic, "opaque"), wire.HomeAnthropic, "opaque", "", true},
		{"bedrock redacted", wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ=="), wire.HomeBedrock, "ZGF0YQ==", "", true},
		{"bedrock text with a 1 byte", wire.SealSignature(wire.HomeBedrock, anthropicSig, "a\x01b"), wire.HomeBedrock, anthropicSig, "a\x01b", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := wire.Sealed{Home: c.home, Signature: c.sig, Thinking: c.txt, Redacted: c.redacted}
			raw, err := base64.StdEncoding.DecodeString(c.sealed)
			if err != nil {
				t.Fatalf("not standard base64: %v", err)
			}
			// A client may decode the bytes and encode them again in
			// the other alphabet, with or without padding.
			for _, s := range []string{c.sealed, base64.URLEncoding.EncodeToString(raw),
				base64.RawURLEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw)} {
				got, ok := wire.OpenSignature(s)
				if !ok || got != want {
					t.Fatalf("OpenSignature(%q) = %+v, %v; want %+v", s, got, ok, want)
				}
			}
		})
	}
}

func TestOpenSignatureRefuses(t *testing.T) {
	prefix := wire.SealSignature(wire.HomeGemini, "x", "")[:8]
	long := wire.SealSignature(wire.HomeGemini, strings.Repeat("s", wire.MaxSealedSignature), "")
	for name, s := range map[string]string{
		"empty":             "",
		"gemini's own":      geminiSig,
		"anthropic's own":   anthropicSig,
		"responses' own":    openaiSig,
		"placeholder":       "skip_thought_signature_validator",
		"prefix only":       prefix,
		"not base64":        prefix + "!!!!",
		"mixed alphabets":   wire.SealSignature(wire.HomeGemini, "\xfb\xff\xfe\xfb\xff", "") + "-_",
		"unknown kind":      base64.StdEncoding.EncodeToString([]byte("ctxk\x01zpayload")),
		"unknown version":   base64.StdEncoding.EncodeToString([]byte("ctxk\x02apayload")),
		"empty payload":     base64.StdEncoding.EncodeToString([]byte("ctxk\x01a\x00text")),
		"longer than bound": long,
	} {
		if got, ok := wire.OpenSignature(s); ok {
			t.Errorf("%s: opened %q as %+v", name, s[:min(len(s), 40)], got)
		}
	}
}

func TestSignatureFor(t *testing.T) {
	a := wire.SealSignature(wire.HomeAnthropic, anthropicSig, "text")
	g := wire.SealSignature(wire.HomeGemini, geminiSig, "")
	r := wire.SealRedacted("data")
	for _, c := range []struct {
		home, in, want string
		ok             bool
	}{
		{wire.HomeGemini, geminiSig, geminiSig, true}, // unsealed: as it is
		{wire.HomeGemini, g, geminiSig, true},
		{wire.HomeGemini, a, "", false},
		{wire.HomeGemini, r, "", false},
		{wire.HomeAnthropic, a, anthropicSig, true},
		{wire.HomeAnthropic, r, "", false}, // redacted data is no signature
		{wire.HomeAnthropic, g, "", false},
		{wire.HomeResponses, g, "", false},
	} {
		got, ok := wire.SignatureFor(c.home, c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("SignatureFor(%s, %.20q) = %q, %v; want %q, %v", c.home, c.in, got, ok, c.want, c.ok)
		}
	}
}

func sigStream(chunks ...chat.Chunk) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		yield(chat.Chunk{}, errors.New("upstream broke"))
	}
}

func collectChunks(t *testing.T, s iter.Seq2[chat.Chunk, error]) []chat.Chunk {
	t.Helper()
	var out []chat.Chunk
	for c, err := range s {
		if err != nil {
			if err.Error() != "upstream broke" {
				t.Fatalf("error %v", err)
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

func TestSealChunks(t *testing.T) {
	stream := []chat.Chunk{
		{Type: chat.ChunkReasoning, Text: "Let me "},
		{Type: chat.ChunkReasoning, Text: "look."},
		{Type: chat.ChunkReasoning, Signature: "sig1"},
		{Type: chat.ChunkReasoning, Redacted: "enc"},
		{Type: chat.ChunkReasoning, Text: "Again.", Signature: "sig2"},
		{Type: chat.ChunkText, Text: "hi"},
	}
	t.Run("anthropic to gemini", func(t *testing.T) {
		got := collectChunks(t, wire.SealChunks(sigStream(stream...), "anthropic", "gemini"))
		want := slices.Clone(stream)
		want[2].Signature = wire.SealSignature(wire.HomeAnthropic, "sig1", "Let me look.")
		want[3].Redacted = wire.SealRedacted("enc")
		want[4].Signature = wire.SealSignature(wire.HomeAnthropic, "sig2", "Again.")
		if !slices.Equal(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
	// A Gemini client of Bedrock gets its redactedContent sealed in place
	// (the Gemini dialect writes it as a thought part's signature), and
	// the signatures sealed with the text they sign, as Anthropic's.
	t.Run("bedrock to gemini", func(t *testing.T) {
		got := collectChunks(t, wire.SealChunks(sigStream(stream...), "bedrock", "gemini"))
		want := slices.Clone(stream)
		want[2].Signature = wire.SealSignature(wire.HomeBedrock, "sig1", "Let me look.")
		want[3].Redacted = wire.SealRedactedFor(wire.HomeBedrock, "enc")
		want[4].Signature = wire.SealSignature(wire.HomeBedrock, "sig2", "Again.")
		if !slices.Equal(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
	t.Run("gemini to anthropic", func(t *testing.T) {
		got := collectChunks(t, wire.SealChunks(sigStream(stream...), "gemini", "anthropic"))
		if got[2].Signature != wire.SealSignature(wire.HomeGemini, "sig1", "") || got[3].Redacted != "enc" {
			t.Fatalf("got %+v", got)
		}
	})
	// A Chat Completions client, whose dialect is no signature home, gets
	// every home's sealed; Anthropic's and Bedrock's envelopes carry the
	// text they sign (the client's streamed reasoning may not come back
	// as it was), and Anthropic's redacted data and Bedrock's
	// redactedContent are sealed in place, each as its home's.
	for _, up := range []string{"anthropic", "bedrock"} {
		t.Run(up+" to openai", func(t *testing.T) {
			got := collectChunks(t, wire.SealChunks(sigStream(stream...), up, "openai"))
			want := slices.Clone(stream)
			want[2].Signature = wire.SealSignature(up, "sig1", "Let me look.")
			want[3].Redacted = wire.SealRedactedFor(up, "enc")
			if s, _ := wire.OpenSignature(got[3].Redacted); s.Home != up || !s.Redacted || s.Signature != "enc" {
				t.Fatalf("redacted sealed as %+v", s)
			}
			want[4].Signature = wire.SealSignature(up, "sig2", "Again.")
			if !slices.Equal(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
	// A Responses client holds redacted thinking as encrypted_content,
	// which names no provider: sealed in place, each as its home's.
	for _, up := range []string{"anthropic", "bedrock"} {
		t.Run(up+" redacted to responses", func(t *testing.T) {
			got := collectChunks(t, wire.SealChunks(sigStream(stream...), up, "responses"))
			want := slices.Clone(stream)
			want[2].Signature = wire.SealSignature(up, "sig1", "")
			want[3].Redacted = wire.SealRedactedFor(up, "enc")
			want[4].Signature = wire.SealSignature(up, "sig2", "")
			if !slices.Equal(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
	// Bedrock's signatures are its own, and so is its redacted content,
	// which an Anthropic client would hold as its own redacted_thinking.
	for _, pair := range [][2]string{{"bedrock", "anthropic"}, {"responses", "openai"}, {"gemini", "openai"}} {
		t.Run(pair[0]+" to "+pair[1], func(t *testing.T) {
			got := collectChunks(t, wire.SealChunks(sigStream(stream...), pair[0], pair[1]))
			want := slices.Clone(stream)
			want[2].Signature = wire.SealSignature(pair[0], "sig1", "")
			if pair[0] == "bedrock" {
				want[3].Redacted = wire.SealRedactedFor(wire.HomeBedrock, "enc")
			}
			want[4].Signature = wire.SealSignature(pair[0], "sig2", "")
			if !slices.Equal(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
	for _, pair := range [][2]string{{"anthropic", "anthropic"}, {"gemini", "gemini"}, {"responses", "responses"},
		{"openai", "gemini"}, {"mistral", "anthropic"}, {"openai", "openai"}} {
		t.Run(pair[0]+" to "+pair[1]+" unchanged", func(t *testing.T) {
			got := collectChunks(t, wire.SealChunks(sigStream(stream...), pair[0], pair[1]))
			if !slices.Equal(got, stream) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestSealResponse(t *testing.T) {
	res := chat.Response{Content: []chat.Block{
		{Type: chat.TypeReasoning, Text: "Plan: "},
		{Type: chat.TypeThinking, Thinking: "call f", Signature: "sig1"},
		{Type: chat.TypeRedactedThinking, Data: "enc"},
		{Type: chat.TypeThoughtSignature, Signature: "sig2"},
		{Type: chat.TypeToolUse, ID: "t1", Name: "f"},
	}}
	got := res
	got.Content = slices.Clone(res.Content)
	wire.SealResponse(&got, "anthropic", "gemini")
	want := []chat.Block{
		res.Content[0],
		{Type: chat.TypeThinking, Thinking: "call f", Signature: wire.SealSignature(wire.HomeAnthropic, "sig1", "Plan: call f")},
		{Type: chat.TypeRedactedThinking, Data: wire.SealRedacted("enc")},
		{Type: chat.TypeThoughtSignature, Signature: wire.SealSignature(wire.HomeAnthropic, "sig2", "")},
		res.Content[4],
	}
	for i := range want {
		if got.Content[i].Type != want[i].Type || got.Content[i].Signature != want[i].Signature || got.Content[i].Data != want[i].Data {
			t.Fatalf("block %d: got %+v, want %+v", i, got.Content[i], want[i])
		}
	}
	same := res
	same.Content = slices.Clone(res.Content)
	wire.SealResponse(&same, "gemini", "gemini")
	for i := range same.Content {
		if same.Content[i].Signature != res.Content[i].Signature {
			t.Fatalf("gemini to gemini changed block %d: %+v", i, same.Content[i])
		}
	}
	// A Gemini client of Bedrock: the redactedContent sealed in place, of
	// Bedrock's own kind.
	br := res
	br.Content = slices.Clone(res.Content)
	br.Content[2].Data = "ZW5j"
	wire.SealResponse(&br, "bedrock", "gemini")
	if b := br.Content[2]; b.Type != chat.TypeRedactedThinking || b.Data != wire.SealRedactedFor(wire.HomeBedrock, "ZW5j") {
		t.Fatalf("bedrock to gemini: block 2 %+v", b)
	}
}

// FuzzOpenSignature: a client can send any thoughtSignature, signature or
// encrypted_content; opening it never panics, stays within the bound, and
// what opens seals back to an envelope that opens the same.
func FuzzOpenSignature(f *testing.F) {
	for _, s := range []string{"", geminiSig, anthropicSig, openaiSig, "skip_thought_signature_validator",
		wire.SealSignature(wire.HomeAnthropic, anthropicSig, "text"), wire.SealSignature(wire.HomeGemini, geminiSig, ""),
		wire.SealSignature(wire.HomeResponses, openaiSig, ""), wire.SealRedacted("data"), wire.SealSignature(wire.HomeBedrock, anthropicSig, ""),
		wire.SealRedactedFor(wire.HomeBedrock, "ZGF0YQ=="), wire.Sealed{Home: wire.HomeBedrock, Signature: anthropicSig, Digest: strings.Repeat("d", 32)}.Seal(),
		wire.Sealed{Home: wire.HomeAnthropic, Signature: anthropicSig, Digest: strings.Repeat("d", 32), Length: 5 << 20}.Seal(),
		base64.StdEncoding.EncodeToString([]byte("ctxk\x01bsig\x02" + strings.Repeat("d", 32) + "\xff\xff\xff\xff\xff\xff\xff\xff")),
		base64.StdEncoding.EncodeToString([]byte("ctxk\x01bsig\x01short digest")), base64.StdEncoding.EncodeToString([]byte("ctxk\x01dZGF0YQ==")),
		"Y3R4awFh", "Y3R4awFhAA", "Y3R4awFh-_", "Y3R4awFn====", "Y3R4awFvAAAA+/-_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := wire.OpenSignature(s)
		if !ok {
			if got != (wire.Sealed{}) {
				t.Fatalf("not opened but %+v", got)
			}
			return
		}
		if len(s) > wire.MaxSealedSignature || got.Signature == "" {
			t.Fatalf("opened %+v from %d bytes", got, len(s))
		}
		if got.Digest != "" && (got.Thinking != "" || len(got.Digest) != 32 || got.Redacted) {
			t.Fatalf("opened %+v", got)
		}
		again := got.Seal()
		back, ok := wire.OpenSignature(again)
		if !ok || back != got {
			t.Fatalf("resealed %+v opens as %+v, %v", got, back, ok)
		}
	})
}

// TestSealBounds: an envelope never grows past MaxSealedSignature, so
// OpenSignature opens every envelope ctxkit gives: thinking too long to
// carry is carried as its SHA-256 (the signature is still sealed), a
// signature too long for an envelope is passed as it is, and a stream's
// thinking is hashed past the bound rather than held without end.
func TestSealBounds(t *testing.T) {
	big := strings.Repeat("t", wire.MaxSealedSignature)
	s := wire.SealSignature(wire.HomeAnthropic, anthropicSig, big)
	got, ok := wire.OpenSignature(s)
	if !ok || got.Signature != anthropicSig || got.Thinking != "" || got.Digest != digestOf(big) || len(s) > wire.MaxSealedSignature {
		t.Fatalf("with thinking too long: %d bytes, opened %v, thinking of %d, digest %x", len(s), ok, len(got.Thinking), got.Digest)
	}
	if s := wire.SealRedactedFor(wire.HomeBedrock, big); s != big {
		t.Fatal("Bedrock's redacted content too long for an envelope was changed")
	}
	for _, home := range []string{wire.HomeGemini, wire.HomeResponses, "openai"} {
		if s := wire.SealRedactedFor(home, "data"); s != "data" {
			t.Fatalf("%s has no redacted thinking, and its data was sealed: %s", home, s)
		}
	}
	if s := wire.SealSignature(wire.HomeGemini, big, ""); s != big {
		t.Fatal("a signature too long for an envelope was changed")
	}
	if s := wire.SealRedacted(big); s != big {
		t.Fatal("redacted data too long for an envelope was changed")
	}
	half := strings.Repeat("t", wire.MaxSealedSignature/2+1)
	chunks := collectChunks(t, wire.SealChunks(sigStream(
		chat.Chunk{Type: chat.ChunkReasoning, Text: half},
		chat.Chunk{Type: chat.ChunkReasoning, Text: half},
		chat.Chunk{Type: chat.ChunkReasoning, Signature: "sig1"},
		chat.Chunk{Type: chat.ChunkReasoning, Text: "short"},
		chat.Chunk{Type: chat.ChunkReasoning, Signature: "sig2"},
	), "anthropic", "gemini"))
	first, _ := wire.OpenSignature(chunks[2].Signature)
	second, _ := wire.OpenSignature(chunks[4].Signature)
	if first.Signature != "sig1" || first.Thinking != "" || first.Digest != digestOf(half+half) || second.Signature != "sig2" || second.Thinking != "short" || second.Digest != "" {
		t.Fatalf("sealed %+v and %+v", first, second)
	}
}

// TestSealLeavesOutUnsealable: a signature or redacted data too long for
// an envelope is not handed to a client of another dialect as it came
// (it would come back as that dialect's own provider's and be sent
// there): streamed, the chunk loses it; collected, a signature block or
// redacted block goes, a thinking block keeps its text without it.
func TestSealLeavesOutUnsealable(t *testing.T) {
	big := strings.Repeat("s", wire.MaxSealedSignature)
	for _, c := range []struct{ up, dialect string }{
		{"anthropic", "openai"}, {"bedrock", "openai"}, {"bedrock", "anthropic"}, {"anthropic", "gemini"},
		{"anthropic", "responses"}, {"gemini", "anthropic"},
	} {
		chunks := collectChunks(t, wire.SealChunks(sigStream(
			chat.Chunk{Type: chat.ChunkReasoning, Text: "thought", Signature: big},
			chat.Chunk{Type: chat.ChunkReasoning, Redacted: big},
			chat.Chunk{Type: chat.ChunkText, Text: "hi"},
		), c.up, c.dialect))
		for _, ch := range chunks {
			if strings.Contains(ch.Signature, big[:64]) || strings.Contains(ch.Redacted, big[:64]) && c.up != "gemini" {
				t.Errorf("%s to %s: streamed, the unsealable bytes reached the client: %d / %d bytes", c.up, c.dialect, len(ch.Signature), len(ch.Redacted))
			}
		}
		if chunks[0].Text != "thought" || chunks[2].Text != "hi" {
			t.Errorf("%s to %s: the text was lost: %+v", c.up, c.dialect, chunks)
		}
		res := &chat.Response{Content: []chat.Block{
			{Type: chat.TypeThinking, Thinking: "thought", Signature: big},
			{Type: chat.TypeRedactedThinking, Data: big},
			{Type: chat.TypeThoughtSignature, Signature: big},
			{Type: chat.TypeText, Text: "hi"},
		}}
		wire.SealResponse(res, c.up, c.dialect)
		for _, b := range res.Content {
			if strings.Contains(b.Signature, big[:64]) || strings.Contains(b.Data, big[:64]) && c.up != "gemini" {
				t.Errorf("%s to %s: collected, the unsealable bytes reached the client in a %s block", c.up, c.dialect, b.Type)
			}
		}
		if res.Content[0].Thinking != "thought" || res.Content[len(res.Content)-1].Text != "hi" {
			t.Errorf("%s to %s: the text was lost: %+v", c.up, c.dialect, res.Content)
		}
	}
}
