// Package vscodelm converts a canonical request (package chat) to the JSON
// shape of a request to VS Code's language model API
// (vscode.LanguageModelChat.sendRequest): its messages
// (vscode.LanguageModelChatMessage), tools (vscode.LanguageModelChatTool)
// and request options, for an extension that builds those objects from
// JSON.
//
// # Envelope
//
//	{
//	  "model": "...",                  // the model to select; omitted when empty
//	  "messages": [Message, ...],
//	  "tools": [{"name", "description", "inputSchema"?}, ...],   // omitted when none
//	  "options": {                     // omitted when empty
//	    "toolMode": "auto" | "required",  // vscode.LanguageModelChatToolMode
//	    "justification": "...",
//	    "modelOptions": {"max_tokens", "temperature", "top_p", "stop_sequences"}
//	  }
//	}
//
// A Message is {"role": "user" | "assistant", "content": [Part, ...],
// "name"?}, and a Part one of
//
//	{"type": "text", "value": "..."}                                  // LanguageModelTextPart
//	{"type": "toolCall", "callId", "name", "input": {...}}            // LanguageModelToolCallPart
//	{"type": "toolResult", "callId", "content": [text parts]}         // LanguageModelToolResultPart
//
// # Messages
//
// A string content is one text part. Blocks map as follows: text to a
// text part; tool_use to a toolCall part (callId is the tool_use id, input
// its input object); tool_result to a toolResult part (callId is its
// tool_use_id; its content becomes text parts); a document with a text
// source to a text part with chat.DocumentStub's label, "[Document:
// <title>]" (the URL, media type or source type when untitled), and its
// context and its text on the lines below. In a user message the toolResult parts come
// first, then the text parts, then any toolCall parts; in an assistant message the text parts come first, then the
// toolCall parts, then any toolResult parts; within each kind the order is
// kept. A message's "name" (a string) becomes the message name.
//
// Fallbacks, each with a warning naming the block (for a block inside a
// tool_result, the warning names the tool_result and its message starts
// with the place inside it: "content[1]: ..."):
//
//   - an image becomes a text part with chat.ImageStub's placeholder,
//     "[Image: image/png]";
//   - a document without a text source (a PDF, a URL) becomes its label
//     (and context) alone;
//   - thinking, redacted_thinking, reasoning and thought_signature blocks,
//     and a message's reasoning_details, are dropped (the API carries no
//     reasoning);
//   - blocks of unknown types, and blocks a tool result cannot carry as
//     text (a tool_use inside a tool_result), are dropped;
//   - a message with no content, or nothing left to send, is dropped.
//
// An error result (is_error) gets "Error: " before the text of its first
// part, or the single text part "Error" when it has no content. Empty text
// blocks carry nothing and are skipped without a warning. Message fields
// other than role, content, reasoning_details and name are dropped with a
// warning.
//
// The API has no system role. The system prompt (a string, or one text
// part per block) becomes a leading user message; with Options.System
// "first_user" it becomes instead the first text parts of the first message
// when that message is a user message (after its tool results), and a
// leading user message otherwise. Neither rule warns: the text is all sent.
//
// # Tools and parameters
//
// A custom tool becomes {"name", "description", "inputSchema"}; a
// provider-defined tool (one with a type, such as Anthropic's web search)
// cannot be sent and is dropped with a warning. tool_choice auto becomes
// toolMode "auto" and any becomes "required"; a named tool becomes
// "required" with a warning (the mode cannot name the tool; every tool is
// still offered); none leaves the tools out with a warning (the API has no
// such mode); disable_parallel_tool_use has no counterpart and is dropped
// with a warning.
//
// max_tokens, temperature, top_p and stop_sequences, resolved by
// chat.ResolveParams for chat.FormatVSCodeLM, go to options.modelOptions
// under those names (the API passes modelOptions to the model's provider as
// they are). The API has no reasoning control: thinking and
// reasoning_effort are not sent, with a warning. metadata and unknown
// top-level fields are dropped with a warning. stream is not sent (the API
// always streams). cache_control, citations and fields ctxkit does not
// model on blocks and tools have no counterpart in this shape and are
// ignored.
//
// EncodeRequest never changes its input; its Request shares raw JSON values
// (tool inputs and schemas) with it.
package vscodelm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/render"
)

// Options choose where the system prompt goes and what the request tells
// the user.
type Options struct {
	// System is "" or "message" (the system prompt is a leading user
	// message) or "first_user" (it opens the first user message).
	System string `json:"system,omitempty"`
	// Justification is sent as options.justification: why the extension
	// asks for the model, shown to the user when VS Code asks for consent.
	Justification string `json:"justification,omitempty"`
}

// System placements.
const (
	SystemMessage   = "message"
	SystemFirstUser = "first_user"
)

