package oaicompat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/chat"
)

// Dialect is what an OpenAI-shaped format takes; Convert follows it.
type Dialect struct {
	// Name is the format's name in warnings: "openai", "deepseek", ...
	Name string
	// IDs maps tool-call ids (nil: unchanged).
	IDs *IDMap
	// NoImages: the format takes no images; each becomes a text stub
	// (chat.ImageStub) with a warning.
	NoImages bool
	// Document makes the part for a document that is not text (a base64 or
	// url source, ...), or returns nil when the format cannot carry it (a
	// text stub with a warning). A nil Document carries none.
	Document func(b *chat.Block) Part
	// MergeToolResultText appends the text of a user message that has tool
	// results to its last tool message instead of a separate user message
	// (openai.Options.MergeToolResultText).
	MergeToolResultText bool
	// KeepReasoning: the text of an assistant message's thinking and
	// reasoning blocks is returned in Conversion.Reasoning, for the dialect
	// to carry or drop, instead of being dropped with a warning.
	KeepReasoning bool
	// AnyChoice is tool_choice "any" in the format ("" means "required").
	AnyChoice string
	// NoParallelToolCalls: the format has no parallel_tool_calls switch;
	// disable_parallel_tool_use is dropped with a warning.
	NoParallelToolCalls bool
	// ImageDetail: the format takes an image's "detail" (its resolution,
	// hence its cost), carried from the image source's Extra; without
	// it, detail is dropped with a warning.
	ImageDetail bool
	// Strict: the format takes a function tool's "strict" (schema
	// adherence), carried from the tool's Extra; without it, strict is
	// dropped with a warning like any field the format lacks.
	Strict bool
}

// Conversion is a request's messages, tools and tool choice in the
// OpenAI shape.
type Conversion struct {
	Messages []Message
	// Reasoning, when Dialect.KeepReasoning, has one entry per message:
	// the reasoning of an assistant message, in order, else nil.
	Reasoning         [][]Reasoning
	Tools             []Tool
	ToolChoice        *ToolChoice
	ParallelToolCalls *bool
}

// Reasoning is the text of a thinking or reasoning block and the block's
// path (for a dialect's warning when it drops it).
type Reasoning struct {
	Path, Text string
}

// Placeholders in a tool message: for what follows in a user message, for
// an empty result, and before the text of an error result.
const (
	seeImage    = "(see following user message for image)"
	seeDocument = "(see following user message for document)"
	emptyResult = "(empty)"
	errorPrefix = "Error: "
)

// Convert converts req's system prompt, messages and tools as the
// documentation of wire/openai says, for dialect d. req is not changed.
// An error means req is not a valid canonical request (a role other than
// user or assistant, an unknown tool_choice type).
func Convert(req chat.Request, d Dialect) (Conversion, []chat.Warning, error) {
	if d.AnyChoice == "" {
		d.AnyChoice = "required"
	}
	c := converter{d: d}
	c.out.Messages = make([]Message, 0, len(req.Messages)+1)
	if d.KeepReasoning {
		c.out.Reasoning = make([][]Reasoning, 0, len(req.Messages)+1)
	}
	c.system(req.System)
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case chat.User:
			c.user(i, m)
		case chat.Assistant:
			c.assistant(i, m)
		default:
			return Conversion{}, nil, &chat.Error{Path: chat.MessagePath(i) + ".role", Msg: fmt.Sprintf("%q is not user or assistant", m.Role)}
		}
		if len(m.ReasoningDetails) > 0 {
			c.warn(at(chat.MessagePath(i)+".reasoning_details"), "%s cannot carry reasoning_details: dropped", d.Name)
		}
		c.extras(chat.MessagePath(i), m.Extra)
	}
	if err := c.tools(&req); err != nil {
		return Conversion{}, nil, err
	}
	if len(req.Metadata) > 0 {
		c.warn(at("metadata"), "not part of the %s format: dropped", d.Name)
	}
	c.extras("", req.Extra)
	return c.out, c.warns, nil
}

type converter struct {
	d     Dialect
	out   Conversion
	warns []chat.Warning
}

// place is where a warning points: a path, and for content inside a tool
// result, which part of it (the path stays the tool_result block's, the
// place every checker knows).
type place struct{ path, sub string }

func at(path string) place { return place{path: path} }

