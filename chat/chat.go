// Package chat is ctxkit's canonical conversation: one request shape, the
// Anthropic Messages shape, that the wire packages (wire/openai,
// wire/gemini, wire/bedrock, ...) convert to each provider's format.
//
// JSON in and out is the Anthropic shape. A request has a system prompt (a
// string or text blocks), messages (role user or assistant; content a
// string or blocks), tools, a tool choice and parameters. Blocks are text,
// image, document, tool_use, tool_result, thinking and redacted_thinking,
// plus the extension blocks agents carry: reasoning (plain reasoning text)
// and thought_signature (Gemini's), and a message-level reasoning_details
// array. Any block may carry cache_control. Fields ctxkit does not model
// and blocks of unknown types are kept as they came, so a request survives
// a round trip through this package unchanged.
//
// Converting never drops content silently: when a format cannot carry
// something, the converter applies its documented fallback and returns a
// Warning naming the place (messages[2].content[1]).
//
// # Parameters
//
// Every converter resolves a request's parameters with ResolveParams, so the
// rules for each format live in one place:
//
//	format     max tokens if not given   temperature / top_p                     reasoning
//	anthropic  8192                      kept; dropped (warning) with thinking   thinking.budget_tokens
//	bedrock    8192                      kept; dropped (warning) with thinking   additionalModelRequestFields.thinking
//	gemini     8192                      kept                                    thinkingConfig.thinkingBudget
//	openai     not sent                  kept; dropped (warning) when reasoning  reasoning_effort
//	deepseek   not sent                  kept; dropped (warning) when reasoning  by model; no budget field (warning)
//	mistral    not sent                  kept                                    not sent (warning)
//	vscodelm   -                         -                                       -
//	simple     -                         -                                       -
//
// A reasoning budget is clamped to at least MinReasoningBudget and at most
// 80% of max tokens; when max tokens leave no room for the minimum, max
// tokens are raised (warning). An effort becomes a budget as a share of
// max tokens (minimal: the minimum, low 20%, medium 50%, high 80%); a
// budget becomes an effort by the same shares (up to 25% low, up to 50%
// medium, above high).
package chat

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Roles.
const (
	User      = "user"
	Assistant = "assistant"
)

// Block types.
const (
	TypeText             = "text"
	TypeImage            = "image"
	TypeDocument         = "document"
	TypeToolUse          = "tool_use"
	TypeToolResult       = "tool_result"
	TypeThinking         = "thinking"
	TypeRedactedThinking = "redacted_thinking"
	TypeReasoning        = "reasoning"         // extension: plain reasoning text
	TypeThoughtSignature = "thought_signature" // extension: Gemini's signature
)

// Request is a canonical request.
type Request struct {
	Model         string
	System        *Content // nil: none; a string or text blocks
	Messages      []Message
	Tools         []Tool
	ToolChoice    *ToolChoice
	MaxTokens     int
	Temperature   *float64
	TopP          *float64
	StopSequences []string
	// Thinking is Anthropic's extended-thinking switch and budget.
	Thinking *Thinking
	// ReasoningEffort (low, medium, high) is the effort-style control of
	// formats that have one; ctxkit's extension field "reasoning_effort".
	ReasoningEffort string
	// Format asks for structured output: the response's text is JSON
	// (of Format.Schema when one is given). nil: free text.
	Format *OutputFormat
	Stream bool
	// StreamUsage: the client asked for a stream's usage in a chunk of its
	// own (OpenAI's stream_options.include_usage). Only the streams of the
	// dialects where usage is opt-in depend on it; it is not part of the
	// JSON form.
	StreamUsage bool
	Metadata    json.RawMessage
	// Extra holds top-level fields ctxkit does not model, kept for a round trip.
	Extra map[string]json.RawMessage
}

// OutputFormat is a request for structured output, in the terms every
// dialect's form maps to: OpenAI's response_format and text.format,
// Anthropic's output_config.format, Gemini's responseSchema.
type OutputFormat struct {
	// Type is "json_schema" (the text is JSON matching Schema) or
	// "json_object" (the text is a JSON object).
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"` // a JSON Schema object
	Strict      *bool           `json:"strict,omitempty"`
}

// Thinking is {"type":"enabled","budget_tokens":N} (or "disabled").
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// ReasoningRequested reports whether the request asks for reasoning.
func (r *Request) ReasoningRequested() bool {
	return (r.Thinking != nil && r.Thinking.Type != "disabled") || r.ReasoningEffort != ""
}

// Message is one turn.
type Message struct {
	Role    string
	Content Content
	// ReasoningDetails is OpenRouter's message-level reasoning_details
	// array, kept as it came.
	ReasoningDetails json.RawMessage
	Extra            map[string]json.RawMessage
}

