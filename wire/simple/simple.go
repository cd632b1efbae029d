// Package simple converts a canonical request (package chat) to ctxkit's
// simple format: every message flattened to one string, for plain chat
// endpoints, prompt-based tool use, human relays and token counting.
//
// # Envelope
//
//	{
//	  "model": "...",                 // omitted when empty
//	  "system": "...",                // omitted when empty
//	  "messages": [{"role": "user" | "assistant", "content": "..."}, ...],
//	  "max_tokens": N, "temperature": T, "top_p": P,
//	  "stop_sequences": [...], "stream": true   // each omitted when not given
//	}
//
// messages[i] of the output is messages[i] of the input, with the same
// role: no message is added, dropped, merged or reordered, and a message
// with nothing to show has the content "".
//
// # Content
//
// A string content is the content. Blocks are rendered one after another,
// joined by a blank line ("\n\n"), skipping those that render to nothing:
//
//   - text: its text (an empty text renders to nothing);
//   - image: chat.ImageStub's placeholder, "[Image: image/png]", with a
//     warning;
//   - document: chat.DocumentStub's label, "[Document: <title>]" (the URL,
//     media type or source type when untitled), then its context and, for
//     a text source, its text, one per line; a document without a
//     text source is the label (and context) alone, with a warning;
//   - tool_use: "[Tool Use: <name> (<id>)]" and, on the next line, its
//     input as compact JSON;
//   - tool_result: "[Tool Result (<tool_use_id>)]" and, on the next line,
//     its content rendered as above (its text, placeholders for images
//     and documents, with warnings; other blocks dropped with a warning);
//     an error result (is_error) has "Error: " before its content, or
//     "Error" alone when it has none;
//   - thinking and reasoning: dropped with a warning, or with
//     Options.Thinking "text" rendered as "[Thinking]" and the text on the
//     next line (a thinking block's signature, which only Anthropic can
//     check, is then dropped with a warning);
//   - redacted_thinking (encrypted) and thought_signature (opaque) blocks,
//     a message's reasoning_details, and blocks of unknown types: dropped
//     with a warning.
//
// A warning names the block (messages[2].content[1]); for a block inside a
// tool_result it names the tool_result, and its message starts with the
// place inside it ("content[1]: ..."). Message fields other than role,
// content and reasoning_details (a "name", say) are dropped with a
// warning. cache_control, citations, and the fields of blocks and custom
// tools ctxkit does not model have no counterpart and are ignored.
//
// # System prompt and tools
//
// The system prompt is its string, or the text of its blocks joined by a
// blank line (empty ones skipped). The tools, which the format has no field for, are described
// after it (after a blank line), one paragraph per tool:
//
//	[Tool: <name>]
//	<description>
//	Input schema: <JSON Schema, compact>
//
// A provider-defined tool is "[Tool: <name> (<type>)]" with its settings
// on a "Settings: <JSON>" line. A tool_choice other than auto has no
// counterpart and is dropped with a warning.
//
// # Parameters
//
// max_tokens, temperature, top_p and stop_sequences follow
// chat.ResolveParams for chat.FormatSimple (sent when given, no default);
// stream is sent when true. The format has no reasoning control: thinking
// and reasoning_effort are not sent, with a warning. metadata and unknown
// top-level fields are dropped with a warning.
//
// EncodeRequest never changes its input.
package simple

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/render"
)

// Options choose how reasoning is rendered.
type Options struct {
	// Thinking is "" or "drop" (thinking and reasoning blocks are dropped
	// with a warning) or "text" (they are rendered as "[Thinking]" text).
	Thinking string `json:"thinking,omitempty"`
}

// Thinking renderings.
const (
	ThinkingDrop = "drop"
	ThinkingText = "text"
)

