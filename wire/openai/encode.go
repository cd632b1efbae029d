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
//     or redacted reasoning, which that field cannot carry, is a detail
//     of delta.reasoning_details as OpenRouter writes it (see
//     EncodeResponse for the shapes; an OpenAI-compatible upstream's
//     own detail with every key it wrote, its text all the reasoning its
//     signature signs). The details of a stream are written once, all
//     together and indexed 0, 1, ... in order, in the delta with the
//     finish_reason (in a delta of their own at the end when no stop
//     came), so that every client's stream helper ends with all of them,
//     whether it appends, merges by index or replaces the field; a
//     Gemini signature a tool call followed came on it, and its detail
//     has the call's "id";
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
// when they came from DecodeStream (a round trip), with three
// normalisations: only the last usage chunk survives, a stop reason's
// Raw becomes the finish_reason written, and the signed reasoning comes
// after the rest.
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
	e := &streamEncoder{w: w, flush: flush, withUsage: withUsage, onCall: -1}
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
	if len(e.held) > 0 {
		// No stop came: the details go in a delta of their own.
		if err := e.end(e.details(e.begin()), ""); err != nil {
			return err
		}
	}
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
	// held are the stream's reasoning details, written all together
	// with the finish_reason (see EncodeStream); onCall is the index in
	// held of a Gemini signature that a tool call may follow (it came on
	// that call), -1 for none.
	held   []reasoningDetail
	onCall int
	// text is the reasoning since the last signature: the text a
	// signature written unsealed signs.
	text strings.Builder
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
		e.onCall = -1
		b := field(e.begin(), "content")
		return e.end(chat.AppendString(b, c.Text), "")
	case chat.ChunkReasoning:
		if c.Signature != "" || c.Redacted != "" {
			e.hold(c)
		} else {
			e.onCall = -1
		}
		if c.Text == "" {
			return nil
		}
		if c.Signature == "" && e.text.Len() < wire.MaxSealedSignature {
			e.text.WriteString(c.Text)
		}
		b := chat.AppendString(field(e.begin(), "reasoning_content"), c.Text)
		return e.end(b, "")
	case chat.ChunkToolCallStart:
		if e.onCall >= 0 {
			// The Gemini signature just before the call came on it.
			e.held[e.onCall].ID = c.ID
		}
		e.onCall = -1
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
		return e.end(e.details(e.begin()), finishReason(reason))
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

// hold keeps the reasoning details of c, a reasoning chunk with a
// signature or redacted data, for the finish delta; past
// chat.MaxCollectedBlocks details (what a collected response holds) they
// are left out.
func (e *streamEncoder) hold(c *chat.Chunk) {
	e.onCall = -1
	if len(e.held) >= chat.MaxCollectedBlocks {
		return
	}
	if c.Signature != "" {
		text := c.Text
		_, sealed := wire.OpenSignature(c.Signature)
		if !sealed {
			// An unsealed signature (an OpenAI-compatible upstream's)
			// signs the reasoning since the last one.
			e.text.WriteString(c.Text)
			text = e.text.String()
		}
		if d, ok := passedOn(c.Detail, text, len(e.held)); ok && !sealed {
			e.held = append(e.held, d)
		} else {
			e.held = signedDetails(e.held, 0, text, c.Signature)
		}
		e.text.Reset()
		if last := e.held[len(e.held)-1]; last.Format == detailFormat(wire.HomeGemini) && last.Type == "reasoning.encrypted" {
			e.onCall = len(e.held) - 1
		}
	}
	if c.Redacted != "" {
		if _, sealed := wire.OpenSignature(c.Redacted); sealed {
			e.held = append(e.held, redactedDetail(c.Redacted, len(e.held)))
		} else if d, ok := passedOn(c.Detail, "", len(e.held)); ok {
			e.held = append(e.held, d)
		} else {
			e.held = append(e.held, redactedDetail(c.Redacted, len(e.held)))
		}
	}
	for k := range e.held {
		if e.held[k].Index == nil {
			n := k
			e.held[k].Index = &n
		}
	}
}

