package wire

import (
	"bytes"
	"encoding/json"
	"iter"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
)

// Structured output through a forced tool. An upstream with no structured
// output of its own for a format (Bedrock's Converse; Anthropic for
// json_object, which its output_config.format does not take) is sent the
// format as one more tool, FormatToolName, whose input schema is the
// format's schema, and a tool choice that makes the model call a tool.
// The call's arguments are the answer: ToolAsText turns that call back
// into text, so the client reads the JSON where its dialect puts an
// answer (an OpenAI message's content, an Anthropic text block), never as
// a tool call.

// FormatToolName is the name of the tool that carries a structured-output
// format to an upstream that takes it as a forced tool call.
const FormatToolName = "structured_output"

// FormatTool is the name of the tool the encoder of upstream (a provider
// row's Name) sends format f as, "" when it sends f in the upstream's own
// structured-output field (or f is nil). The gateway applies ToolAsText
// to the response when it is not "".
func FormatTool(upstream string, f *chat.OutputFormat) string {
	if f == nil {
		return ""
	}
	switch upstream {
	case "bedrock":
		return FormatToolName
	case "anthropic":
		if f.Type != "json_schema" {
			return FormatToolName
		}
	}
	return ""
}

// openObject is the input schema of a json_object format's tool.
var openObject = json.RawMessage(`{"type":"object"}`)

// FormatAsTool is req with its Format sent as the tool FormatToolName (see
// FormatTool), and Format nil; req is not changed. The tool choice makes
// the model call a tool: the format's tool when the request has no tools
// of its own or its choice is none, any tool when it has tools (a call of
// one of them is a call, the format's is the answer). A choice of one
// named tool is kept (the format applies to a text answer, which that
// choice rules out: warning). With reasoning asked for, the choice is
// auto (the upstreams refuse a forced tool with extended thinking), so the
// model may answer in plain text (warning). A tool of the request named
// FormatToolName is an error.
func FormatAsTool(req chat.Request) (chat.Request, []chat.Warning, error) {
	f := req.Format
	if f == nil {
		return req, nil, nil
	}
	for i := range req.Tools {
		if req.Tools[i].Name == FormatToolName {
			return req, nil, &chat.Error{Code: chat.CodeInvalidValue, Path: "tools[" + strconv.Itoa(i) + "].name",
				Msg: strconv.Quote(FormatToolName) + " is the name of the tool that carries the structured-output format to this upstream: rename the tool"}
		}
	}
	out := req
	out.Format = nil
	schema := f.Schema
	if f.Type != "json_schema" || len(schema) == 0 {
		schema = openObject
	}
	desc := "Answer by calling this tool: its input is your answer, which must be JSON matching the input schema."
	if f.Description != "" {
		desc = f.Description + "\n\n" + desc
	}
	own := len(req.Tools)
	out.Tools = append(append(make([]chat.Tool, 0, own+1), req.Tools...), chat.Tool{Name: FormatToolName, Description: desc, InputSchema: chat.CloneRaw(schema)})
	var warns []chat.Warning
	tc := req.ToolChoice
	var choice chat.ToolChoice
	switch {
	case tc != nil && tc.Type == "tool":
		warns = append(warns, chat.Warnf("tool_choice", "the structured-output format applies to an answer in text, which a choice of tool %q rules out", tc.Name))
		return out, warns, nil
	case req.ReasoningRequested():
		choice = chat.ToolChoice{Type: "auto"}
		warns = append(warns, chat.Warnf("tool_choice", "with reasoning the upstream cannot be made to call a tool: the structured-output format is offered as the tool %q, which the model may not call", FormatToolName))
	case own == 0 || tc != nil && tc.Type == "none":
		choice = chat.ToolChoice{Type: "tool", Name: FormatToolName}
	default:
		choice = chat.ToolChoice{Type: "any"}
	}
	if tc != nil {
		choice.DisableParallelToolUse = tc.DisableParallelToolUse
	}
	out.ToolChoice = &choice
	return out, warns, nil
}

// ToolAsText turns the calls of the tool name in a stream into the text
// they carry: a call's argument fragments become text chunks (all its
// arguments at its end when no fragment came), the other calls keep
// their order with their indexes closed up, and a tool_use stop becomes
// end_turn when the format's were the only calls. It is the gateway's
// adapter for an upstream whose FormatTool is name.
func ToolAsText(chunks iter.Seq2[chat.Chunk, error], name string) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		format := map[int]bool{} // the format's calls, by index
		streamed := map[int]bool{}
		before := func(i int) int { // the format's calls before index i
			n := 0
			for k := range format {
				if k < i {
					n++
				}
			}
			return n
		}
		others := false
		for c, err := range chunks {
			if err != nil {
				yield(c, err)
				return
			}
			switch c.Type {
			case chat.ChunkToolCallStart:
				if c.Name == name {
					format[c.Index] = true
					continue
				}
				others = true
				c.Index -= before(c.Index)
			case chat.ChunkToolCallDelta:
				if format[c.Index] {
					if c.Arguments == "" {
						continue
					}
					streamed[c.Index] = true
					c = chat.Chunk{Type: chat.ChunkText, Text: c.Arguments}
					break
				}
				c.Index -= before(c.Index)
			case chat.ChunkToolCallEnd:
				if format[c.Index] {
					if streamed[c.Index] {
						continue
					}
					c = chat.Chunk{Type: chat.ChunkText, Text: c.Arguments}
					break
				}
				c.Index -= before(c.Index)
			case chat.ChunkStop:
				if len(format) > 0 && !others && c.Stop != nil && c.Stop.Reason == chat.StopToolUse {
					c.Stop = &chat.Stop{Reason: chat.StopEndTurn, Raw: c.Stop.Raw}
				}
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// ToolAsTextResponse is ToolAsText for a collected response: each
// tool_use block of the tool name becomes a text block of its input, and
// a tool_use stop becomes end_turn when no other tool_use is left. res is
// not changed.
func ToolAsTextResponse(res chat.Response, name string) chat.Response {
	out := res
	out.Content = make([]chat.Block, len(res.Content))
	others, found := false, false
	for i, b := range res.Content {
		if b.Type == chat.TypeToolUse && b.Name == name {
			found = true
			var buf bytes.Buffer
			text := string(b.Input)
			if json.Compact(&buf, b.Input) == nil {
				text = buf.String()
			}
			b = chat.Block{Type: chat.TypeText, Text: text}
		} else if b.Type == chat.TypeToolUse {
			others = true
		}
		out.Content[i] = b
	}
	if found && !others && res.Stop.Reason == chat.StopToolUse {
		out.Stop.Reason = chat.StopEndTurn
	}
	return out
}