// Part types.
const (
	PartText       = "text"
	PartToolCall   = "toolCall"
	PartToolResult = "toolResult"
)

// Tool modes.
const (
	ToolModeAuto     = "auto"
	ToolModeRequired = "required"
)

// Request is a request to a VS Code language model, as JSON.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
	Options  RequestOptions
}

// Message is a vscode.LanguageModelChatMessage.
type Message struct {
	Role    string // chat.User or chat.Assistant
	Content []Part
	Name    string
}

// Part is one part of a message: a text, a tool call or a tool result,
// told by Type.
type Part struct {
	Type    string
	Value   string          // text
	CallID  string          // toolCall, toolResult
	Name    string          // toolCall
	Input   json.RawMessage // toolCall: a JSON object
	Content []Part          // toolResult: text parts
}

// Tool is a vscode.LanguageModelChatTool.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // omitted when empty
}

// RequestOptions are the vscode.LanguageModelChatRequestOptions besides the
// tools.
type RequestOptions struct {
	ToolMode      string // "", ToolModeAuto or ToolModeRequired
	Justification string
	ModelOptions  ModelOptions
}

// ModelOptions are the generation parameters sent as modelOptions.
type ModelOptions struct {
	MaxTokens     int // 0: not sent
	Temperature   *float64
	TopP          *float64
	StopSequences []string
}

// EncodeRequest converts req to a VS Code language model request, with
// the warnings for everything it could not carry. It fails only on invalid
// options.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	switch opts.System {
	case "", SystemMessage, SystemFirstUser:
	default:
		return nil, nil, fmt.Errorf("vscodelm: options.system: %q is not \"\", %q or %q", opts.System, SystemMessage, SystemFirstUser)
	}
	e := encoder{}
	out := &Request{Model: req.Model, Messages: make([]Message, 0, len(req.Messages)+1)}
	for i := range req.Messages {
		if m, ok := e.message(&req.Messages[i], i); ok {
			out.Messages = append(out.Messages, m)
		}
	}
	e.system(out, req.System, opts.System)
	e.tools(out, req)
	e.params(out, req)
	out.Options.Justification = opts.Justification
	return out, e.warns, nil
}

type encoder struct {
	warns []chat.Warning
}

func (e *encoder) warn(path, format string, args ...any) {
	e.warns = append(e.warns, chat.Warnf(path, format, args...))
}

func text(s string) Part { return Part{Type: PartText, Value: s} }

// message converts one message; ok is false when nothing is left to send.
func (e *encoder) message(m *chat.Message, i int) (Message, bool) {
	path := chat.MessagePath(i)
	out := Message{Role: m.Role}
	if len(m.ReasoningDetails) > 0 {
		e.warn(path+".reasoning_details", "VS Code's language model API carries no reasoning: dropped")
	}
	for _, k := range chat.SortedKeys(m.Extra) {
		if k == "name" {
			if err := json.Unmarshal(m.Extra[k], &out.Name); err == nil {
				continue
			}
			e.warn(path+".name", "not a string: dropped")
			continue
		}
		e.warn(path+"."+k, "a VS Code message has no %s: dropped", k)
	}
	if m.Content.IsString {
		if m.Content.Text == "" {
			e.warn(path, "no content: message dropped")
			return out, false
		}
		out.Content = []Part{text(m.Content.Text)}
		return out, true
	}
	var texts, calls, results []Part
	for j := range m.Content.Blocks {
		b := &m.Content.Blocks[j]
		p := chat.BlockPath(i, j)
		switch b.Type {
		case chat.TypeText:
			if b.Text != "" {
				texts = append(texts, text(b.Text))
			}
		case chat.TypeImage, chat.TypeDocument:
			texts = append(texts, text(e.media(b, p, "")))
		case chat.TypeToolUse:
			calls = append(calls, Part{Type: PartToolCall, CallID: b.ID, Name: b.Name, Input: b.Input})
		case chat.TypeToolResult:
			results = append(results, e.result(b, p))
		case chat.TypeThinking, chat.TypeRedactedThinking, chat.TypeReasoning, chat.TypeThoughtSignature:
			e.warn(p, "VS Code's language model API carries no reasoning: %s dropped", b.Type)
		default:
			e.warn(p, "VS Code's language model API has no %q part: dropped", b.Type)
		}
	}
	if m.Role == chat.User {
		out.Content = concat(results, texts, calls)
	} else {
		out.Content = concat(texts, calls, results)
	}
	if len(out.Content) == 0 {
		if len(m.Content.Blocks) == 0 {
			e.warn(path, "no content: message dropped")
		} else {
			e.warn(path, "nothing left to send: message dropped")
		}
		return out, false
	}
	return out, true
}

