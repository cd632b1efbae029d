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

// orDetails are reasoning_details as OpenRouter writes them for Claude:
// an id, format and index on each, a redacted entry beside the signed
// one.
const orDetails = `[{"type":"reasoning.encrypted","data":"EmwKAhgBredacted","id":"rd_0","format":"anthropic-claude-v1","index":0},` +
	`{"type":"reasoning.text","text":"Weather.","signature":"EqQBsig","id":"rd_1","format":"anthropic-claude-v1","index":1}]`

// TestOpenRouterPassthroughUnary: an OpenRouter answer passed to a
// Chat Completions client (openai upstream, openai dialect: nothing is
// sealed) should carry its reasoning_details as OpenRouter wrote them,
// so the client can hand them back unchanged, as OpenRouter asks.
func TestOpenRouterPassthroughUnary(t *testing.T) {
	up := `{"id":"gen-1","object":"chat.completion","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"ok","reasoning":"Weather.","reasoning_details":` + orDetails + `},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	res, err := openai.DecodeResponse([]byte(up))
	if err != nil {
		t.Fatal(err)
	}
	wire.SealResponse(&res, "openai", "openai")
	body, err := openai.EncodeResponse(res, "m", "id", 1)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Choices []struct {
			Message struct {
				ReasoningDetails json.RawMessage `json:"reasoning_details"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	var got, want bytes.Buffer
	json.Compact(&got, out.Choices[0].Message.ReasoningDetails)
	json.Compact(&want, []byte(orDetails))
	if got.String() != want.String() {
		t.Fatalf("reasoning_details\n got %s\nwant %s", got.String(), want.String())
	}
}