// Content is a string or a list of blocks.
type Content struct {
	// IsString: the content was (and is written as) a JSON string, Text.
	IsString bool
	Text     string
	Blocks   []Block
}

// Str is string content.
func Str(s string) Content { return Content{IsString: true, Text: s} }

// Of is block content.
func Of(blocks ...Block) Content { return Content{Blocks: blocks} }

// AsBlocks is the content as blocks: string content is one text block (none
// for an empty string).
func (c Content) AsBlocks() []Block {
	if !c.IsString {
		return c.Blocks
	}
	if c.Text == "" {
		return nil
	}
	return []Block{{Type: TypeText, Text: c.Text}}
}

// PlainText joins the text of the content's non-empty text blocks with sep.
func (c Content) PlainText(sep string) string {
	if c.IsString {
		return c.Text
	}
	var b strings.Builder
	first := true
	for _, bl := range c.Blocks {
		if bl.Type != TypeText || bl.Text == "" {
			continue
		}
		if !first {
			b.WriteString(sep)
		}
		b.WriteString(bl.Text)
		first = false
	}
	return b.String()
}

// Block is one content block. Which fields are used depends on Type.
type Block struct {
	Type string
	// Text: text and reasoning blocks.
	Text string
	// Source: image and document blocks.
	Source *Source
	// Title and Context: document blocks.
	Title, Context string
	// ID, Name and Input (a JSON object): tool_use blocks.
	ID, Name string
	Input    json.RawMessage
	// ToolUseID, Content and IsError: tool_result blocks.
	ToolUseID string
	Content   *Content
	IsError   bool
	// Thinking and Signature: thinking blocks; Signature alone:
	// thought_signature blocks.
	Thinking, Signature string
	// Data: redacted_thinking blocks.
	Data string
	// CacheControl: any block, e.g. {"type":"ephemeral"}.
	CacheControl json.RawMessage
	// Citations: text blocks with citations, documents.
	Citations json.RawMessage
	// Extra holds fields ctxkit does not model; for a block of an unknown
	// type it holds every field but "type".
	Extra map[string]json.RawMessage
}

// Known reports whether ctxkit models the block's type.
func (b *Block) Known() bool {
	switch b.Type {
	case TypeText, TypeImage, TypeDocument, TypeToolUse, TypeToolResult, TypeThinking,
		TypeRedactedThinking, TypeReasoning, TypeThoughtSignature:
		return true
	}
	return false
}

// Source is where an image's or a document's bytes are.
type Source struct {
	Type      string `json:"type"` // base64, url, text (documents), ...
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"` // base64 (or the text of a text document)
	URL       string `json:"url,omitempty"`
	// Extra holds fields ctxkit does not model (file_id, content, ...).
	Extra map[string]json.RawMessage `json:"-"`
}

// Tool is a tool the model may call.
type Tool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage // a JSON Schema object
	CacheControl json.RawMessage
	// Type is set for provider-defined tools (e.g. "web_search_20250305");
	// empty for a custom tool.
	Type  string
	Extra map[string]json.RawMessage
}

// ToolChoice is auto, any, tool (with Name) or none.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

// Warning says what a converter could not carry and what it did instead.
type Warning struct {
	Path    string `json:"path"` // messages[2].content[1], system, tools[0], ...
	Message string `json:"message"`
}

func (w Warning) String() string {
	if w.Path == "" {
		return w.Message
	}
	return w.Path + ": " + w.Message
}

// Warnf makes a warning.
func Warnf(path, format string, args ...any) Warning {
	return Warning{Path: path, Message: fmt.Sprintf(format, args...)}
}

// MessagePath is "messages[i]".
func MessagePath(i int) string { return "messages[" + strconv.Itoa(i) + "]" }

// BlockPath is "messages[i].content[j]".
func BlockPath(i, j int) string { return MessagePath(i) + ".content[" + strconv.Itoa(j) + "]" }

// Code is a stable, machine-readable kind of Error.
type Code string

// The kinds of Error.
const (
	CodeInvalidJSON    Code = "invalid_json"    // the request, or a value in it, is not valid JSON
	CodeDuplicateField Code = "duplicate_field" // one key given twice in an object
	CodeMissingField   Code = "missing_field"   // a field the request needs is absent or empty
	CodeInvalidValue   Code = "invalid_value"   // a value of the wrong kind or form
	CodeTooLarge       Code = "too_large"       // past one of the Max bounds
)

// Error is a request ctxkit cannot read, with the place at fault.
type Error struct {
	// Code is the kind of fault; "" when a converter built the error
	// without one.
	Code Code
	Path string // messages[3].content[1].source, or empty for the whole request
	Msg  string
	Err  error // the underlying cause, if any
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// errorf is an invalid value at path.
func errorf(path, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidValue, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// codef is an Error of the given code at path.
func codef(code Code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)}
}