func concat(a, b, c []Part) []Part {
	if len(b) == 0 && len(c) == 0 {
		return a
	}
	out := make([]Part, 0, len(a)+len(b)+len(c))
	return append(append(append(out, a...), b...), c...)
}

// media is the text that stands for an image or a document, with the
// warning when it stands for content it does not carry. at is "" for a
// message block, or the place inside the tool_result at path.
func (e *encoder) media(b *chat.Block, path, at string) string {
	if b.Type == chat.TypeImage {
		v := chat.ImageStub(b.Source)
		e.warn(path, at+"this shape carries no images: replaced by %q", v)
		return v
	}
	v, whole := render.Document(b)
	if !whole {
		e.warn(path, at+"a document without a text source: replaced by %q", v)
	}
	return v
}

// result converts a tool_result block to a toolResult part.
func (e *encoder) result(b *chat.Block, path string) Part {
	out := Part{Type: PartToolResult, CallID: b.ToolUseID, Content: []Part{}}
	if c := b.Content; c != nil {
		if c.IsString {
			if c.Text != "" {
				out.Content = append(out.Content, text(c.Text))
			}
		} else {
			for k := range c.Blocks {
				inner := &c.Blocks[k]
				at := "content[" + strconv.Itoa(k) + "]: "
				switch inner.Type {
				case chat.TypeText:
					if inner.Text != "" {
						out.Content = append(out.Content, text(inner.Text))
					}
				case chat.TypeImage, chat.TypeDocument:
					out.Content = append(out.Content, text(e.media(inner, path, at)))
				default:
					e.warn(path, at+"a VS Code tool result carries text only: %s dropped", inner.Type)
				}
			}
		}
	}
	if b.IsError {
		if len(out.Content) == 0 {
			out.Content = append(out.Content, text("Error"))
		} else {
			out.Content[0].Value = "Error: " + out.Content[0].Value
		}
	}
	return out
}

// system places the system prompt (see the package comment).
func (e *encoder) system(out *Request, sys *chat.Content, mode string) {
	if sys == nil {
		return
	}
	var parts []Part
	for _, b := range sys.AsBlocks() {
		if b.Text != "" {
			parts = append(parts, text(b.Text))
		}
	}
	if len(parts) == 0 {
		return
	}
	if mode == SystemFirstUser && len(out.Messages) > 0 && out.Messages[0].Role == chat.User {
		first := &out.Messages[0]
		n := 0
		for n < len(first.Content) && first.Content[n].Type == PartToolResult {
			n++
		}
		first.Content = slices.Concat(first.Content[:n], parts, first.Content[n:])
		return
	}
	out.Messages = slices.Insert(out.Messages, 0, Message{Role: chat.User, Content: parts})
}

// tools converts the tools and the tool choice.
func (e *encoder) tools(out *Request, req chat.Request) {
	tc := req.ToolChoice
	if tc != nil && tc.Type == "none" {
		if len(req.Tools) > 0 {
			e.warn("tools", "tool_choice none: VS Code has no such tool mode: tools not offered")
		}
		return
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.Type != "" {
			e.warn("tools["+strconv.Itoa(i)+"]", "VS Code cannot offer the provider-defined tool %s (%s): dropped", t.Name, t.Type)
			continue
		}
		out.Tools = append(out.Tools, Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	if tc == nil || len(out.Tools) == 0 {
		return
	}
	switch tc.Type {
	case "auto":
		out.Options.ToolMode = ToolModeAuto
	case "any":
		out.Options.ToolMode = ToolModeRequired
	case "tool":
		out.Options.ToolMode = ToolModeRequired
		e.warn("tool_choice", "VS Code's tool mode cannot name a tool: toolMode required, %s not enforced", tc.Name)
	}
	if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
		e.warn("tool_choice.disable_parallel_tool_use", "VS Code has no such option: dropped")
	}
}

// params sets modelOptions and warns about what has no counterpart.
func (e *encoder) params(out *Request, req chat.Request) {
	rq := req
	rq.Thinking, rq.ReasoningEffort = nil, ""
	p, warns := chat.ResolveParams(rq, chat.FormatVSCodeLM)
	e.warns = append(e.warns, warns...)
	out.Options.ModelOptions = ModelOptions{MaxTokens: p.MaxTokens, Temperature: p.Temperature, TopP: p.TopP, StopSequences: p.Stop}
	if req.ReasoningRequested() {
		path := "thinking"
		if req.Thinking == nil {
			path = "reasoning_effort"
		}
		e.warn(path, "VS Code's language model API has no reasoning control: not sent")
	}
	if len(req.Metadata) > 0 {
		e.warn("metadata", "VS Code's language model API has no metadata: dropped")
	}
	for _, k := range chat.SortedKeys(req.Extra) {
		e.warn(k, "VS Code's language model API has no %s: dropped", k)
	}
}

// MarshalJSON writes the envelope described in the package comment.
func (r Request) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256+128*len(r.Messages))
	b = append(b, '{')
	if r.Model != "" {
		b = append(chat.AppendString(b, "model"), ':')
		b = chat.AppendString(b, r.Model)
		b = append(b, ',')
	}
	b = append(b, `"messages":[`...)
	var err error
	for i := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = r.Messages[i].appendJSON(b); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range r.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = r.Tools[i].appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if o := r.Options.appendJSON(nil); len(o) > 2 {
		b = append(b, `,"options":`...)
		b = append(b, o...)
	}
	return append(b, '}'), nil
}

