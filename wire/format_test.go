package wire_test

import (
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

func seq(chunks ...chat.Chunk) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func collect(t *testing.T, s iter.Seq2[chat.Chunk, error]) []chat.Chunk {
	t.Helper()
	var out []chat.Chunk
	for c, err := range s {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

const name = wire.FormatToolName

func TestToolAsText(t *testing.T) {
	stopTool := &chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"}
	for _, tc := range []struct {
		test     string
		in, want []chat.Chunk
	}{
		{"streamed arguments become text, the stop end_turn",
			[]chat.Chunk{
				{Type: chat.ChunkToolCallStart, Index: 0, ID: "t1", Name: name},
				{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"city":`},
				{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: ""},
				{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `"Paris"}`},
				{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"city":"Paris"}`},
				{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 5, Output: 3}},
				{Type: chat.ChunkStop, Stop: stopTool},
			},
			[]chat.Chunk{
				{Type: chat.ChunkText, Text: `{"city":`},
				{Type: chat.ChunkText, Text: `"Paris"}`},
				{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 5, Output: 3}},
				{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn, Raw: "tool_use"}},
			}},
		{"arguments only at the end",
			[]chat.Chunk{
				{Type: chat.ChunkText, Text: "Sure. "},
				{Type: chat.ChunkToolCallStart, Index: 0, ID: "t1", Name: name},
				{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"a":1}`},
				{Type: chat.ChunkStop, Stop: stopTool},
			},
			[]chat.Chunk{
				{Type: chat.ChunkText, Text: "Sure. "},
				{Type: chat.ChunkText, Text: `{"a":1}`},
				{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn, Raw: "tool_use"}},
			}},
		{"the client's own calls keep going, indexes closed up, stop kept",
			[]chat.Chunk{
				{Type: chat.ChunkToolCallStart, Index: 0, ID: "t1", Name: name},
				{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{}`},
				{Type: chat.ChunkToolCallStart, Index: 1, ID: "t2", Name: "lookup"},
				{Type: chat.ChunkToolCallDelta, Index: 1, Arguments: `{"q":1}`},
				{Type: chat.ChunkToolCallEnd, Index: 1, Arguments: `{"q":1}`},
				{Type: chat.ChunkStop, Stop: stopTool},
			},
			[]chat.Chunk{
				{Type: chat.ChunkText, Text: `{}`},
				{Type: chat.ChunkToolCallStart, Index: 0, ID: "t2", Name: "lookup"},
				{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"q":1}`},
				{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"q":1}`},
				{Type: chat.ChunkStop, Stop: stopTool},
			}},
		{"no format call: unchanged",
			[]chat.Chunk{
				{Type: chat.ChunkText, Text: "plain"},
				{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
			},
			[]chat.Chunk{
				{Type: chat.ChunkText, Text: "plain"},
				{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
			}},
	} {
		t.Run(tc.test, func(t *testing.T) {
			got := collect(t, wire.ToolAsText(seq(tc.in...), name))
			if !reflect.DeepEqual(got, tc.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tc.want)
				t.Errorf("got  %s\nwant %s", g, w)
			}
			if stopTool.Reason != chat.StopToolUse {
				t.Fatal("ToolAsText changed its input's stop")
			}
		})
	}
}

func TestToolAsTextError(t *testing.T) {
	boom := errors.New("boom")
	in := func(yield func(chat.Chunk, error) bool) {
		if yield(chat.Chunk{Type: chat.ChunkToolCallStart, Name: name}, nil) {
			yield(chat.Chunk{}, boom)
		}
	}
	var got error
	for _, err := range wire.ToolAsText(in, name) {
		got = err
	}
	if got != boom {
		t.Errorf("err %v, want the stream's", got)
	}
}

func TestToolAsTextResponse(t *testing.T) {
	res := chat.Response{
		Content: []chat.Block{{Type: chat.TypeToolUse, ID: "t", Name: name, Input: json.RawMessage(`{ "a" : 1 }`)}},
		Stop:    chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"},
	}
	got := wire.ToolAsTextResponse(res, name)
	if len(got.Content) != 1 || got.Content[0].Type != chat.TypeText || got.Content[0].Text != `{"a":1}` || got.Stop.Reason != chat.StopEndTurn {
		t.Errorf("%+v", got)
	}
	if res.Content[0].Type != chat.TypeToolUse {
		t.Error("the input changed")
	}
	res.Content = append(res.Content, chat.Block{Type: chat.TypeToolUse, ID: "u", Name: "lookup", Input: json.RawMessage(`{}`)})
	if got := wire.ToolAsTextResponse(res, name); got.Stop.Reason != chat.StopToolUse {
		t.Errorf("another call is left: stop %s", got.Stop.Reason)
	}
}

