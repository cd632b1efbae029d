package responses_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// anthropicTurn is a turn as an Anthropic upstream's decoder gives it:
// signed thinking, redacted thinking, text, and two tool calls that end
// only at the stop (as the Chat Completions decoder ends them).
func anthropicTurn() []chat.Chunk {
	return []chat.Chunk{
		{Type: chat.ChunkReasoning, Text: "Let me "},
		{Type: chat.ChunkReasoning, Text: "think."},
		{Type: chat.ChunkReasoning, Signature: "EqQBCkgIARABsig"},
		{Type: chat.ChunkReasoning, Redacted: "EmwKAhgBEgyRedacted"},
		{Type: chat.ChunkText, Text: "Checking <both> & more."},
		{Type: chat.ChunkToolCallStart, Index: 0, ID: "toolu_01", Name: "get_weather"},
		{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"city":`},
		{Type: chat.ChunkToolCallStart, Index: 1, ID: "toolu_02", Name: "get_time"},
		{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `"Paris"}`},
		{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"city":"Paris"}`},
		{Type: chat.ChunkToolCallEnd, Index: 1},
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 100, Output: 50, CacheRead: 80, Reasoning: 20}},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"}},
	}
}

// TestReasoningAcrossTurns: a Responses client of an Anthropic upstream
// gets the turn's reasoning as reasoning items, and the items it hands
// back (streamed or not) become the same blocks again — the signed
// thinking, the redacted thinking, the text and the calls — so the
// upstream gets its own reasoning back on the next turn.
func TestReasoningAcrossTurns(t *testing.T) {
	res, err := chat.Collect(replay(anthropicTurn()))
	if err != nil {
		t.Fatal(err)
	}
	out := wire.Outgoing{Model: "claude", ID: "resp_t1", Created: 1}
	body, err := responses.Dialect().Response(res, out)
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	if err := responses.Dialect().Stream(&stream, out, replay(anthropicTurn())); err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, stream.Bytes())
	for name, output := range map[string]json.RawMessage{
		"response": field(t, body, "output"),
		"stream":   field(t, marshalAny(t, events[len(events)-1].data["response"]), "output"),
	} {
		t.Run(name, func(t *testing.T) {
			next := `{"model":"claude","input":[{"role":"user","content":"weather?"}]}`
			var items []json.RawMessage
			_ = json.Unmarshal(output, &items)
			var in []json.RawMessage
			in = append(in, json.RawMessage(`{"role":"user","content":"weather?"}`))
			in = append(in, items...)
			in = append(in, json.RawMessage(`{"type":"function_call_output","call_id":"toolu_01","output":"18C"}`),
				json.RawMessage(`{"type":"function_call_output","call_id":"toolu_02","output":"noon"}`))
			inJSON, _ := json.Marshal(in)
			next = strings.Replace(next, `[{"role":"user","content":"weather?"}]`, string(inJSON), 1)
			req, err := responses.DecodeRequest([]byte(next))
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Messages) != 3 {
				t.Fatalf("%d messages, want user, assistant, tool results", len(req.Messages))
			}
			got, _ := json.Marshal(req.Messages[1].Content.Blocks)
			want, _ := json.Marshal(res.Content)
			if d := wiretest.Diff(want, got); d != "" {
				t.Errorf("the assistant turn came back as other blocks: %s\n got: %s\nwant: %s", d, got, want)
			}
		})
	}
	// The calls, which the chunks end only at the stop, are items of
	// their own, in the order they began.
	var order []string
	for _, ev := range events {
		if ev.name == "response.output_item.added" || ev.name == "response.output_item.done" {
			item := ev.data["item"].(map[string]any)
			order = append(order, ev.name[len("response.output_item."):]+":"+item["type"].(string))
		}
	}
	want := []string{"added:reasoning", "done:reasoning", "added:reasoning", "done:reasoning", "added:message", "done:message",
		"added:function_call", "added:function_call", "done:function_call", "done:function_call"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("items %v, want %v", order, want)
	}
}

func field(t *testing.T, body []byte, k string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[k]
}

func marshalAny(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResponsesToResponses is the whole path of a Responses client in
// front of a Responses upstream: the client's request decoded, encoded
// for the upstream (the reasoning item goes back with its encrypted
// content, the call and its output by call_id, the image in the output),
// and the upstream's stream answered in the client's dialect.
func TestResponsesToResponses(t *testing.T) {
	body := `{"model":"o3","stream":true,"store":false,"include":["reasoning.encrypted_content"],
	 "reasoning":{"effort":"medium","summary":"auto"},
	 "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}],
	 "input":[{"role":"user","content":[{"type":"input_text","text":"Weather?"},{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/4A==","detail":"auto"}]},
	  {"type":"reasoning","id":"rs_9","summary":[{"type":"summary_text","text":"Call it."}],"encrypted_content":"gAAAAB-9"},
	  {"type":"function_call","id":"fc_9","call_id":"call_9","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
	  {"type":"function_call_output","call_id":"call_9","output":[{"type":"input_text","text":"-3C"},{"type":"input_image","image_url":"https://example.invalid/map.png","detail":"auto"}]}]}`
	req, err := responses.Dialect().Decode([]byte(body), wire.Incoming{})
	if err != nil {
		t.Fatal(err)
	}
	up, _, warns, err := responses.Provider().Encode(req, nil, nil)
	if err != nil || len(warns) != 0 {
		t.Fatalf("encode: %v %v", err, warns)
	}
	got, _ := json.Marshal(up)
	want := `{"model":"o3","input":[
	 {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather?"},{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/4A==","detail":"auto"}]},
	 {"type":"reasoning","summary":[{"type":"summary_text","text":"Call it."}],"encrypted_content":"gAAAAB-9"},
	 {"type":"function_call","call_id":"call_9","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
	 {"type":"function_call_output","call_id":"call_9","output":[{"type":"input_text","text":"-3C"},{"type":"input_image","image_url":"https://example.invalid/map.png","detail":"auto"}]}],
	 "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}],
	 "reasoning":{"effort":"medium","summary":"auto"},"include":["reasoning.encrypted_content"],"store":false,"stream":true}`
	if d := wiretest.Diff([]byte(want), got); d != "" {
		t.Fatalf("upstream request: %s\n%s", d, got)
	}
	var out bytes.Buffer
	chunks := responses.Provider().Upstream.Decode(bytes.NewReader(mustRead(t, "testdata/stream/reasoning_summary.sse")))
	if err := responses.Dialect().Stream(&out, wire.Outgoing{Request: &req, Model: "o3", ID: "resp_x", Created: 2}, chunks); err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, out.Bytes())
	last := events[len(events)-1].data["response"].(map[string]any)
	if last["status"] != "completed" || last["store"] != false {
		t.Errorf("terminal response: %v", last)
	}
	if u := last["usage"].(map[string]any); u["output_tokens"].(float64) != 120 {
		t.Errorf("usage %v", u)
	}
}
