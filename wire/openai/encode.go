package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// EncodeStream writes a canonical chunk stream to w as a Chat Completions
// stream, the body of a streaming response to an OpenAI client (the
// handler sets Content-Type: text/event-stream before calling it). flush,
// when not nil, is called after every event (an http.Flusher's Flush).
// Every chunk object carries id, "object":"chat.completion.chunk",
// created and model, and one choice (index 0) whose delta says:
//
//   - the first delta has "role":"assistant";
//   - text → delta.content;
//   - reasoning → delta.reasoning_content (DeepSeek's field); a signature
//     or redacted reasoning, which that field cannot carry, goes in
//     delta.reasoning_details as OpenRouter writes it (see
//     EncodeResponse for the shapes), the chunk's text beside a
//     signature;
//   - tool_call_start → delta.tool_calls [{index, id, "type":"function",
//     function {name, "arguments":""}}]; tool_call_delta → [{index,
//     function {arguments}}]; tool_call_end writes the part of its
//     arguments that no delta carried (all of them, or "{}", when there
//     were no deltas; nothing when the deltas already add up to them);
//   - stop → an empty delta with finish_reason (finishReason: end_turn and
//     stop_sequence → stop, max_tokens → length, tool_use → tool_calls,
//     content_filter → content_filter, error → error as OpenRouter sends
//     it);
//   - error → a data line {"error":{"message","type"}} (what OpenAI's
//     SDKs read as a stream error); the chunks after it are still written.
//
// Usage is written as the API writes it for a client that asked for
// stream_options.include_usage: every chunk object carries "usage":null,
// and, usage chunks being running totals, the last one is written at the
// end as a chunk with "choices":[] and usage {prompt_tokens (Input),
// completion_tokens (Output), total_tokens, prompt_tokens_details
// {cached_tokens (CacheRead), cache_write_tokens (CacheWrite, when set)},
// completion_tokens_details {reasoning_tokens}, cost (when set)} (no such
// chunk when none came, as from a stream cut short). The dialect's row
// (Dialect) writes it only for a request that asked (chat.Request.
// StreamUsage); otherwise no chunk has a usage key, and none has an empty
// choices array, which clients that read choices[0] of every chunk
// would fail on. Then "data: [DONE]".
//
// When chunks yields an error, EncodeStream writes it as an error line
// (type "server_error") and returns it, without [DONE]. A write error ends
// the encoding and is returned (the loop over chunks stops, which closes
// the upstream body).
//
// DecodeStream reads what EncodeStream writes back into the same chunks
// when they came from DecodeStream (a round trip), with two
// normalisations: only the last usage chunk survives, and a stop reason's
// Raw becomes the finish_reason written.
func EncodeStream(w io.Writer, flush func(), model, id string, created int64, chunks iter.Seq2[chat.Chunk, error]) error {
	return encodeStream(w, flush, model, id, created, true, chunks)
}

// encodeStream is EncodeStream, with the usage written only when
// withUsage is set.
func encodeStream(w io.Writer, flush func(), model, id string, created int64, withUsage bool, chunks iter.Seq2[chat.Chunk, error]) error {
	return newStreamEncoder(w, flush, model, id, created, withUsage).run(chunks)
}

// newStreamEncoder is the encoder of one stream.
func newStreamEncoder(w io.Writer, flush func(), model, id string, created int64, withUsage bool) *streamEncoder {
	// One buffer for the head and the events: a text event is the head and
	// a few tens of bytes.
	buf := make([]byte, 0, 1024+2*(len(id)+len(model)))
	e := &streamEncoder{w: w, flush: flush, withUsage: withUsage}
	e.head = append(buf, `data: {"id":`...)
	e.head = chat.AppendString(e.head, id)
	e.head = append(e.head, `,"object":"chat.completion.chunk","created":`...)
	e.head = strconv.AppendInt(e.head, created, 10)
	e.head = append(e.head, `,"model":`...)
	e.head = chat.AppendString(e.head, model)
	e.head = append(e.head, `,"choices":`...)
	// The events are written after the head, in the rest of its buffer.
	h := e.head
	e.head, e.buf = h[:len(h):len(h)], h[len(h):]
	return e
}

// run encodes chunks and ends the stream.
func (e *streamEncoder) run(chunks iter.Seq2[chat.Chunk, error]) error {
	for c, err := range chunks {
		if err != nil {
			_ = e.fail(err)
			return err
		}
		if err := e.chunk(&c); err != nil {
			return err
		}
	}
	return e.finish()
}

// fail writes the error line for err, a decode error of the chunks.
func (e *streamEncoder) fail(err error) error {
	return e.error(&chat.StreamError{Type: "server_error", Message: err.Error()})
}

