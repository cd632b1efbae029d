package openai_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
