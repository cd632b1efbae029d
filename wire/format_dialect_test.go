package wire_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// An OpenAI client asks a Bedrock upstream for structured output: the
// request goes out as a forced tool, and the answer (the tool's call)
// comes back to the client as its message's content with finish_reason
// stop, collected or streamed; an Anthropic client gets a text block.
func TestStructuredOutputThroughForcedTool(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"count"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"count","schema":{"type":"object","properties":{"n":{"type":"integer"}}}}}}`
	req, err := openai.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.CheckFields("openai", &req, "bedrock"); err != nil {
		t.Fatal(err)
	}
	tool := wire.FormatTool("bedrock", req.Format)
	p, _ := providers.Lookup("bedrock")
	wireBody, _, _, err := p.Encode(req, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := json.Marshal(wireBody)
	if !strings.Contains(string(sent), `"toolChoice":{"tool":{"name":"`+tool+`"}}`) {
		t.Fatalf("the format is not a forced tool:\n%s", sent)
	}

	// What the upstream answers, collected.
	res := chat.Response{
		Content: []chat.Block{{Type: chat.TypeToolUse, ID: "tooluse_1", Name: tool, Input: json.RawMessage(`{"n":3}`)}},
		Stop:    chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"},
	}
	out, err := openai.EncodeResponse(wire.ToolAsTextResponse(res, tool), "m", "chatcmpl-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []any  `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Choices[0]; c.Message.Content != `{"n":3}` || len(c.Message.ToolCalls) != 0 || c.FinishReason != "stop" {
		t.Errorf("collected: %s", out)
	}

	// And streamed.
	chunks := seq(
		chat.Chunk{Type: chat.ChunkToolCallStart, ID: "tooluse_1", Name: tool},
		chat.Chunk{Type: chat.ChunkToolCallDelta, Arguments: `{"n":`},
		chat.Chunk{Type: chat.ChunkToolCallDelta, Arguments: `3}`},
		chat.Chunk{Type: chat.ChunkToolCallEnd, Arguments: `{"n":3}`},
		chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"}},
	)
	var stream bytes.Buffer
	if err := openai.EncodeStream(&stream, func() {}, "m", "chatcmpl-1", 1, wire.ToolAsText(chunks, tool)); err != nil {
		t.Fatal(err)
	}
	s := stream.String()
	if strings.Contains(s, "tool_calls") || !strings.Contains(s, `"content":"{\"n\":"`) || !strings.Contains(s, `"finish_reason":"stop"`) {
		t.Errorf("streamed:\n%s", s)
	}

	var msg bytes.Buffer
	if err := anthropic.EncodeStream(&msg, func() {}, "m", "msg_1", wire.ToolAsText(seq(
		chat.Chunk{Type: chat.ChunkToolCallStart, ID: "t", Name: tool},
		chat.Chunk{Type: chat.ChunkToolCallEnd, Arguments: `{"n":3}`},
		chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
	), tool)); err != nil {
		t.Fatal(err)
	}
	if m := msg.String(); strings.Contains(m, "tool_use") || !strings.Contains(m, `"text_delta","text":"{\"n\":3}"`) || !strings.Contains(m, `"stop_reason":"end_turn"`) {
		t.Errorf("anthropic stream:\n%s", m)
	}
}