// passedOn is raw, a reasoning detail as an OpenAI-compatible upstream
// streamed it, as the stream's last delta writes it: every key as it
// came, but for its index (index, its position among the stream's
// details) and, for a reasoning.text detail, its text (text, all the
// text its signature signs, which the upstream streamed in pieces).
func passedOn(raw string, text string, index int) (reasoningDetail, bool) {
	var m map[string]json.RawMessage
	if raw == "" || json.Unmarshal([]byte(raw), &m) != nil {
		return reasoningDetail{}, false
	}
	var d reasoningDetail
	_ = json.Unmarshal(m["type"], &d.Type)
	if d.Type == "reasoning.text" {
		m["text"] = chat.AppendString(nil, text)
	}
	m["index"] = strconv.AppendInt(nil, int64(index), 10)
	b, err := json.Marshal(m)
	if err != nil {
		return reasoningDetail{}, false
	}
	d.raw, d.Index = b, &index
	return d, true
}

// details appends the held reasoning details to b, a delta, and
// forgets them.
func (e *streamEncoder) details(b []byte) []byte {
	if len(e.held) == 0 {
		return b
	}
	b = append(field(b, "reasoning_details"), '[')
	for k := range e.held {
		if k > 0 {
			b = append(b, ',')
		}
		if len(e.held[k].raw) > 0 {
			b = append(b, e.held[k].raw...)
			continue
		}
		b = appendDetail(b, e.held[k])
	}
	e.held, e.onCall = e.held[:0], -1
	return append(b, ']')
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
//     "reasoning.encrypted","data":signature}, with the "id" of the tool
//     call it came on when a call follows it. The details an
//     OpenAI-compatible upstream wrote (DecodeResponse keeps them on
//     their blocks) are written back as they came. A client hands the
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
			if raw, ok := passedRaw(b, b.Signature); ok {
				details, special = append(details, raw...), special || b.Signature != ""
				continue
			}
			if b.Signature == "" {
				details = append(details, reasoningDetail{Type: "reasoning.text", Text: b.Thinking})
				continue
			}
			details = onCall(signedDetails(details, 0, b.Thinking, b.Signature), r.Content[i+1:])
			special = true
		case chat.TypeReasoning:
			reasoning.WriteString(b.Text)
			details = append(details, reasoningDetail{Type: "reasoning.text", Text: b.Text})
		case chat.TypeThoughtSignature:
			if b.Signature != "" {
				details = onCall(signedDetails(details, 0, "", b.Signature), r.Content[i+1:])
				special = true
			}
		case chat.TypeRedactedThinking:
			if raw, ok := passedRaw(b, b.Data); ok {
				details = append(details, raw...)
			} else {
				details = append(details, redactedDetail(b.Data, len(details)))
			}
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

// rawDetails is the key of a block's Extra under which DecodeResponse
// keeps the reasoning details (a JSON array, as the upstream wrote them)
// that made the block.
const rawDetails = "reasoning_details"

// passedRaw is the reasoning details an OpenAI-compatible upstream wrote
// for b (see DecodeResponse), to be written back as they came, when b
// has them and sig (its signature or redacted data) is none ctxkit
// sealed.
func passedRaw(b *chat.Block, sig string) ([]reasoningDetail, bool) {
	raw, ok := b.Extra[rawDetails]
	if !ok {
		return nil, false
	}
	if _, sealed := wire.OpenSignature(sig); sealed {
		return nil, false
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	ds := make([]reasoningDetail, len(list))
	for k := range list {
		ds[k].raw = list[k]
	}
	return ds, true
}

// onCall gives the last of ds, when it is a Gemini signature and the
// next of the response's blocks (rest) is a tool call, the call's id: the
// signature came on that call, and ClaimSignatures puts it back there.
func onCall(ds []reasoningDetail, rest []chat.Block) []reasoningDetail {
	if len(ds) == 0 || len(rest) == 0 || rest[0].Type != chat.TypeToolUse {
		return ds
	}
	if d := &ds[len(ds)-1]; d.Type == "reasoning.encrypted" && d.Format == detailFormat(wire.HomeGemini) {
		d.ID = rest[0].ID
	}
	return ds
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
	if d.ID != "" {
		b = chat.AppendString(append(b, `,"id":`...), d.ID)
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
