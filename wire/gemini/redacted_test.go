package gemini_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/gemini"
)

// redactedParts are the model parts a Gemini client gets for res, unary
// or streamed (all the stream's parts, in order).
func redactedParts(t *testing.T, res chat.Response, chunks []chat.Chunk, stream bool) []gemini.Part {
	t.Helper()
	type body struct {
		Candidates []struct {
			Content gemini.Content `json:"content"`
		} `json:"candidates"`
	}
	var bodies []body
	if stream {
		out, err := writeStream(t, false, chunks, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &bodies); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	} else {
		data, err := gemini.Dialect().Response(res, outgoing(false))
		if err != nil {
			t.Fatal(err)
		}
		var b body
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	var parts []gemini.Part
	for _, b := range bodies {
		for _, p := range b.Candidates[0].Content.Parts {
			if p != (gemini.Part{}) {
				parts = append(parts, p)
			}
		}
	}
	return parts
}

// TestRedactedThinkingRoundTrip: redacted thinking the gateway sealed
// (Bedrock's redactedContent, Anthropic's redacted_thinking) is written,
// unary and streamed, in its place as a thought part (text
// RedactedThought) whose thoughtSignature is the envelope, the thinking's
// signature still on the
// call; handed back in the history it is read as the redacted_thinking
// block it was, which ClaimSignatures keeps for the provider that made
// it only, and drops with a warning for any other (a Gemini upstream
// never gets the envelope). Unsealed redacted data names no provider and
// is not written.
func TestRedactedThinkingRoundTrip(t *testing.T) {
	for _, home := range []string{wire.HomeBedrock, wire.HomeAnthropic} {
		env := wire.SealRedactedFor(home, "ZW5jcnlwdGVk")
		sig := wire.SealSignature(home, "sig", "")
		res := chat.Response{Content: []chat.Block{
			{Type: chat.TypeRedactedThinking, Data: env},
			{Type: chat.TypeRedactedThinking, Data: "bm90IHNlYWxlZA=="}, // unsealed: left out
			{Type: chat.TypeThinking, Thinking: "Look it up.", Signature: sig},
			{Type: chat.TypeToolUse, ID: "t1", Name: "f", Input: json.RawMessage(`{}`)},
		}, Stop: chat.Stop{Reason: chat.StopToolUse}}
		chunks := []chat.Chunk{
			{Type: chat.ChunkReasoning, Redacted: env},
			{Type: chat.ChunkReasoning, Redacted: "bm90IHNlYWxlZA=="},
			{Type: chat.ChunkReasoning, Text: "Look it up."},
			{Type: chat.ChunkReasoning, Signature: sig},
			{Type: chat.ChunkToolCallStart, Index: 0, ID: "t1", Name: "f"},
			{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: "{}"},
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
		}
		for _, stream := range []bool{false, true} {
			name := home + map[bool]string{false: " unary", true: " stream"}[stream]
			parts := redactedParts(t, res, chunks, stream)
			want := []gemini.Part{{Text: gemini.RedactedThought, Thought: true, ThoughtSignature: env}, {Text: "Look it up.", Thought: true},
				{ThoughtSignature: sig, FunctionCall: parts[len(parts)-1].FunctionCall}}
			if len(parts) != len(want) || parts[0] != want[0] || parts[1] != want[1] || parts[2].ThoughtSignature != sig || parts[2].FunctionCall == nil {
				t.Fatalf("%s: parts %+v", name, parts)
			}
			history, _ := json.Marshal(map[string]any{"contents": []any{
				map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Weather?"}}},
				map[string]any{"role": "model", "parts": parts},
				map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"id": "t1", "name": "f", "response": map[string]any{"output": "Sunny"}}}}},
			}})
			req, err := gemini.Dialect().Decode(history, wire.Incoming{Model: "m"})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if b := req.Messages[1].Content.Blocks[0]; b.Type != chat.TypeRedactedThinking || b.Data != env {
				t.Fatalf("%s: the assistant message starts with %+v", name, b)
			}
			for _, up := range []string{"bedrock", "anthropic", "gemini", "responses", "openai"} {
				r := req
				warns := wire.ClaimSignatures(&r, "gemini", up)
				first := r.Messages[1].Content.Blocks[0]
				kept := first.Type == chat.TypeRedactedThinking && first.Data == env
				if kept != (up == home) {
					t.Errorf("%s to %s: kept %v, first block %+v", name, up, kept, first)
				}
				warned := false
				for _, w := range warns {
					warned = warned || strings.Contains(w.Message, "redacted thinking made by "+home)
				}
				if warned == (up == home) {
					t.Errorf("%s to %s: warnings %v", name, up, warns)
				}
			}
		}
	}
}