// TestOpenRouterPassthroughStream: the same passed on in a stream.
// OpenRouter streams each detail with its index; a client that merges by
// index (openai-python's stream helper) needs one on every entry of
// every delta after the first.
func TestOpenRouterPassthroughStream(t *testing.T) {
	up := "data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning\":\"\",\"reasoning_details\":[{\"type\":\"reasoning.encrypted\",\"data\":\"EmwKAhgBredacted\",\"id\":\"rd_0\",\"format\":\"anthropic-claude-v1\",\"index\":0}]}}]}\n\n" +
		"data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"Weather.\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"Weather.\",\"id\":\"rd_1\",\"format\":\"anthropic-claude-v1\",\"index\":1}]}}]}\n\n" +
		"data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"\",\"signature\":\"EqQBsig\",\"id\":\"rd_1\",\"format\":\"anthropic-claude-v1\",\"index\":1}]}}]}\n\n" +
		"data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	var out bytes.Buffer
	if err := openai.EncodeStream(&out, nil, "m", "id", 1, wire.SealChunks(openai.DecodeStream(strings.NewReader(up)), "openai", "openai")); err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, line := range strings.Split(out.String(), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					ReasoningDetails []map[string]any `json:"reasoning_details"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		for _, ch := range ev.Choices {
			for _, d := range ch.Delta.ReasoningDetails {
				deltas++
				if _, ok := d["index"]; !ok {
					t.Errorf("a passed-on detail without its index (a merging client fails on it): %v", d)
				}
				if d["format"] != "anthropic-claude-v1" {
					t.Errorf("a passed-on detail without OpenRouter's format: %v", d)
				}
			}
		}
	}
	if deltas < 2 {
		t.Fatalf("want the redacted and the signed detail: %s", out.String())
	}
}

// TestOpenRouterTwoSignedDetails: OpenRouter's answer with two
// signed thinking details (Claude thought twice) passed to a Chat
// Completions client should keep both signatures; the decoder reads a
// delta's details into one reasoning chunk and keeps only the last
// signature, with both texts joined under it.
func TestOpenRouterTwoSignedDetails(t *testing.T) {
	up := `{"id":"gen-1","object":"chat.completion","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"ok","reasoning_details":[` +
		`{"type":"reasoning.text","text":"First.","signature":"SIGone","format":"anthropic-claude-v1","index":0},` +
		`{"type":"reasoning.text","text":"Second.","signature":"SIGtwo","format":"anthropic-claude-v1","index":1}]},"finish_reason":"stop"}]}`
	res, err := openai.DecodeResponse([]byte(up))
	if err != nil {
		t.Fatal(err)
	}
	body, err := openai.EncodeResponse(res, "m", "id", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"SIGone"`) || !strings.Contains(string(body), `"SIGtwo"`) {
		t.Fatalf("a signature OpenRouter gave is lost: %s", body)
	}
}

// streamDetailDeltas encodes chunks and returns the reasoning_details of
// each delta that has any, and whether that delta had a finish_reason.
func streamDetailDeltas(t *testing.T, chunks []chat.Chunk) (lists [][]map[string]any, finish []bool) {
	t.Helper()
	var out bytes.Buffer
	if err := openai.EncodeStream(&out, nil, "m", "id", 1, seq(chunks)); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					ReasoningDetails []map[string]any `json:"reasoning_details"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		for _, ch := range ev.Choices {
			if ch.Delta.ReasoningDetails != nil {
				lists = append(lists, ch.Delta.ReasoningDetails)
				finish = append(finish, ch.FinishReason != nil)
			}
		}
	}
	return lists, finish
}

// TestStreamDetailsOnce: a stream writes its details once, indexed in
// order, with the finish_reason, or in a delta of their own when the
// stream has no stop; an OpenRouter stream's two signed thoughts keep
// their own texts, and a Gemini signature that came on a call names it.
func TestStreamDetailsOnce(t *testing.T) {
	gemini := wire.SealSignature(wire.HomeGemini, "CALLsig", "")
	for _, c := range []struct {
		name   string
		chunks []chat.Chunk
		finish bool
		want   []map[string]any // the keys checked of each detail
	}{
		{"two thoughts", []chat.Chunk{
			{Type: chat.ChunkReasoning, Text: "First."}, {Type: chat.ChunkReasoning, Signature: "SIGone"},
			{Type: chat.ChunkReasoning, Text: "Second."}, {Type: chat.ChunkReasoning, Signature: "SIGtwo"},
			{Type: chat.ChunkText, Text: "ok"}, {Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
		}, true, []map[string]any{{"text": "First.", "signature": "SIGone", "index": 0.0}, {"text": "Second.", "signature": "SIGtwo", "index": 1.0}}},
		{"no stop", []chat.Chunk{
			{Type: chat.ChunkReasoning, Redacted: "opaque"}, {Type: chat.ChunkText, Text: "cut"},
		}, false, []map[string]any{{"data": "opaque", "index": 0.0}}},
		{"gemini call", []chat.Chunk{
			{Type: chat.ChunkReasoning, Signature: gemini},
			{Type: chat.ChunkToolCallStart, Index: 0, ID: "call_1", Name: "f"}, {Type: chat.ChunkToolCallEnd, Index: 0, Arguments: "{}"},
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
		}, true, []map[string]any{{"data": gemini, "id": "call_1", "index": 0.0}}},
	} {
		lists, finish := streamDetailDeltas(t, c.chunks)
		if len(lists) != 1 || finish[0] != c.finish || len(lists[0]) != len(c.want) {
			t.Fatalf("%s: details %v (with finish_reason %v), want one delta of %d", c.name, lists, finish, len(c.want))
		}
		for k, w := range c.want {
			for key, v := range w {
				if lists[0][k][key] != v {
					t.Fatalf("%s: detail %d %v, want %s %v", c.name, k, lists[0][k], key, v)
				}
			}
		}
	}
}

// TestOpenRouterStreamTwoSignedDetails: OpenRouter streams two signed
// thoughts, each text then its signature under its own index; a Chat
// Completions client gets both, each signature with its own text.
func TestOpenRouterStreamTwoSignedDetails(t *testing.T) {
	ev := func(delta string) string {
		return "data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":" + delta + "}]}\n\n"
	}
	up := ev(`{"reasoning":"First.","reasoning_details":[{"type":"reasoning.text","text":"First.","id":"a","index":0}]}`) +
		ev(`{"reasoning":"","reasoning_details":[{"type":"reasoning.text","text":"","signature":"SIGone","id":"a","index":0}]}`) +
		ev(`{"reasoning":"Second.","reasoning_details":[{"type":"reasoning.text","text":"Second.","id":"b","index":1}]}`) +
		ev(`{"reasoning":"","reasoning_details":[{"type":"reasoning.text","text":"","signature":"SIGtwo","id":"b","index":1,"x-extra":true}]}`) +
		"data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	var chunks []chat.Chunk
	for c, err := range openai.DecodeStream(strings.NewReader(up)) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	lists, _ := streamDetailDeltas(t, chunks)
	if len(lists) != 1 || len(lists[0]) != 2 {
		t.Fatalf("details %v", lists)
	}
	for k, w := range []map[string]any{{"text": "First.", "signature": "SIGone", "id": "a"}, {"text": "Second.", "signature": "SIGtwo", "id": "b", "x-extra": true}} {
		for key, v := range w {
			if lists[0][k][key] != v {
				t.Fatalf("detail %d %v, want %s %v", k, lists[0][k], key, v)
			}
		}
	}
}
