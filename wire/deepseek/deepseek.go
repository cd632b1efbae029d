// Package deepseek converts a canonical request (package chat) to a
// DeepSeek chat completions request (deepseek-reasoner, R1, and
// deepseek-chat), an OpenAI-shaped format.
//
// # Mapping
//
// The conversion is wire/openai's (see its documentation) with these
// differences:
//
//   - Every content is a string: the text parts of a user message are
//     joined with newlines.
//   - DeepSeek takes no images: each image, in a message or in a tool
//     result, becomes a text stub (chat.ImageStub, "[Image: image/png]")
//     with a warning. A text document becomes text as in wire/openai;
//     any other document becomes a text stub (chat.DocumentStub, "[Document: title]") with a
//     warning.
//   - Tool results become {"role":"tool"} messages as in wire/openai
//     (before the user's other content of the message), never merged with
//     anything. Options.MergeToolResultText works as in wire/openai.
//   - After conversion, consecutive user messages are merged into one, as
//     are consecutive assistant messages, their contents joined with a
//     newline; an assistant message with tool calls is never merged.
//   - Reasoning: the text of the thinking and reasoning blocks of each
//     assistant message after the last user message (the current turn: the
//     assistant steps of a tool-calling loop, which tool messages do not
//     end) is sent back as the message's reasoning_content, joined with
//     newlines, as DeepSeek's thinking mode asks. Earlier turns' thinking
//     is dropped with a warning naming each block. A thinking block's signature is Anthropic's and means
//     nothing to DeepSeek: it is not sent, without a warning.
//     redacted_thinking and thought_signature blocks and reasoning_details
//     are dropped with a warning. An assistant message left with no
//     content, tool calls or reasoning is omitted.
//   - Parameters are resolved by chat.ResolveParams (chat.FormatDeepSeek):
//     max tokens go to max_tokens; temperature and top_p are not sent with
//     reasoning; no reasoning control is sent (the model decides; warning);
//     stop takes at most 16 sequences (more are dropped with a warning);
//     stream sends "stream_options":{"include_usage":true}.
//   - Structured output: a json_object Format becomes response_format
//     {"type":"json_object"}; a json_schema Format is an error, DeepSeek
//     taking no schema. The fields the field policy carries to DeepSeek
//     (frequency_penalty, presence_penalty: wire.Carries) are sent as they
//     came.
//   - tool_choice any is "required"; DeepSeek has no parallel_tool_calls,
//     so disable_parallel_tool_use is dropped with a warning.
//   - Tool-call ids pass through unless Options.ToolCallIDs names a
//     normaliser (openai.IDMode).
//
// cache_control markers are dropped without a warning (DeepSeek caches
// prompt prefixes by itself); every other fallback is wire/openai's and
// returns a warning naming the place.
package deepseek