// finish ends the stream: the usage chunk, when the client asked for it
// and there was usage, then [DONE].
func (e *streamEncoder) finish() error {
	if e.withUsage && e.usage != nil {
		b := append(e.buf[:0], e.head...)
		b = append(b, `[],"usage":`...)
		b = appendUsage(b, *e.usage)
		b = append(b, "}\n\n"...)
		if err := e.write(b); err != nil {
			return err
		}
	}
	return e.write(append(e.buf[:0], "data: [DONE]\n\n"...))
}

type streamEncoder struct {
	w     io.Writer
	flush func()
	head  []byte // `data: {"id":...,"choices":`
	buf   []byte
	role  bool           // the role was written
	sent  map[int][]byte // tool call index → the arguments written so far
	usage *chat.Usage
	// details counts the reasoning details written: the index of the
	// next one.
	details int
	// withUsage: the client asked for the usage chunk, and every chunk
	// carries "usage":null until then.
	withUsage bool
}

func (e *streamEncoder) write(b []byte) error {
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	if e.flush != nil {
		e.flush()
	}
	return nil
}

// begin starts a chunk object with one choice and its delta, open for the
// delta's fields.
func (e *streamEncoder) begin() []byte {
	b := append(e.buf[:0], e.head...)
	b = append(b, `[{"index":0,"delta":{`...)
	if !e.role {
		e.role = true
		b = append(b, `"role":"assistant"`...)
	}
	return b
}