// MarshalJSON writes {"role","content",["name"]}.
func (m Message) MarshalJSON() ([]byte, error) { return m.appendJSON(nil) }

func (m *Message) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"role":`...)
	b = chat.AppendString(b, m.Role)
	b = append(b, `,"content":[`...)
	var err error
	for i := range m.Content {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = m.Content[i].appendJSON(b); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = chat.AppendString(b, m.Name)
	}
	return append(b, '}'), nil
}

// MarshalJSON writes the part in its type's shape.
func (p Part) MarshalJSON() ([]byte, error) { return p.appendJSON(nil) }

func (p *Part) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = chat.AppendString(b, p.Type)
	var err error
	switch p.Type {
	case PartText:
		b = append(b, `,"value":`...)
		b = chat.AppendString(b, p.Value)
	case PartToolCall:
		b = append(b, `,"callId":`...)
		b = chat.AppendString(b, p.CallID)
		b = append(b, `,"name":`...)
		b = chat.AppendString(b, p.Name)
		b = append(b, `,"input":`...)
		input := p.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		if b, err = appendRaw(b, input, "input"); err != nil {
			return nil, err
		}
	case PartToolResult:
		b = append(b, `,"callId":`...)
		b = chat.AppendString(b, p.CallID)
		b = append(b, `,"content":[`...)
		for i := range p.Content {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = p.Content[i].appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	default:
		return nil, fmt.Errorf("vscodelm: part type %q is not text, toolCall or toolResult", p.Type)
	}
	return append(b, '}'), nil
}

// MarshalJSON writes {"name","description",["inputSchema"]}.
func (t Tool) MarshalJSON() ([]byte, error) { return t.appendJSON(nil) }

func (t *Tool) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"name":`...)
	b = chat.AppendString(b, t.Name)
	b = append(b, `,"description":`...)
	b = chat.AppendString(b, t.Description)
	if len(t.InputSchema) > 0 {
		b = append(b, `,"inputSchema":`...)
		var err error
		if b, err = appendRaw(b, t.InputSchema, "inputSchema"); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// MarshalJSON writes the options present, {} when none is.
func (o RequestOptions) MarshalJSON() ([]byte, error) { return o.appendJSON(nil), nil }

func (o *RequestOptions) appendJSON(b []byte) []byte {
	b = append(b, '{')
	n := len(b)
	sep := func() {
		if len(b) > n {
			b = append(b, ',')
		}
	}
	if o.ToolMode != "" {
		b = append(b, `"toolMode":`...)
		b = chat.AppendString(b, o.ToolMode)
	}
	if o.Justification != "" {
		sep()
		b = append(b, `"justification":`...)
		b = chat.AppendString(b, o.Justification)
	}
	if mo := o.ModelOptions.appendJSON(nil); len(mo) > 2 {
		sep()
		b = append(b, `"modelOptions":`...)
		b = append(b, mo...)
	}
	return append(b, '}')
}

func (m *ModelOptions) appendJSON(b []byte) []byte {
	b = append(b, '{')
	n := len(b)
	sep := func() {
		if len(b) > n {
			b = append(b, ',')
		}
	}
	if m.MaxTokens != 0 {
		b = append(b, `"max_tokens":`...)
		b = strconv.AppendInt(b, int64(m.MaxTokens), 10)
	}
	if m.Temperature != nil {
		sep()
		b = append(b, `"temperature":`...)
		b = strconv.AppendFloat(b, *m.Temperature, 'g', -1, 64)
	}
	if m.TopP != nil {
		sep()
		b = append(b, `"top_p":`...)
		b = strconv.AppendFloat(b, *m.TopP, 'g', -1, 64)
	}
	if len(m.StopSequences) > 0 {
		sep()
		b = append(b, `"stop_sequences":[`...)
		for i, s := range m.StopSequences {
			if i > 0 {
				b = append(b, ',')
			}
			b = chat.AppendString(b, s)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendRaw appends a JSON value, checked and compacted.
func appendRaw(b []byte, v json.RawMessage, what string) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, v); err != nil {
		return nil, fmt.Errorf("vscodelm: %s is not valid JSON: %v", what, err)
	}
	return buf.Bytes(), nil
}