func (c *converter) warn(p place, format string, args ...any) {
	c.warns = append(c.warns, chat.Warning{Path: p.path, Message: p.sub + fmt.Sprintf(format, args...)})
}

func (c *converter) emit(m Message, rs []Reasoning) {
	c.out.Messages = append(c.out.Messages, m)
	if c.d.KeepReasoning {
		c.out.Reasoning = append(c.out.Reasoning, rs)
	}
}

func (c *converter) system(s *chat.Content) {
	if s == nil {
		return
	}
	text := s.Text
	if !s.IsString {
		var texts []string
		for j := range s.Blocks {
			b := &s.Blocks[j]
			p := at("system[" + strconv.Itoa(j) + "]")
			if b.Type != chat.TypeText {
				c.warn(p, "the system prompt takes text blocks, not %q: dropped", b.Type)
				continue
			}
			c.citations(p, b)
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		}
		text = strings.Join(texts, "\n")
	}
	if text != "" {
		c.emit(Message{Role: "system", Content: Text(text)}, nil)
	}
}

func (c *converter) user(i int, m *chat.Message) {
	if m.Content.IsString {
		if m.Content.Text != "" {
			c.emit(Message{Role: "user", Content: Text(m.Content.Text)}, nil)
		}
		return
	}
	blocks := m.Content.Blocks
	merge := false
	if c.d.MergeToolResultText {
		for j := range blocks {
			if blocks[j].Type == chat.TypeToolResult {
				merge = true
				break
			}
		}
	}
	var own, follow Parts
	var merged []string
	for j := range blocks {
		b := &blocks[j]
		p := at(chat.BlockPath(i, j))
		switch b.Type {
		case chat.TypeText:
			c.citations(p, b)
			switch {
			case b.Text == "":
			case merge:
				merged = append(merged, b.Text)
			default:
				own = append(own, NewTextPart(b.Text))
			}
		case chat.TypeImage:
			own = append(own, c.image(p, b.Source))
		case chat.TypeDocument:
			own = c.document(p, b, false, own)
		case chat.TypeToolResult:
			follow = c.toolResult(p, b, follow)
		case chat.TypeToolUse:
			c.warn(p, "a tool_use block belongs in an assistant message: dropped")
		default:
			c.other(p, b)
		}
	}
	if len(merged) > 0 {
		last := &c.out.Messages[len(c.out.Messages)-1] // a tool message: merge needs a tool_result
		last.Content = Text(string(last.Content.(Text)) + "\n" + strings.Join(merged, "\n"))
	}
	parts := append(follow, own...)
	if len(parts) > 0 {
		c.emit(Message{Role: "user", Content: parts}, nil)
	}
}

// toolResult emits b's tool message and returns follow with the parts the
// tool message cannot carry appended.
func (c *converter) toolResult(p place, b *chat.Block, follow Parts) Parts {
	var lines []string
	if b.Content != nil {
		if b.Content.IsString {
			if b.Content.Text != "" {
				lines = append(lines, b.Content.Text)
			}
		}
		for k := range b.Content.Blocks {
			nb := &b.Content.Blocks[k]
			np := place{path: p.path, sub: "tool result content[" + strconv.Itoa(k) + "]: "}
			switch nb.Type {
			case chat.TypeText:
				c.citations(np, nb)
				if nb.Text != "" {
					lines = append(lines, nb.Text)
				}
			case chat.TypeImage:
				part := c.image(np, nb.Source)
				if t, ok := part.(TextPart); ok {
					lines = append(lines, t.Text)
				} else {
					follow = append(follow, part)
					lines = append(lines, seeImage)
				}
			case chat.TypeDocument:
				for _, part := range c.document(np, nb, false, nil) {
					if t, ok := part.(TextPart); ok {
						lines = append(lines, t.Text)
					} else {
						follow = append(follow, part)
						lines = append(lines, seeDocument)
					}
				}
			case chat.TypeToolResult, chat.TypeToolUse:
				c.warn(np, "a %s block inside a tool result: dropped", nb.Type)
			default:
				c.other(np, nb)
			}
		}
	}
	text := strings.Join(lines, "\n")
	if text == "" {
		text = emptyResult
	}
	if b.IsError {
		text = errorPrefix + text
	}
	c.emit(Message{Role: "tool", Content: Text(text), ToolCallID: c.d.IDs.Map(b.ToolUseID)}, nil)
	return follow
}

