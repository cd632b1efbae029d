package openai_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// upstreamTurn is a tool-calling turn as each signature home's decoder
// gives it: Anthropic's and Bedrock's thinking signed at its end
// (redacted thinking beside it for Anthropic), Gemini's signature on the
// call, the Responses API's encrypted reasoning after its summary.
func upstreamTurn(home string) []chat.Chunk {
	call := []chat.Chunk{
		{Type: chat.ChunkToolCallStart, Index: 0, ID: "call_1", Name: "get_weather"},
		{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"city":"Paris"}`},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
	}
	var head []chat.Chunk
	switch home {
	case wire.HomeAnthropic:
		head = []chat.Chunk{{Type: chat.ChunkReasoning, Redacted: "opaque"},
			{Type: chat.ChunkReasoning, Text: "The user wants "}, {Type: chat.ChunkReasoning, Text: "the weather."},
			{Type: chat.ChunkReasoning, Signature: "EqQBsig"}}
	case wire.HomeBedrock:
		head = []chat.Chunk{{Type: chat.ChunkReasoning, Text: "Weather, "}, {Type: chat.ChunkReasoning, Text: "then."},
			{Type: chat.ChunkReasoning, Signature: "bedrock-sig"}}
	case wire.HomeGemini:
		head = []chat.Chunk{{Type: chat.ChunkReasoning, Text: "Thinking about Paris."},
			{Type: chat.ChunkReasoning, Signature: "CiQBgemini"}}
	case wire.HomeResponses:
		head = []chat.Chunk{{Type: chat.ChunkReasoning, Text: "Summary."}, {Type: chat.ChunkReasoning, Signature: "gAAAAenc"}}
	}
	return append(head, call...)
}

// wantBack is what the upstream's encoder is handed for the assistant
// message of the next turn.
func wantBack(home string, sealed []chat.Chunk) []chat.Block {
	sig := func() string {
		for _, c := range sealed {
			if c.Signature != "" {
				return c.Signature
			}
		}
		return ""
	}()
	call := chat.Block{Type: chat.TypeToolUse, ID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}
	switch home {
	case wire.HomeAnthropic:
		return []chat.Block{{Type: chat.TypeRedactedThinking, Data: "opaque"},
			{Type: chat.TypeThinking, Thinking: "The user wants the weather.", Signature: sig}, call}
	case wire.HomeBedrock:
		return []chat.Block{{Type: chat.TypeThinking, Thinking: "Weather, then.", Signature: sig}, call}
	case wire.HomeGemini:
		return []chat.Block{{Type: chat.TypeReasoning, Text: "Thinking about Paris."}, {Type: chat.TypeThoughtSignature, Signature: sig}, call}
	}
	return []chat.Block{{Type: chat.TypeThinking, Signature: sig}, call}
}

// TestReasoningDetailsComeBack: a Chat Completions client of each
// signature home, unary or streamed, gets its turn's signed reasoning in
// reasoning_details, in OpenRouter's shapes, and handing the message back
// as it came (a streamed client appending every delta's details) gives
// that provider exactly the blocks it signed.
func TestReasoningDetailsComeBack(t *testing.T) {
	for _, home := range []string{wire.HomeAnthropic, wire.HomeBedrock, wire.HomeGemini, wire.HomeResponses} {
		for _, streamed := range []bool{false, true} {
			name := home + "/unary"
			if streamed {
				name = home + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				var sealed []chat.Chunk
				for c, err := range wire.SealChunks(seq(upstreamTurn(home)), home, "openai") {
					if err != nil {
						t.Fatal(err)
					}
					sealed = append(sealed, c)
				}
				msg := map[string]any{"role": "assistant"}
				var details []json.RawMessage
				if streamed {
					var out bytes.Buffer
					if err := openai.EncodeStream(&out, nil, "m", "id", 1, seq(sealed)); err != nil {
						t.Fatal(err)
					}
					var reasoning strings.Builder
					for _, line := range strings.Split(out.String(), "\n") {
						data, ok := strings.CutPrefix(line, "data: ")
						if !ok || data == "[DONE]" {
							continue
						}
						var ev struct {
							Choices []struct {
								Delta struct {
									ReasoningContent string            `json:"reasoning_content"`
									ReasoningDetails []json.RawMessage `json:"reasoning_details"`
								} `json:"delta"`
							} `json:"choices"`
						}
						if err := json.Unmarshal([]byte(data), &ev); err != nil {
							t.Fatal(err)
						}
						for _, ch := range ev.Choices {
							reasoning.WriteString(ch.Delta.ReasoningContent)
							details = append(details, ch.Delta.ReasoningDetails...)
						}
					}
					msg["reasoning_content"] = reasoning.String()
					msg["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function",
						"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}
					msg["content"] = nil
				} else {
					res, err := chat.Collect(seq(sealed))
					if err != nil {
						t.Fatal(err)
					}
					body, err := openai.EncodeResponse(res, "m", "id", 1)
					if err != nil {
						t.Fatal(err)
					}
					var out struct {
						Choices []struct {
							Message map[string]json.RawMessage `json:"message"`
						} `json:"choices"`
					}
					if err := json.Unmarshal(body, &out); err != nil {
						t.Fatal(err)
					}
					for k, v := range out.Choices[0].Message {
						msg[k] = v
					}
					json.Unmarshal(out.Choices[0].Message["reasoning_details"], &details)
				}
				format := map[string]string{wire.HomeAnthropic: "anthropic-claude-v1", wire.HomeBedrock: "anthropic-claude-v1",
					wire.HomeGemini: "google-gemini-v1", wire.HomeResponses: "openai-responses-v1"}[home]
				signed := 0
				for k, d := range details {
					var v struct {
						Type, Signature, Data, Format string
						Index                         *int
					}
					json.Unmarshal(d, &v)
					if v.Signature == "" && v.Data == "" {
						continue
					}
					signed++
					if v.Format != format || v.Index == nil || !streamed && *v.Index != k {
						t.Errorf("detail %d %s: want format %s and its index", k, d, format)
					}
					if (home == wire.HomeGemini || home == wire.HomeResponses) && v.Type != "reasoning.encrypted" {
						t.Errorf("detail %d %s: want reasoning.encrypted", k, d)
					}
				}
				if signed == 0 {
					t.Fatalf("no signed detail: %s", details)
				}
				msg["reasoning_details"] = details
				body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
					map[string]any{"role": "user", "content": "Weather in Paris?"}, msg,
					map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}}})
				req, err := openai.DecodeRequest(body)
				if err != nil {
					t.Fatal(err)
				}
				if warns := wire.ClaimSignatures(&req, "openai", home); len(warns) != 0 {
					t.Fatalf("warnings %v", warns)
				}
				m := req.Messages[1]
				got, _ := json.Marshal(m.Content.Blocks)
				want, _ := json.Marshal(wantBack(home, sealed))
				if string(got) != string(want) || m.ReasoningDetails != nil {
					t.Fatalf("blocks %s\nwant   %s\n(details %s)", got, want, m.ReasoningDetails)
				}
				// Another provider takes none of it, and says whose it was.
				other := wire.HomeGemini
				if home == wire.HomeGemini {
					other = wire.HomeAnthropic
				}
				req, _ = openai.DecodeRequest(body)
				warns := wire.ClaimSignatures(&req, "openai", other)
				if len(warns) != signed || !strings.Contains(warns[0].Message, "made by "+home) {
					t.Fatalf("warnings %v", warns)
				}
				for _, b := range req.Messages[1].Content.Blocks {
					if b.Signature != "" || b.Data != "" {
						t.Fatalf("%s gets %+v", other, b)
					}
				}
			})
		}
	}
}