// Request is a request in the simple format.
type Request struct {
	Model         string    `json:"model,omitempty"`
	System        string    `json:"system,omitempty"`
	Messages      []Message `json:"messages"`
	MaxTokens     int       `json:"max_tokens,omitempty"`
	Temperature   *float64  `json:"temperature,omitempty"`
	TopP          *float64  `json:"top_p,omitempty"`
	StopSequences []string  `json:"stop_sequences,omitempty"`
	Stream        bool      `json:"stream,omitempty"`
}

// Message is one turn with its content as one string.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// sep joins rendered blocks.
const sep = "\n\n"

// EncodeRequest converts req to the simple format, with the warnings for
// everything it could not carry. It fails only on invalid options.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	switch opts.Thinking {
	case "", ThinkingDrop, ThinkingText:
	default:
		return nil, nil, fmt.Errorf("simple: options.thinking: %q is not \"\", %q or %q", opts.Thinking, ThinkingDrop, ThinkingText)
	}
	e := encoder{thinking: opts.Thinking == ThinkingText}
	out := &Request{Model: req.Model, Messages: make([]Message, len(req.Messages)), Stream: req.Stream}
	for i := range req.Messages {
		out.Messages[i] = e.message(&req.Messages[i], i)
	}
	out.System = e.system(req)
	e.params(out, req)
	return out, e.warns, nil
}

type encoder struct {
	thinking bool
	warns    []chat.Warning
	b        strings.Builder
	buf      bytes.Buffer
}

func (e *encoder) warn(path, format string, args ...any) {
	e.warns = append(e.warns, chat.Warnf(path, format, args...))
}

// message flattens one message.
func (e *encoder) message(m *chat.Message, i int) Message {
	path := chat.MessagePath(i)
	if len(m.ReasoningDetails) > 0 {
		e.warn(path+".reasoning_details", "the simple format carries no reasoning details: dropped")
	}
	for _, k := range chat.SortedKeys(m.Extra) {
		e.warn(path+"."+k, "a simple message has only a role and a content: %s dropped", k)
	}
	if m.Content.IsString {
		return Message{Role: m.Role, Content: m.Content.Text}
	}
	e.b.Reset()
	for j := range m.Content.Blocks {
		b := &m.Content.Blocks[j]
		p := chat.BlockPath(i, j)
		switch b.Type {
		case chat.TypeText:
			e.add(b.Text)
		case chat.TypeImage, chat.TypeDocument:
			e.add(e.media(b, p, ""))
		case chat.TypeToolUse:
			e.add("[Tool Use: " + b.Name + " (" + b.ID + ")]\n" + e.compact(b.Input, p, ""))
		case chat.TypeToolResult:
			e.add(e.result(b, p))
		case chat.TypeThinking:
			e.reasoning(b.Thinking, p, b.Type)
			if e.thinking && b.Signature != "" {
				e.warn(p, "rendered as text: its signature is not carried")
			}
		case chat.TypeReasoning:
			e.reasoning(b.Text, p, b.Type)
		case chat.TypeRedactedThinking:
			e.warn(p, "redacted_thinking is encrypted: dropped")
		case chat.TypeThoughtSignature:
			e.warn(p, "thought_signature is opaque: dropped")
		default:
			e.warn(p, "the simple format has no %q block: dropped", b.Type)
		}
	}
	return Message{Role: m.Role, Content: e.b.String()}
}

// add appends a rendered block to the message being built.
func (e *encoder) add(s string) {
	if s == "" {
		return
	}
	if e.b.Len() > 0 {
		e.b.WriteString(sep)
	}
	e.b.WriteString(s)
}

func (e *encoder) reasoning(text, path, typ string) {
	if !e.thinking {
		e.warn(path, "the simple format carries no reasoning: %s dropped", typ)
		return
	}
	if text != "" {
		e.add("[Thinking]\n" + text)
	}
}