// field appends a delta field's key, after a comma unless it is the first.
func field(b []byte, key string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// end closes the delta and the chunk object, with finish_reason.
func (e *streamEncoder) end(b []byte, finish string) error {
	b = append(b, `},"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = chat.AppendString(b, finish)
	}
	b = append(b, "}]"...)
	if e.withUsage {
		b = append(b, `,"usage":null`...)
	}
	return e.write(append(b, "}\n\n"...))
}

func (e *streamEncoder) chunk(c *chat.Chunk) error {
	switch c.Type {
	case chat.ChunkText:
		if c.Text == "" {
			return nil
		}
		b := field(e.begin(), "content")
		return e.end(chat.AppendString(b, c.Text), "")
	case chat.ChunkReasoning:
		if c.Text == "" && c.Signature == "" && c.Redacted == "" {
			return nil
		}
		b := e.begin()
		if c.Text != "" {
			b = chat.AppendString(field(b, "reasoning_content"), c.Text)
		}
		if c.Signature != "" || c.Redacted != "" {
			b = append(field(b, "reasoning_details"), '[')
			// Indexes count the stream's details.
			var ds []reasoningDetail
			if c.Signature != "" {
				ds = signedDetails(ds, e.details, c.Text, c.Signature)
			}
			if c.Redacted != "" {
				ds = append(ds, redactedDetail(c.Redacted, e.details+len(ds)))
			}
			for k := range ds {
				if k > 0 {
					b = append(b, ',')
				}
				b = appendDetail(b, ds[k])
			}
			e.details += len(ds)
			b = append(b, ']')
		}
		return e.end(b, "")
	case chat.ChunkToolCallStart:
		if e.sent == nil {
			e.sent = map[int][]byte{}
		}
		e.sent[c.Index] = nil
		b := append(field(e.begin(), "tool_calls"), `[{"index":`...)
		b = strconv.AppendInt(b, int64(c.Index), 10)
		b = append(b, `,"id":`...)
		b = chat.AppendString(b, c.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = chat.AppendString(b, c.Name)
		b = append(b, `,"arguments":""}}]`...)
		return e.end(b, "")
	case chat.ChunkToolCallDelta:
		return e.arguments(c.Index, c.Arguments)
	case chat.ChunkToolCallEnd:
		sent := e.sent[c.Index]
		all := c.Arguments
		if all == "" {
			all = string(sent)
		}
		if all == "" {
			all = "{}"
		}
		if len(all) > len(sent) && all[:len(sent)] == string(sent) {
			return e.arguments(c.Index, all[len(sent):])
		}
		return nil
	case chat.ChunkStop:
		reason := chat.StopEndTurn
		if c.Stop != nil {
			reason = c.Stop.Reason
		}
		return e.end(e.begin(), finishReason(reason))
	case chat.ChunkUsage:
		if c.Usage != nil {
			u := *c.Usage
			e.usage = &u
		}
		return nil
	case chat.ChunkError:
		if c.Error == nil {
			return nil
		}
		return e.error(c.Error)
	}
	return nil
}

// arguments writes an arguments fragment of tool call i.
func (e *streamEncoder) arguments(i int, args string) error {
	if args == "" {
		return nil
	}
	if e.sent == nil {
		e.sent = map[int][]byte{}
	}
	e.sent[i] = append(e.sent[i], args...)
	b := append(field(e.begin(), "tool_calls"), `[{"index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"function":{"arguments":`...)
	b = chat.AppendString(b, args)
	b = append(b, "}}]"...)
	return e.end(b, "")
}

func (e *streamEncoder) error(se *chat.StreamError) error {
	b := append(e.buf[:0], `data: {"error":{"message":`...)
	b = chat.AppendString(b, se.Message)
	b = append(b, `,"type":`...)
	b = chat.AppendString(b, se.Type)
	return e.write(append(b, "}}\n\n"...))
}

// The non-streaming response.
type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   json.RawMessage    `json:"usage"`
	Error   *completionError   `json:"error,omitempty"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
}

type completionMessage struct {
	Role             string            `json:"role"`
	Content          *string           `json:"content"`
	ReasoningContent string            `json:"reasoning_content,omitempty"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details,omitempty"`
	ToolCalls        []ToolCall        `json:"tool_calls,omitempty"`
}

type completionError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// EncodeResponse writes a response (chat.Collect of a stream) as a
// non-streaming Chat Completions response, a "chat.completion" object with
// one choice:
//
//   - message.content: the text blocks joined (as the stream's text
//     deltas are); null when there is no text and there are tool calls, ""
//     when there is neither;
//   - message.reasoning_content: the thinking (and reasoning) blocks'
//     text joined, when there is any; when a block is signed (a thinking
//     block with a signature, redacted thinking, a thought_signature),
//     message.reasoning_details lists every reasoning block in order, as
//     OpenRouter writes them: unsigned text {"type":"reasoning.text",
//     "text"}; a signature {"type":"reasoning.text","text","signature"};
//     redacted data {"type":"reasoning.encrypted","data"}. A signature
//     ctxkit sealed (wire.SealResponse: every signature home's, for this
//     dialect) names its maker, and its detail gets OpenRouter's
//     "format" (anthropic-claude-v1 for Anthropic and Bedrock,
//     google-gemini-v1, openai-responses-v1) and "index" (its position
//     in the list); a Gemini signature (which signs a part, not text:
//     its thought text, if any, is a reasoning.text detail of its own
//     before it) and a Responses API's encrypted reasoning are {"type":
//     "reasoning.encrypted","data":signature}. A client hands the
//     details back with the message: wire.ClaimSignatures makes them the
//     blocks they were, for the provider that made them;
//   - message.tool_calls: the tool_use blocks, {"id","type":"function",
//     "function":{"name","arguments"}} with the input as compact JSON text;
//   - finish_reason: the stop as EncodeStream maps it (end_turn and
//     stop_sequence → stop, max_tokens → length, tool_use → tool_calls;
//     "error" when there is no
//     stop but an error, "stop" when there is neither);
//   - usage as the stream encoder writes it.
//
// Blocks of other types (a response holds none) are left out. When the
// response has an Error, it is also written as a top-level "error" object
// {"message","type"}: the handler decides the HTTP status. The error
// return is for a tool_use input that is not valid JSON.
func EncodeResponse(r chat.Response, model, id string, created int64) ([]byte, error) {
	var (
		text, reasoning  strings.Builder
		hasText, special bool
		details          []reasoningDetail
		calls            []ToolCall
	)
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case chat.TypeText:
			hasText = true
			text.WriteString(b.Text)
		case chat.TypeThinking:
			reasoning.WriteString(b.Thinking)
			if b.Signature == "" {
				details = append(details, reasoningDetail{Type: "reasoning.text", Text: b.Thinking})
				continue
			}
			details = signedDetails(details, 0, b.Thinking, b.Signature)
			special = true
		case chat.TypeReasoning:
			reasoning.WriteString(b.Text)
			details = append(details, reasoningDetail{Type: "reasoning.text", Text: b.Text})
		case chat.TypeThoughtSignature:
			if b.Signature != "" {
				details = signedDetails(details, 0, "", b.Signature)
				special = true
			}
		case chat.TypeRedactedThinking:
			details = append(details, redactedDetail(b.Data, len(details)))
			special = true
		case chat.TypeToolUse:
			if len(b.Input) > 0 && !json.Valid(b.Input) {
				return nil, fmt.Errorf("content[%d].input: not valid JSON", i)
			}
			calls = append(calls, ToolCall{ID: b.ID, Type: "function",
				Function: FunctionCall{Name: b.Name, Arguments: oaicompat.Arguments(b.Input)}})
		}
	}
	msg := completionMessage{Role: "assistant", ReasoningContent: reasoning.String(), ToolCalls: calls}
	if hasText || len(calls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	if special {
		msg.ReasoningDetails = details
	}
	finish := finishReason(r.Stop.Reason)
	if r.Stop.Reason == "" && r.Error != nil {
		finish = "error"
	}
	out := completion{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []completionChoice{{Message: msg, FinishReason: finish}},
		Usage:   appendUsage(nil, r.Usage),
	}
	if r.Error != nil {
		out.Error = &completionError{Message: r.Error.Message, Type: r.Error.Type}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// detailFormat is the format OpenRouter writes on a reasoning detail of
// a provider, by its signature home.
func detailFormat(home string) string {
	switch home {
	case wire.HomeAnthropic, wire.HomeBedrock:
		return "anthropic-claude-v1"
	case wire.HomeGemini:
		return "google-gemini-v1"
	case wire.HomeResponses:
		return "openai-responses-v1"
	}
	return ""
}

// signedDetails appends to ds the reasoning details of text and its
// signature sig, each with its index (see EncodeResponse): base plus its
// position in ds.
func signedDetails(ds []reasoningDetail, base int, text, sig string) []reasoningDetail {
	s, sealed := wire.OpenSignature(sig)
	if !sealed {
		return append(ds, reasoningDetail{Type: "reasoning.text", Text: text, Signature: sig})
	}
	format := detailFormat(s.Home)
	index := func() *int { n := base + len(ds); return &n }
	switch {
	case s.Home == wire.HomeGemini && !s.Redacted:
		// Gemini signs a part, not its text: the thought text (when the
		// signature came on a thought) goes first, unsigned.
		if text != "" {
			ds = append(ds, reasoningDetail{Type: "reasoning.text", Text: text, Format: format, Index: index()})
		}
		return append(ds, reasoningDetail{Type: "reasoning.encrypted", Data: sig, Format: format, Index: index()})
	case s.Redacted, s.Home == wire.HomeResponses:
		return append(ds, reasoningDetail{Type: "reasoning.encrypted", Data: sig, Format: format, Index: index()})
	}
	return append(ds, reasoningDetail{Type: "reasoning.text", Text: text, Signature: sig, Format: format, Index: index()})
}

// redactedDetail is the reasoning detail of redacted thinking's data.
func redactedDetail(data string, index int) reasoningDetail {
	d := reasoningDetail{Type: "reasoning.encrypted", Data: data}
	if s, sealed := wire.OpenSignature(data); sealed {
		d.Format, d.Index = detailFormat(s.Home), &index
	}
	return d
}

// appendDetail appends d as JSON; a reasoning.text detail always has its
// text (the stream's form).
func appendDetail(b []byte, d reasoningDetail) []byte {
	b = append(b, `{"type":`...)
	b = chat.AppendString(b, d.Type)
	if d.Type == "reasoning.text" {
		b = chat.AppendString(append(b, `,"text":`...), d.Text)
	}
	if d.Signature != "" {
		b = chat.AppendString(append(b, `,"signature":`...), d.Signature)
	}
	if d.Data != "" {
		b = chat.AppendString(append(b, `,"data":`...), d.Data)
	}
	if d.Format != "" {
		b = chat.AppendString(append(b, `,"format":`...), d.Format)
	}
	if d.Index != nil {
		b = strconv.AppendInt(append(b, `,"index":`...), int64(*d.Index), 10)
	}
	return append(b, '}')
}

// finishReason is the finish_reason written for a canonical reason:
// end_turn and stop_sequence → stop, max_tokens → length, tool_use →
// tool_calls, content_filter → content_filter, error → error (the value
// OpenRouter sends when a stream fails; OpenAI has none), and stop for
// anything else.
func finishReason(r chat.StopReason) string {
	switch r {
	case chat.StopMaxTokens:
		return "length"
	case chat.StopToolUse:
		return "tool_calls"
	case chat.StopContentFilter:
		return "content_filter"
	case chat.StopError:
		return "error"
	}
	return "stop"
}

// appendUsage appends the usage object for canonical running totals, the
// inverse of oaicompat.Usage.Chat: total_tokens is Input + Output;
// cached_tokens and reasoning_tokens are always written,
// cache_write_tokens when set, and the cost, when set, as cost and
// cost_usd (US dollars).
func appendUsage(b []byte, u chat.Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, u.Input, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.Input+u.Output, 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.CacheRead, 10)
	if u.CacheWrite != 0 {
		b = append(b, `,"cache_write_tokens":`...)
		b = strconv.AppendInt(b, u.CacheWrite, 10)
	}
	b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, u.Reasoning, 10)
	b = append(b, '}')
	if u.Cost != nil {
		// cost is OpenRouter's name for it, cost_usd ctxkit's in every
		// dialect.
		b = append(b, `,"cost":`...)
		b = strconv.AppendFloat(b, *u.Cost, 'g', -1, 64)
		b = append(b, `,"cost_usd":`...)
		b = strconv.AppendFloat(b, *u.Cost, 'f', -1, 64)
	}
	return append(b, '}')
}
