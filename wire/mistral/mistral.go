// Package mistral converts a canonical request (package chat) to a
// Mistral chat completions request, an OpenAI-shaped format.
//
// # Mapping
//
// The conversion is wire/openai's (see its documentation) with these
// differences:
//
//   - Tool-call ids are exactly 9 characters of [A-Za-z0-9], as Mistral
//     wants, mapped the same way in tool_calls[].id and the tool
//     message's tool_call_id (openai.IDsAlnum9): an id of that shape is
//     kept, any other is the first 9 base-62 digits of its SHA-256, and
//     different ids always get different ids (a collision is derived
//     again from the id and a counter).
//   - Tool results become {"role":"tool"} messages as in wire/openai; the
//     user's other content of that message is kept, in a user message
//     after the tool messages (Options.MergeToolResultText puts its text in
//     the last tool message instead), and images in tool results follow in
//     that user message as in wire/openai.
//   - Mistral refuses a user message right after tool messages ("Unexpected
//     role 'user' after role 'tool'"): after a tool message only an
//     assistant or a tool message may come. So the tool messages that
//     answer an assistant's calls come first, and a user message that
//     follows them is preceded by an assistant message with the text
//     "(tool results received)" (Mistral refuses an empty one). No text or
//     image is dropped; a user message the client put between two runs of
//     tool results moves after the last of them.
//   - Documents: a text document becomes text as in wire/openai; a base64
//     PDF becomes a document_url part {"type":"document_url",
//     "document_url":"data:application/pdf;base64,...","document_name"}
//     (the title is the name); a url document becomes a document_url part
//     with its URL. Anything else becomes a text stub with a warning.
//   - tool_choice any is Mistral's "any"; disable_parallel_tool_use is
//     "parallel_tool_calls":false.
//   - A trailing assistant message without tool calls (a prefill) gets
//     "prefix":true, which Mistral requires of a last assistant message.
//   - Parameters are resolved by chat.ResolveParams (chat.FormatMistral):
//     max tokens go to max_tokens; temperature, top_p and stop as they are;
//     reasoning controls are not sent (warning). stream sends
//     "stream":true (Mistral reports usage in its last chunk without
//     stream_options).
//   - Structured output: the request's Format becomes response_format as
//     in wire/openai (json_object, or json_schema with name, schema and
//     strict); a seed in Extra becomes random_seed, and the fields the
//     field policy carries to Mistral (frequency_penalty,
//     presence_penalty: wire.Carries) are sent as they came.
//   - Thinking, redacted_thinking, reasoning and thought_signature blocks
//     and reasoning_details are dropped with a warning, as in wire/openai.
//
// cache_control markers are dropped without a warning (Mistral has no
// cache markers); every other fallback is wire/openai's and returns a
// warning naming the place.
package mistral

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// Request is a Mistral chat completions request.
type Request struct {
	Model             string             `json:"model"`
	Messages          []Message          `json:"messages"`
	Tools             []openai.Tool      `json:"tools,omitempty"`
	ToolChoice        *openai.ToolChoice `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool              `json:"parallel_tool_calls,omitempty"`
	MaxTokens         int                `json:"max_tokens,omitempty"`
	Temperature       *float64           `json:"temperature,omitempty"`
	TopP              *float64           `json:"top_p,omitempty"`
	Stop              []string           `json:"stop,omitempty"`
	Stream            bool               `json:"stream,omitempty"`
	// ResponseFormat asks for structured output.
	ResponseFormat *openai.ResponseFormat `json:"response_format,omitempty"`
	// RandomSeed is Mistral's name for the seed.
	RandomSeed *int64 `json:"random_seed,omitempty"`
	// Extra holds the fields the field policy carries to Mistral as they
	// came (the penalties: wire.Carries).
	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the request with its Extra fields.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	b, err := json.Marshal(plain(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	return openai.AppendFields(b, r.Extra)
}

// fields sends the request's format, its seed as random_seed, and the
// fields of its Extra the policy carries to Mistral; warns loses the
// warnings the conversion gave for them.
func fields(out *Request, req chat.Request, warns []chat.Warning) []chat.Warning {
	out.ResponseFormat = openai.NewResponseFormat(req.Format)
	carried, _ := wire.SplitCarried("mistral", req.Extra)
	sent := map[string]bool{}
	for k := range carried {
		sent[k] = true
	}
	out.Extra = carried
	if v, ok := req.Extra["seed"]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64); err == nil {
			out.RandomSeed = &n
			sent["seed"] = true
		}
	}
	kept := warns[:0:0]
	for _, w := range warns {
		if !sent[w.Path] {
			kept = append(kept, w)
		}
	}
	return kept
}

// Message is an OpenAI-shaped message with Mistral's prefix flag.
type Message struct {
	openai.Message
	Prefix bool `json:"prefix,omitempty"`
}

// DocumentURLPart is {"type":"document_url","document_url",
// "document_name"}, the part of a document in a message's content.
type DocumentURLPart struct {
	Type         string `json:"type"`
	DocumentURL  string `json:"document_url"`
	DocumentName string `json:"document_name,omitempty"`
}

// newDocumentURLPart is a document_url part.
func newDocumentURLPart(url, name string) DocumentURLPart {
	return DocumentURLPart{Type: "document_url", DocumentURL: url, DocumentName: name}
}

// PartType is "document_url".
func (DocumentURLPart) PartType() string { return "document_url" }

// Options tune the conversion.
type Options struct {
	// MergeToolResultText appends the text of a user message that has tool
	// results to its last tool message instead of a separate user message.
	MergeToolResultText bool `json:"merge_tool_result_text,omitempty"`
}

// EncodeRequest converts req to a Mistral request. req is not changed.
// The warnings say what could not be carried and what was done instead.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	ids, err := oaicompat.NewIDMap(oaicompat.IDsAlnum9)
	if err != nil {
		return nil, nil, err
	}
	conv, warns, err := oaicompat.Convert(req, oaicompat.Dialect{
		Name:                "mistral",
		IDs:                 ids,
		Document:            document,
		MergeToolResultText: opts.MergeToolResultText,
		AnyChoice:           "any",
	})
	if err != nil {
		return nil, nil, err
	}
	msgs := make([]Message, len(conv.Messages))
	for i := range conv.Messages {
		msgs[i].Message = conv.Messages[i]
	}
	msgs = sequence(msgs)
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && len(msgs[n-1].ToolCalls) == 0 {
		msgs[n-1].Prefix = true
	}
	out := &Request{
		Model:             req.Model,
		Messages:          msgs,
		Tools:             conv.Tools,
		ToolChoice:        conv.ToolChoice,
		ParallelToolCalls: conv.ParallelToolCalls,
	}
	p, warns := oaicompat.ResolveParams(req, chat.FormatMistral, 0, warns)
	out.MaxTokens, out.Temperature, out.TopP, out.Stop = p.MaxTokens, p.Temperature, p.TopP, p.Stop
	out.Stream = req.Stream
	warns = fields(out, req, warns)
	return out, warns, nil
}

// document is the document_url part for a base64 PDF or a url document.
func document(b *chat.Block) openai.Part {
	s := b.Source
	switch {
	case s.Type == "base64" && s.MediaType == "application/pdf" && s.Data != "":
		return newDocumentURLPart(oaicompat.DataURL(s.MediaType, s.Data), b.Title)
	case s.Type == "url" && s.URL != "":
		return newDocumentURLPart(s.URL, b.Title)
	}
	return nil
}