import (
	"encoding/json"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// Request is a DeepSeek chat completions request.
type Request struct {
	Model         string                `json:"model"`
	Messages      []Message             `json:"messages"`
	Tools         []openai.Tool         `json:"tools,omitempty"`
	ToolChoice    *openai.ToolChoice    `json:"tool_choice,omitempty"`
	MaxTokens     int                   `json:"max_tokens,omitempty"`
	Temperature   *float64              `json:"temperature,omitempty"`
	TopP          *float64              `json:"top_p,omitempty"`
	Stop          []string              `json:"stop,omitempty"`
	Stream        bool                  `json:"stream,omitempty"`
	StreamOptions *openai.StreamOptions `json:"stream_options,omitempty"`
	// ResponseFormat is {"type":"json_object"}, DeepSeek's JSON output.
	ResponseFormat *openai.ResponseFormat `json:"response_format,omitempty"`
	// Extra holds the fields the field policy carries to DeepSeek as
	// they came (the penalties: wire.Carries).
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

// fields sends the request's format and the fields of its Extra the
// policy carries to DeepSeek; warns loses the warnings the conversion
// gave for them. A json_schema format is an error: DeepSeek has JSON
// output (json_object) but takes no schema, and an answer that need not
// match the schema would break a client that relies on it.
func fields(out *Request, req chat.Request, warns []chat.Warning) ([]chat.Warning, error) {
	if f := req.Format; f != nil {
		if f.Type != "json_object" {
			return warns, &chat.Error{Code: chat.CodeInvalidValue, Path: "output_config.format",
				Msg: "DeepSeek takes JSON output (json_object) but no schema: " + f.Type + " cannot be sent"}
		}
		out.ResponseFormat = &openai.ResponseFormat{Type: "json_object"}
	}
	carried, _ := wire.SplitCarried("deepseek", req.Extra)
	out.Extra = carried
	kept := warns[:0:0]
	for _, w := range warns {
		if _, ok := carried[w.Path]; !ok {
			kept = append(kept, w)
		}
	}
	return kept, nil
}

// Message is one message: role system, user, assistant or tool. Content
// is always a string.
type Message struct {
	Role             string            `json:"role"`
	Content          string            `json:"content"`
	ReasoningContent string            `json:"reasoning_content,omitempty"`
	ToolCalls        []openai.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string            `json:"tool_call_id,omitempty"`
}

// Options tune the conversion.
type Options struct {
	// MergeToolResultText appends the text of a user message that has tool
	// results to its last tool message instead of a separate user message
	// (which would end the current turn).
	MergeToolResultText bool `json:"merge_tool_result_text,omitempty"`
	// ToolCallIDs names the tool-call id normaliser (openai.IDMode).
	ToolCallIDs openai.IDMode `json:"tool_call_ids,omitempty"`
}

// MaxStop is how many stop sequences DeepSeek takes.
const MaxStop = 16

// EncodeRequest converts req to a DeepSeek request. req is not changed.
// The warnings say what could not be carried and what was done instead.
func EncodeRequest(req chat.Request, opts Options) (*Request, []chat.Warning, error) {
	ids, err := oaicompat.NewIDMap(opts.ToolCallIDs)
	if err != nil {
		return nil, nil, err
	}
	conv, warns, err := oaicompat.Convert(req, oaicompat.Dialect{
		Name:                "deepseek",
		IDs:                 ids,
		NoImages:            true,
		MergeToolResultText: opts.MergeToolResultText,
		KeepReasoning:       true,
		NoParallelToolCalls: true,
	})
	if err != nil {
		return nil, nil, err
	}
	lastUser := -1
	for i := range conv.Messages {
		if conv.Messages[i].Role == "user" {
			lastUser = i
		}
	}
	msgs := make([]Message, 0, len(conv.Messages))
	for i := range conv.Messages {
		m := &conv.Messages[i]
		dm := Message{Role: m.Role, Content: flatten(m.Content), ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if rs := conv.Reasoning[i]; len(rs) > 0 {
			if i > lastUser {
				texts := make([]string, len(rs))
				for k, r := range rs {
					texts[k] = r.Text
				}
				dm.ReasoningContent = strings.Join(texts, "\n")
			} else {
				for _, r := range rs {
					warns = append(warns, chat.Warnf(r.Path, "deepseek takes reasoning back only in the current turn (after the last user message): dropped"))
				}
			}
		}
		if dm.Role == "assistant" && dm.Content == "" && len(dm.ToolCalls) == 0 && dm.ReasoningContent == "" {
			continue
		}
		if n := len(msgs); n > 0 && mergeable(&msgs[n-1], &dm) {
			prev := &msgs[n-1]
			prev.Content = joinLine(prev.Content, dm.Content)
			prev.ReasoningContent = joinLine(prev.ReasoningContent, dm.ReasoningContent)
			continue
		}
		msgs = append(msgs, dm)
	}
	out := &Request{
		Model:      req.Model,
		Messages:   msgs,
		Tools:      conv.Tools,
		ToolChoice: conv.ToolChoice,
	}
	p, warns := oaicompat.ResolveParams(req, chat.FormatDeepSeek, MaxStop, warns)
	out.MaxTokens, out.Temperature, out.TopP, out.Stop = p.MaxTokens, p.Temperature, p.TopP, p.Stop
	if req.Stream {
		out.Stream = true
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if warns, err = fields(out, req, warns); err != nil {
		return nil, warns, err
	}
	return out, warns, nil
}

// flatten is content as a string. With NoImages and no Document hook,
// oaicompat.Convert makes text parts only.
func flatten(c openai.Content) string {
	switch c := c.(type) {
	case openai.Text:
		return string(c)
	case openai.Parts:
		if len(c) == 1 {
			if t, ok := c[0].(openai.TextPart); ok {
				return t.Text
			}
		}
		var b strings.Builder
		for k, p := range c {
			if t, ok := p.(openai.TextPart); ok {
				if k > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(t.Text)
			}
		}
		return b.String()
	}
	return ""
}

// mergeable: consecutive user messages merge, and so do consecutive
// assistant messages without tool calls.
func mergeable(prev, cur *Message) bool {
	if prev.Role != cur.Role {
		return false
	}
	switch cur.Role {
	case "user":
		return true
	case "assistant":
		return len(prev.ToolCalls) == 0 && len(cur.ToolCalls) == 0
	}
	return false
}

func joinLine(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