func TestFormatAsTool(t *testing.T) {
	format := &chat.OutputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)}
	tools := []chat.Tool{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	yes := true
	for _, tc := range []struct {
		test   string
		tools  []chat.Tool
		choice *chat.ToolChoice
		think  *chat.Thinking
		want   chat.ToolChoice
		warns  int
	}{
		{"no tools", nil, nil, nil, chat.ToolChoice{Type: "tool", Name: name}, 0},
		{"tools, auto", tools, &chat.ToolChoice{Type: "auto", DisableParallelToolUse: &yes}, nil, chat.ToolChoice{Type: "any", DisableParallelToolUse: &yes}, 0},
		{"tools, none", tools, &chat.ToolChoice{Type: "none"}, nil, chat.ToolChoice{Type: "tool", Name: name}, 0},
		{"a named tool is kept", tools, &chat.ToolChoice{Type: "tool", Name: "lookup"}, nil, chat.ToolChoice{Type: "tool", Name: "lookup"}, 1},
		{"thinking: auto", nil, nil, &chat.Thinking{Type: "enabled", BudgetTokens: 2000}, chat.ToolChoice{Type: "auto"}, 1},
	} {
		t.Run(tc.test, func(t *testing.T) {
			req := baseRequest()
			req.Tools, req.ToolChoice, req.Thinking, req.Format = tc.tools, tc.choice, tc.think, format
			out, warns, err := wire.FormatAsTool(req)
			if err != nil {
				t.Fatal(err)
			}
			if out.Format != nil || req.Format == nil || len(req.Tools) != len(tc.tools) {
				t.Fatal("Format kept, or the input changed")
			}
			if last := out.Tools[len(out.Tools)-1]; last.Name != name || string(last.InputSchema) != `{"type":"object"}` {
				t.Errorf("tool %+v", last)
			}
			if !reflect.DeepEqual(*out.ToolChoice, tc.want) || len(warns) != tc.warns {
				t.Errorf("choice %+v, warnings %v", *out.ToolChoice, warns)
			}
		})
	}
}

// FuzzToolAsText: whatever the stream, the adapter yields no call of the
// format's tool, and the indexes of the other calls are in sequence.
func FuzzToolAsText(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 1, 2, 4})
	f.Add([]byte{3, 0, 2, 1, 2, 4, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			return
		}
		var in []chat.Chunk
		next := 0
		for _, op := range ops {
			switch op % 5 {
			case 0, 3: // a start: of the format's tool (0) or another (3)
				n := "other"
				if op%5 == 0 {
					n = name
				}
				in = append(in, chat.Chunk{Type: chat.ChunkToolCallStart, Index: next, Name: n})
				next++
			case 1:
				in = append(in, chat.Chunk{Type: chat.ChunkToolCallDelta, Index: int(op) % (next + 1), Arguments: "x"})
			case 2:
				in = append(in, chat.Chunk{Type: chat.ChunkToolCallEnd, Index: int(op) % (next + 1), Arguments: "{}"})
			case 4:
				in = append(in, chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}})
			}
		}
		want := 0
		for c, err := range wire.ToolAsText(seq(in...), name) {
			if err != nil {
				t.Fatal(err)
			}
			if c.Type == chat.ChunkToolCallStart {
				if c.Name == name {
					t.Fatal("a call of the format's tool got through")
				}
				if c.Index != want {
					t.Fatalf("index %d, want %d", c.Index, want)
				}
				want++
			}
		}
	})
}

// FuzzAnthropicBetaHeaders: any header value gives a result without
// panicking, and an Anthropic upstream gets every beta back.
func FuzzAnthropicBetaHeaders(f *testing.F) {
	f.Add("interleaved-thinking-2025-05-14,files-api-2025-04-14", "2023-06-01")
	f.Add(" , ,", "")
	f.Fuzz(func(t *testing.T, beta, version string) {
		h := make(map[string][]string)
		h["Anthropic-Beta"] = []string{beta}
		h["Anthropic-Version"] = []string{version}
		for _, up := range wire.PolicyUpstreams {
			set, _, err := wire.AnthropicBetaHeaders(h, up)
			if up == "anthropic" && err != nil {
				t.Fatal(err)
			}
			if up != "anthropic" && set != nil {
				t.Fatal("headers set for", up)
			}
		}
	})
}