func (c *converter) assistant(i int, m *chat.Message) {
	if m.Content.IsString {
		if m.Content.Text != "" {
			c.emit(Message{Role: "assistant", Content: Text(m.Content.Text)}, nil)
		}
		return
	}
	var texts []string
	var calls []ToolCall
	var rs []Reasoning
	for j := range m.Content.Blocks {
		b := &m.Content.Blocks[j]
		p := at(chat.BlockPath(i, j))
		switch b.Type {
		case chat.TypeText:
			c.citations(p, b)
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case chat.TypeToolUse:
			calls = append(calls, ToolCall{ID: c.d.IDs.Map(b.ID), Type: "function",
				Function: FunctionCall{Name: b.Name, Arguments: Arguments(b.Input)}})
		case chat.TypeThinking, chat.TypeReasoning:
			if !c.d.KeepReasoning {
				c.other(p, b)
				continue
			}
			text := b.Thinking
			if b.Type == chat.TypeReasoning {
				text = b.Text
			}
			if text != "" {
				rs = append(rs, Reasoning{Path: p.path, Text: text})
			}
		case chat.TypeImage:
			c.warn(p, "%s assistant messages take only text: image replaced by a text stub", c.d.Name)
			texts = append(texts, chat.ImageStub(b.Source))
		case chat.TypeDocument:
			for _, part := range c.document(p, b, true, nil) {
				texts = append(texts, part.(TextPart).Text)
			}
		case chat.TypeToolResult:
			c.warn(p, "a tool_result block belongs in a user message: dropped")
		default:
			c.other(p, b)
		}
	}
	if len(texts) == 0 && len(calls) == 0 && len(rs) == 0 {
		return
	}
	c.emit(Message{Role: "assistant", Content: Text(strings.Join(texts, "\n")), ToolCalls: calls}, rs)
}

// other warns about a block that is dropped: reasoning of any kind (when
// not kept) and unknown types.
func (c *converter) other(p place, b *chat.Block) {
	switch b.Type {
	case chat.TypeThinking, chat.TypeRedactedThinking, chat.TypeReasoning, chat.TypeThoughtSignature:
		c.warn(p, "%s cannot carry %s blocks: dropped", c.d.Name, b.Type)
	default:
		c.warn(p, "%s has no %q blocks: dropped", c.d.Name, b.Type)
	}
}

func (c *converter) citations(p place, b *chat.Block) {
	if len(b.Citations) > 0 {
		c.warn(p, "%s has no citations: dropped (the text is kept)", c.d.Name)
	}
}

// image is the part for an image: an image_url part, or a text stub (with
// a warning) when the dialect or the source does not allow one.
func (c *converter) image(p place, s *chat.Source) Part {
	if c.d.NoImages {
		c.warn(p, "%s takes no images: replaced by a text stub", c.d.Name)
		return NewTextPart(chat.ImageStub(s))
	}
	if s != nil {
		var part ImagePart
		switch {
		case s.Type == "base64" && s.MediaType != "" && s.Data != "":
			part = NewImagePart(DataURL(s.MediaType, s.Data))
		case s.Type == "url" && s.URL != "":
			part = NewImagePart(s.URL)
		}
		if part.Type != "" {
			if v, ok := s.Extra["detail"]; ok {
				var detail string
				if c.d.ImageDetail && json.Unmarshal(v, &detail) == nil {
					part.ImageURL.Detail = detail
				} else {
					c.warn(place{path: p.path, sub: p.sub + "source.detail: "}, "%s takes no image detail: dropped", c.d.Name)
				}
			}
			return part
		}
	}
	c.warn(p, "%s cannot carry an image from a %s source: replaced by a text stub", c.d.Name, sourceKind(s))
	return NewTextPart(chat.ImageStub(s))
}

