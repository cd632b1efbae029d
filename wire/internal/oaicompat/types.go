// Package oaicompat holds what the OpenAI-shaped formats (wire/openai,
// wire/mistral, wire/deepseek) share: the Chat Completions wire types,
// the conversion of a canonical request to them (Convert with a Dialect),
// the tool-call id normalisers (IDMap), parameter resolution, and the
// pieces of stream decoding (the SSE event loop, tool-call assembly, the
// usage object, in-stream errors). Its names are exported for those
// packages only; wire/openai re-exports the wire types its users see.
package oaicompat

import "encoding/json"

// StreamOptions asks for the usage chunk at the end of a stream.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message: role system, user, assistant or tool.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Content is a message's content: Text or Parts.
type Content interface{ isContent() }

// Text is string content.
type Text string

// Parts is an array of content parts.
type Parts []Part

func (Text) isContent()  {}
func (Parts) isContent() {}

// Part is one content part: TextPart, ImagePart, FilePart, or a dialect's
// own part type.
type Part interface {
	// PartType is the part's "type".
	PartType() string
}

// TextPart is {"type":"text","text":...}; make one with NewTextPart.
type TextPart struct {
	Type         string        `json:"type"`
	Text         string        `json:"text"`
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// NewTextPart is a text part.
func NewTextPart(text string) TextPart { return TextPart{Type: "text", Text: text} }

// PartType is "text".
func (TextPart) PartType() string { return "text" }

// ImagePart is {"type":"image_url","image_url":{"url":...}}; make one with
// NewImagePart.
type ImagePart struct {
	Type     string   `json:"type"`
	ImageURL ImageURL `json:"image_url"`
}

// ImageURL is an image's URL: an https URL or a data URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"` // low, high (auto when absent)
}

// NewImagePart is an image_url part.
func NewImagePart(url string) ImagePart {
	return ImagePart{Type: "image_url", ImageURL: ImageURL{URL: url}}
}

// PartType is "image_url".
func (ImagePart) PartType() string { return "image_url" }

// FilePart is {"type":"file","file":{"filename","file_data"}}; make one
// with NewFilePart.
type FilePart struct {
	Type string   `json:"type"`
	File FileData `json:"file"`
}

// FileData is a file sent inline: file_data is a data URL.
type FileData struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data"`
}

// NewFilePart is a file part.
func NewFilePart(filename, dataURL string) FilePart {
	return FilePart{Type: "file", File: FileData{Filename: filename, FileData: dataURL}}
}

// PartType is "file".
func (FilePart) PartType() string { return "file" }

// CacheControl is {"type":"ephemeral"}, the marker of the caching
// strategies.
type CacheControl struct {
	Type string `json:"type"`
}

// ToolCall is one call in an assistant message's tool_calls.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a call's function name and arguments (JSON text).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is {"type":"function","function":{...}}.
type Tool struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function is a tool's name, description and JSON Schema parameters.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      json.RawMessage `json:"strict,omitempty"`
}

// ToolChoice is a mode ("auto", "required", "none"; Mistral's "any"), or,
// when Name is set, {"type":"function","function":{"name":Name}}.
type ToolChoice struct {
	Mode string
	Name string
}

type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// MarshalJSON writes the mode string or the named-function object.
func (t ToolChoice) MarshalJSON() ([]byte, error) {
	if t.Name == "" {
		return json.Marshal(t.Mode)
	}
	n := namedToolChoice{Type: "function"}
	n.Function.Name = t.Name
	return json.Marshal(n)
}
