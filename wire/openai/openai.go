// Package openai converts a canonical request (package chat) to an OpenAI
// Chat Completions request and back, reads and writes Chat Completions
// streams, and names the wire types the other OpenAI-shaped formats
// (wire/deepseek, wire/mistral) build on. Its mapping is theirs too, with
// the differences each of them documents; it also places the caching
// strategies for OpenAI-compatible routers.
//
// # Mapping
//
// The system prompt becomes a leading {"role":"system"} message whose
// content is a string: string content as it is, text blocks joined with
// newlines (empty blocks skipped); an empty system prompt sends no system
// message.
//
// User messages: string content passes through as a string; block content
// becomes an array of content parts. Text blocks become text parts (empty
// text is dropped); images become image_url parts, a base64 image as a data
// URL ("data:<media type>;base64,<data>"), a url image as its URL; a text
// document becomes a text part of its title, context and text (the
// non-empty ones, separated by blank lines); a base64 document of a text/*
// media type is decoded to such a text part; a base64 PDF becomes a file
// part
//
//	{"type":"file","file":{"filename","file_data":"data:application/pdf;base64,..."}}
//
// whose filename is the document's title ("document.pdf" without one),
// preceded by a text part with the document's context when it has one. A user message left with no parts is omitted.
//
// Tool results: every tool_result block of a user message becomes a
// {"role":"tool","tool_call_id","content"} message, placed before the
// message's other content (which follows in one user message). The content
// is a string: string content as it is, blocks flattened to their text
// joined with newlines; an empty result is "(empty)"; is_error, which the
// format has no flag for, prefixes the content with "Error: ". An image in
// a tool result cannot be carried by a tool message: the tool content
// says "(see following user message for image)" in its place, and the image
// is sent as an image_url part at the start of the user message that
// follows the tool messages (a PDF likewise, "(see following user message
// for document)"). With Options.MergeToolResultText, the text blocks of a
// user message that has tool results are appended (after a newline) to the
// content of its last tool message instead of going into a user message;
// its other parts still follow in a user message.
//
// Assistant messages: string content passes through; the text blocks are
// joined with newlines into the content string, and tool_use blocks become
// tool_calls {"id","type":"function","function":{"name","arguments"}} where
// arguments is the input object as compact JSON text. The content is ""
// when the message has only tool calls; an assistant message with neither
// text nor tool calls is omitted. Assistant content is text only, so an
// image or a non-text document there becomes a text stub (warning).
//
// Tools become
//
//	{"type":"function","function":{"name","description","parameters"}}
//
// with the input schema as parameters. tool_choice auto,
// any, none and tool become "auto", "required", "none" and
// {"type":"function","function":{"name"}}; disable_parallel_tool_use
// becomes "parallel_tool_calls":false.
//
// Structured output: the request's Format becomes response_format,
// {"type":"json_object"} or {"type":"json_schema","json_schema":{name,
// description, schema, strict}} (name "response" when the format has
// none). The fields of the request's Extra that the field policy carries
// to OpenAI (seed, user, metadata, store, service_tier, logit_bias, the
// penalties, ...: wire.Carries) are sent as they came.
//
// Parameters are resolved by chat.ResolveParams (chat.FormatOpenAI): max
// tokens go to max_completion_tokens (the current field, which the
// reasoning models require; Options.LegacyMaxTokens sends max_tokens
// instead, for servers that know only that), temperature, top_p, stop (at
// most 4 sequences; more are dropped with a warning) and reasoning_effort
// when reasoning is asked for. stream sends "stream":true with
// "stream_options":{"include_usage":true}.
//
// Tool-call ids pass through unchanged unless Options.ToolCallIDs names a
// normaliser (see IDMode); it maps tool_calls[].id and tool_call_id alike.
//
// # Fallbacks
//
// Each of these returns a warning naming the place:
//
//   - thinking, redacted_thinking, reasoning and thought_signature blocks,
//     and a message's reasoning_details: Chat Completions cannot carry
//     reasoning back to the model; dropped.
//   - blocks of unknown types: dropped.
//   - a tool_use block in a user message, or a tool_result block in an
//     assistant message: dropped.
//   - an image whose source is neither base64 nor url, or a document the
//     format cannot carry (a url or file document, a base64 document that
//     is neither a PDF nor text): replaced by a text stub
//     ("[Image: image/png]", "[Document: title]").
//   - citations on a text block: dropped (the text is kept).
//   - provider-defined tools (a tool with a type): dropped; a tool_choice
//     with no tools left: dropped.
//   - fields ctxkit does not model on a message or a tool, the request's
//     fields the field policy does not carry to OpenAI, and the request's
//     metadata: dropped.
//   - the parameter rules of chat.ResolveParams (temperature and top_p are
//     not sent with reasoning).
//
// cache_control markers are not part of the OpenAI format (OpenAI caches
// prompt prefixes by itself). They carry no content, so they are dropped
// without a warning, whatever the strategy. Unmodelled fields of known
// blocks (and a document's citation settings) are ignored likewise.
//
// # Caching strategies
//
// Options.Cache places cache_control markers for Anthropic-style caching
// behind OpenAI-compatible routers, in the output only (the request is not
// changed):
//
//   - "openrouter": the system content becomes [{"type":"text","text":...,
//     "cache_control":{"type":"ephemeral"}}]; every user message with
//     string content gets an array of one text part; the last text part of
//     each of the last two user messages is marked, and a user message
//     without a text part gets a marked placeholder text part "..."
//     appended.
//   - "gemini-every-n": the system message as above; every Nth user message
//     (counting the output's user messages from 1: the Nth, the 2Nth, ...;
//     N is Options.CacheEvery, 10 by default) is marked the same way; N = 0
//     marks no user message; every user string becomes an array.
//
// "User messages" are the output's role "user" messages: tool messages are
// neither counted nor marked.
package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// Request is a Chat Completions request.
type Request struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Tools               []Tool         `json:"tools,omitempty"`
	ToolChoice          *ToolChoice    `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	TopP                *float64       `json:"top_p,omitempty"`
	Stop                []string       `json:"stop,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	// ResponseFormat asks for structured output.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// Extra holds the fields of the canonical request's Extra that the
	// field policy carries to OpenAI as they came (seed, user, ...,
	// wire.Carries); they are written after the others, in key order.
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the request with its Extra fields.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	b, err := json.Marshal(plain(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	return AppendFields(b, r.Extra)
}

// AppendFields adds fields, in key order, to the JSON object obj (which
// ends with its '}'): the way the OpenAI-shaped formats write the fields
// they carry as they came.
func AppendFields(obj []byte, fields map[string]json.RawMessage) ([]byte, error) {
	buf := bytes.NewBuffer(obj[:len(obj)-1])
	empty := len(bytes.TrimSpace(obj)) == 2
	for _, k := range chat.SortedKeys(fields) {
		if !empty {
			buf.WriteByte(',')
		}
		empty = false
		key, _ := json.Marshal(k)
		buf.Write(key)
		buf.WriteByte(':')
		if err := json.Compact(buf, fields[k]); err != nil {
			return nil, fmt.Errorf("%s: not valid JSON: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// ResponseFormat is response_format: {"type":"json_object"} or
// {"type":"json_schema","json_schema":{...}}.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a json_schema format's schema and how it applies.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// DefaultFormatName names a json_schema format that has no name (one read
// from Anthropic's output_config.format): OpenAI requires one.
const DefaultFormatName = "response"

// NewResponseFormat is the response_format of a canonical format (nil for
// none): the OpenAI-shaped formats (Mistral's too) share it.
func NewResponseFormat(f *chat.OutputFormat) *ResponseFormat {
	if f == nil {
		return nil
	}
	if f.Type != "json_schema" {
		return &ResponseFormat{Type: f.Type}
	}
	name := f.Name
	if name == "" {
		name = DefaultFormatName
	}
	var strict *bool
	if f.Strict != nil {
		v := *f.Strict
		strict = &v
	}
	return &ResponseFormat{Type: f.Type, JSONSchema: &JSONSchema{Name: name, Description: f.Description, Schema: chat.CloneRaw(f.Schema), Strict: strict}}
}

// The Chat Completions wire types. They are defined with the conversion
// that wire/mistral and wire/deepseek share, and named here, where the
// format is documented.
type (
	// StreamOptions asks for the usage chunk at the end of a stream:
	// {"include_usage":true}.
	StreamOptions = oaicompat.StreamOptions
	// Message is one message: role system, user, assistant or tool;
	// {"role","content","tool_calls","tool_call_id"}.
	Message = oaicompat.Message
	// Content is a message's content: Text or Parts.
	Content = oaicompat.Content
	// Text is string content.
	Text = oaicompat.Text
	// Parts is an array of content parts.
	Parts = oaicompat.Parts
	// Part is one content part: TextPart, ImagePart, FilePart, or a
	// dialect's own part type; its PartType method says its "type".
	Part = oaicompat.Part
	// TextPart is {"type":"text","text","cache_control"}.
	TextPart = oaicompat.TextPart
	// ImagePart is {"type":"image_url","image_url":{"url"}}.
	ImagePart = oaicompat.ImagePart
	// ImageURL is an image's URL: an https URL or a data URL.
	ImageURL = oaicompat.ImageURL
	// FilePart is {"type":"file","file":{"filename","file_data"}}.
	FilePart = oaicompat.FilePart
	// FileData is a file sent inline: file_data is a data URL.
	FileData = oaicompat.FileData
	// CacheControl is {"type":"ephemeral"}, the marker of the caching
	// strategies.
	CacheControl = oaicompat.CacheControl
	// ToolCall is one call in an assistant message's tool_calls:
	// {"id","type":"function","function":{"name","arguments"}}.
	ToolCall = oaicompat.ToolCall
	// FunctionCall is a call's function name and arguments (JSON text).
	FunctionCall = oaicompat.FunctionCall
	// Tool is {"type":"function","function":{...}}.
	Tool = oaicompat.Tool
	// Function is a tool's name, description and JSON Schema parameters.
	Function = oaicompat.Function
	// ToolChoice is a mode ("auto", "required", "none"; Mistral's "any"),
	// or, when Name is set, {"type":"function","function":{"name":Name}}.
	ToolChoice = oaicompat.ToolChoice
)

// IDMode names a tool-call id normaliser (Options.ToolCallIDs).
type IDMode = oaicompat.IDMode

// Tool-call id normalisers.
//
//   - IDsAsIs ("") keeps ids as they are.
//   - IDsSanitize ("sanitize") makes ids OpenAI accepts everywhere: at most
//     40 characters of [A-Za-z0-9_-]. A valid id is kept; otherwise every
//     other byte becomes "_", and an id longer than 40 is cut to 31
//     characters followed by "_" and 8 hex digits of the SHA-256 of the
//     original.
//   - IDsAlnum9 ("alnum9") makes ids of exactly 9 characters of
//     [A-Za-z0-9], as Mistral wants: an id of that shape is kept, any
//     other is the first 9 base-62 digits of its SHA-256.
//
// Different ids always map to different ids: when a new id maps to one an
// earlier id already has, it is derived again from a hash of the id and a
// counter until it is free. Ids are mapped in the order they occur in the
// request, so the result is deterministic.
const (
	IDsAsIs     = oaicompat.IDsAsIs
	IDsSanitize = oaicompat.IDsSanitize
	IDsAlnum9   = oaicompat.IDsAlnum9
)

// Caching strategies (Options.Cache).
const (
	CacheNone        = ""
	CacheOpenRouter  = "openrouter"
	CacheGeminiEvery = "gemini-every-n"
)

// DefaultCacheEvery is N of the gemini-every-n strategy when
// Options.CacheEvery is not given.
const DefaultCacheEvery = 10

// MaxStop is how many stop sequences OpenAI takes.
const MaxStop = 4

// Options tune the conversion.
type Options struct {
	// ToolCallIDs names the tool-call id normaliser: "" (ids unchanged),
	// "sanitize" or "alnum9" (see IDMode).
	ToolCallIDs IDMode `json:"tool_call_ids,omitempty"`
	// MergeToolResultText appends the text of a user message that has tool
	// results to its last tool message instead of a separate user message.
	MergeToolResultText bool `json:"merge_tool_result_text,omitempty"`
	// Cache is the caching strategy: "", "openrouter" or "gemini-every-n".
	Cache string `json:"cache,omitempty"`
	// CacheEvery is N of gemini-every-n (nil: 10; 0: no user message is
	// marked).
	CacheEvery *int `json:"cache_every,omitempty"`
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens.
	LegacyMaxTokens bool `json:"legacy_max_tokens,omitempty"`
}

// EncodeRequest converts req to a Chat Completions request. req is not
// changed. The warnings say what could not be carried and what was done
// instead.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	every := DefaultCacheEvery
	switch opts.Cache {
	case CacheNone, CacheOpenRouter, CacheGeminiEvery:
	default:
		return nil, nil, fmt.Errorf("options.cache: %q is not one of %q, %q", opts.Cache, CacheOpenRouter, CacheGeminiEvery)
	}
	if opts.CacheEvery != nil {
		if *opts.CacheEvery < 0 {
			return nil, nil, fmt.Errorf("options.cache_every: %d is negative", *opts.CacheEvery)
		}
		every = *opts.CacheEvery
	}
	ids, err := oaicompat.NewIDMap(opts.ToolCallIDs)
	if err != nil {
		return nil, nil, err
	}
	// The fields the policy carries go out as they came; Convert warns
	// about the rest.
	carried, rest := wire.SplitCarried("openai", req.Extra)
	conv, warns, err := oaicompat.Convert(withExtra(req, rest), oaicompat.Dialect{
		Name:                "openai",
		IDs:                 ids,
		Document:            fileDocument,
		MergeToolResultText: opts.MergeToolResultText,
		Strict:              true,
		ImageDetail:         true,
	})
	if err != nil {
		return nil, nil, err
	}
	switch opts.Cache {
	case CacheOpenRouter:
		markLastUsers(conv.Messages, 2)
	case CacheGeminiEvery:
		markEveryNthUser(conv.Messages, every)
	}
	out := &Request{
		Model:             req.Model,
		Messages:          conv.Messages,
		Tools:             conv.Tools,
		ToolChoice:        conv.ToolChoice,
		ParallelToolCalls: conv.ParallelToolCalls,
		ResponseFormat:    NewResponseFormat(req.Format),
		Extra:             carried,
	}
	p, warns := oaicompat.ResolveParams(req, chat.FormatOpenAI, MaxStop, warns)
	if opts.LegacyMaxTokens {
		out.MaxTokens = p.MaxTokens
	} else {
		out.MaxCompletionTokens = p.MaxTokens
	}
	out.Temperature, out.TopP, out.Stop = p.Temperature, p.TopP, p.Stop
	if p.Reasoning {
		out.ReasoningEffort = p.ReasoningEffort
	}
	if req.Stream {
		out.Stream = true
		out.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	return out, warns, nil
}

// withExtra is req with extra as its Extra.
func withExtra(req chat.Request, extra map[string]json.RawMessage) chat.Request {
	req.Extra = extra
	return req
}

// fileDocument is OpenAI's part for a non-text document: a file part for a
// base64 PDF; nothing (a text stub) for the rest.
func fileDocument(b *chat.Block) Part {
	s := b.Source
	if s.Type != "base64" || s.MediaType != "application/pdf" || s.Data == "" {
		return nil
	}
	name := b.Title
	if name == "" {
		name = "document.pdf"
	}
	return oaicompat.NewFilePart(name, oaicompat.DataURL(s.MediaType, s.Data))
}