// TestDecodeRedactedOnlyWhenSealed: only a thought part of no text or
// RedactedThought whose signature is an envelope of redacted thinking is
// read as redacted thinking; any other signed thought stays a thinking
// block.
func TestDecodeRedactedOnlyWhenSealed(t *testing.T) {
	red := wire.SealRedactedFor(wire.HomeBedrock, "ZW5j")
	for _, c := range []struct {
		part string
		want chat.Block
	}{
		{`{"thought":true,"thoughtSignature":"` + red + `"}`, chat.Block{Type: chat.TypeRedactedThinking, Data: red}},
		{`{"thought":true,"text":"` + gemini.RedactedThought + `","thoughtSignature":"` + red + `"}`, chat.Block{Type: chat.TypeRedactedThinking, Data: red}},
		{`{"thought":true,"text":"t","thoughtSignature":"` + red + `"}`, chat.Block{Type: chat.TypeThinking, Thinking: "t", Signature: red}},
		{`{"thought":true,"thoughtSignature":"c2ln"}`, chat.Block{Type: chat.TypeThinking, Signature: "c2ln"}},
	} {
		req, err := gemini.Dialect().Decode([]byte(`{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[`+c.part+`,{"text":"a"}]}]}`), wire.Incoming{Model: "m"})
		if err != nil {
			t.Fatalf("%s: %v", c.part, err)
		}
		b := req.Messages[1].Content.Blocks[0]
		if b.Type != c.want.Type || b.Data != c.want.Data || b.Thinking != c.want.Thinking || b.Signature != c.want.Signature {
			t.Errorf("%s: got %+v", c.part, b)
		}
	}
}

// TestDecodeRedactedPlaceholderWithoutEnvelope: a thought part of
// RedactedThought with no signature is the placeholder the dialect wrote
// for redacted thinking, come back without its envelope: it holds no
// reasoning of any model's, and no upstream gets the placeholder as one
// (Converse would take it as the model's unsigned reasoning, Gemini as
// its thought). A thought of other text is plain reasoning still.
func TestDecodeRedactedPlaceholderWithoutEnvelope(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[` +
		`{"thought":true,"text":"` + gemini.RedactedThought + `"},{"thought":true,"text":"Think."},{"text":"a"}]},` +
		`{"role":"user","parts":[{"text":"q2"}]}]}`
	req, err := gemini.Dialect().Decode([]byte(body), wire.Incoming{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	got := req.Messages[1].Content.Blocks
	if len(got) != 2 || got[0].Type != chat.TypeReasoning || got[0].Text != "Think." || got[1].Type != chat.TypeText {
		t.Fatalf("blocks %+v, want the reasoning Think. and the text", got)
	}
	for _, up := range []string{"gemini", "bedrock", "anthropic"} {
		r := req
		wire.ClaimSignatures(&r, "gemini", up)
		for _, b := range r.Messages[1].Content.Blocks {
			if b.Text == gemini.RedactedThought || b.Thinking == gemini.RedactedThought {
				t.Errorf("%s gets the placeholder as reasoning: %+v", up, b)
			}
		}
	}
}