// document appends b's parts to parts: a text part for a text document,
// the dialect's part for another (preceded by a text part with the
// document's context), or a text stub with a warning. textOnly allows text
// parts only.
func (c *converter) document(p place, b *chat.Block, textOnly bool, parts Parts) Parts {
	s := b.Source
	switch {
	case s == nil:
	case s.Type == "text":
		if t := documentText(b, s.Data); t != "" {
			parts = append(parts, NewTextPart(t))
		}
		return parts
	case s.Type == "base64" && strings.HasPrefix(s.MediaType, "text/"):
		if body, err := base64.StdEncoding.DecodeString(s.Data); err == nil && utf8.Valid(body) {
			if t := documentText(b, string(body)); t != "" {
				parts = append(parts, NewTextPart(t))
			}
			return parts
		}
		c.warn(p, "the document's data is not base64 of UTF-8 text: replaced by a text stub")
		return append(parts, NewTextPart(chat.DocumentStub(b)))
	case !textOnly && c.d.Document != nil:
		if part := c.d.Document(b); part != nil {
			if b.Context != "" {
				parts = append(parts, NewTextPart(b.Context))
			}
			return append(parts, part)
		}
	}
	if textOnly {
		c.warn(p, "%s assistant messages take only text: document replaced by a text stub", c.d.Name)
	} else {
		c.warn(p, "%s cannot carry a document from a %s source: replaced by a text stub", c.d.Name, sourceKind(s))
	}
	return append(parts, NewTextPart(chat.DocumentStub(b)))
}

// sourceKind describes a source for a warning: "base64 application/zip",
// "url", "file".
func sourceKind(s *chat.Source) string {
	switch {
	case s == nil:
		return "missing"
	case s.Type == "base64" && s.MediaType != "":
		return "base64 " + s.MediaType
	}
	return s.Type
}

// documentText is a text document's title, context and body, the
// non-empty ones, separated by blank lines.
func documentText(b *chat.Block, body string) string {
	var parts []string
	for _, s := range []string{b.Title, b.Context, body} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

// DataURL is "data:<media type>;base64,<data>".
func DataURL(mediaType, data string) string {
	return "data:" + mediaType + ";base64," + data
}

// Arguments is a tool_use input as compact JSON text ("{}" when empty).
func Arguments(in json.RawMessage) string {
	if len(in) == 0 {
		return "{}"
	}
	if !bytes.ContainsAny(in, " \t\r\n") {
		return string(in)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, in) != nil {
		return string(in)
	}
	return buf.String()
}

func (c *converter) tools(req *chat.Request) error {
	for i := range req.Tools {
		t := &req.Tools[i]
		path := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "" {
			c.warn(at(path), "%s has no provider-defined tools (type %q): dropped", c.d.Name, t.Type)
			continue
		}
		extra := t.Extra
		var strict json.RawMessage
		if v, ok := extra["strict"]; ok && c.d.Strict {
			strict = chat.CloneRaw(v)
			extra = maps.Clone(extra)
			delete(extra, "strict")
		}
		c.extras(path, extra)
		c.out.Tools = append(c.out.Tools, Tool{Type: "function",
			Function: Function{Name: t.Name, Description: t.Description, Parameters: chat.CloneRaw(t.InputSchema), Strict: strict}})
	}
	tc := req.ToolChoice
	if tc == nil {
		return nil
	}
	var choice ToolChoice
	switch tc.Type {
	case "auto", "none":
		choice.Mode = tc.Type
	case "any":
		choice.Mode = c.d.AnyChoice
	case "tool":
		if tc.Name == "" {
			return &chat.Error{Path: "tool_choice.name", Msg: "required when type is tool"}
		}
		choice.Name = tc.Name
	default:
		return &chat.Error{Path: "tool_choice.type", Msg: fmt.Sprintf("%q is not one of auto, any, tool, none", tc.Type)}
	}
	if len(c.out.Tools) == 0 {
		c.warn(at("tool_choice"), "%s takes tool_choice only with tools, and there are none: dropped", c.d.Name)
		return nil
	}
	c.out.ToolChoice = &choice
	if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
		if c.d.NoParallelToolCalls {
			c.warn(at("tool_choice.disable_parallel_tool_use"), "%s has no switch for parallel tool calls: dropped", c.d.Name)
		} else {
			no := false
			c.out.ParallelToolCalls = &no
		}
	}
	return nil
}

// extras warns about each field ctxkit does not model, in key order.
func (c *converter) extras(path string, extra map[string]json.RawMessage) {
	for _, k := range chat.SortedKeys(extra) {
		p := k
		if path != "" {
			p = path + "." + k
		}
		c.warn(at(p), "not part of the %s format: dropped", c.d.Name)
	}
}