// media is the text that stands for an image or a document, with the
// warning when it stands for content it does not carry. at is "" for a
// message block, or the place inside the tool_result at path.
func (e *encoder) media(b *chat.Block, path, at string) string {
	if b.Type == chat.TypeImage {
		v := chat.ImageStub(b.Source)
		e.warn(path, at+"the simple format carries text only: image replaced by %q", v)
		return v
	}
	v, whole := render.Document(b)
	if !whole {
		e.warn(path, at+"a document without a text source: replaced by %q", v)
	}
	return v
}

// result renders a tool_result block.
func (e *encoder) result(b *chat.Block, path string) string {
	var parts []string
	if c := b.Content; c != nil {
		if c.IsString {
			if c.Text != "" {
				parts = append(parts, c.Text)
			}
		} else {
			for k := range c.Blocks {
				inner := &c.Blocks[k]
				at := "content[" + strconv.Itoa(k) + "]: "
				switch inner.Type {
				case chat.TypeText:
					if inner.Text != "" {
						parts = append(parts, inner.Text)
					}
				case chat.TypeImage, chat.TypeDocument:
					parts = append(parts, e.media(inner, path, at))
				default:
					e.warn(path, at+"a tool result renders text, images and documents only: %s dropped", inner.Type)
				}
			}
		}
	}
	body := strings.Join(parts, sep)
	if b.IsError {
		if body == "" {
			body = "Error"
		} else {
			body = "Error: " + body
		}
	}
	head := "[Tool Result (" + b.ToolUseID + ")]"
	if body == "" {
		return head
	}
	return head + "\n" + body
}

// compact is raw JSON, compacted; {} when empty. at is the place inside
// path, as for media.
func (e *encoder) compact(raw json.RawMessage, path, at string) string {
	if len(raw) == 0 {
		return "{}"
	}
	e.buf.Reset()
	if err := json.Compact(&e.buf, raw); err != nil {
		e.warn(path, at+"not valid JSON (%v): sent as it came", err)
		return string(raw)
	}
	return e.buf.String()
}

// system renders the system prompt and the tools.
func (e *encoder) system(req chat.Request) string {
	var parts []string
	if req.System != nil {
		for _, b := range req.System.AsBlocks() {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		p := "tools[" + strconv.Itoa(i) + "]"
		var s string
		if t.Type != "" {
			s = "[Tool: " + t.Name + " (" + t.Type + ")]"
		} else {
			s = "[Tool: " + t.Name + "]"
		}
		if t.Description != "" {
			s += "\n" + t.Description
		}
		if len(t.InputSchema) > 0 {
			s += "\nInput schema: " + e.compact(t.InputSchema, p, "input_schema: ")
		}
		if t.Type != "" && len(t.Extra) > 0 {
			settings, err := json.Marshal(t.Extra)
			if err != nil {
				e.warn(p, "settings not valid JSON (%v): dropped", err)
			} else {
				s += "\nSettings: " + string(settings)
			}
		}
		parts = append(parts, s)
	}
	if tc := req.ToolChoice; tc != nil && tc.Type != "auto" {
		e.warn("tool_choice", "the simple format has no tool choice: %s not sent", tc.Type)
	}
	return strings.Join(parts, sep)
}

// params sets the parameters and warns about what has no counterpart.
func (e *encoder) params(out *Request, req chat.Request) {
	rq := req
	rq.Thinking, rq.ReasoningEffort = nil, ""
	p, warns := chat.ResolveParams(rq, chat.FormatSimple)
	e.warns = append(e.warns, warns...)
	out.MaxTokens, out.Temperature, out.TopP, out.StopSequences = p.MaxTokens, p.Temperature, p.TopP, p.Stop
	if req.ReasoningRequested() {
		path := "thinking"
		if req.Thinking == nil {
			path = "reasoning_effort"
		}
		e.warn(path, "the simple format has no reasoning control: not sent")
	}
	if len(req.Metadata) > 0 {
		e.warn("metadata", "the simple format has no metadata: dropped")
	}
	for _, k := range chat.SortedKeys(req.Extra) {
		e.warn(k, "the simple format has no %s: dropped", k)
	}
}
