package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// decodeOptions tune decodeStream; DecodeStream takes the zero value.
type decodeOptions struct {
	// MaxEvent bounds one SSE event (0: sse.DefaultMaxEvent); a larger
	// event ends the stream with an error.
	MaxEvent int
	// KeepThinkTags turns off the <think> tag parsing: content is text as
	// it came.
	KeepThinkTags bool
}

// DecodeStream reads a Chat Completions stream (OpenAI, DeepSeek,
// OpenRouter and the other OpenAI-compatible servers) as canonical chunks.
//
// The stream is SSE "data:" lines, each a chat.completion.chunk object,
// ended by "data: [DONE]". Comment lines (": OPENROUTER PROCESSING") and
// empty data are skipped; event names are ignored (but an "error" event
// is read as an error). Only choice 0 is read (a request for n > 1
// choices is not streamed through ctxkit).
//
//   - delta.content → text chunks, delta.refusal → text chunks.
//   - delta.reasoning_content (DeepSeek) or, when it is absent,
//     delta.reasoning (OpenRouter) → reasoning chunks. OpenRouter's
//     reasoning_details give one reasoning chunk each, in their order: a
//     reasoning.text item its text and its own signature (Signature), a
//     reasoning.summary item its summary likewise, a reasoning.encrypted
//     item its data (Redacted). When the details carry text, it is the
//     reasoning and the reasoning field (the same text joined) is not
//     read; a delta with no reasoning field whose details repeat the text
//     streamed since the last signature (as EncodeStream's last delta
//     does) gives their signatures only.
//   - <think>…</think> at the start of the content (leading whitespace
//     allowed) → reasoning, even when the tags are split across deltas
//     ("<thi" + "nk>"); the content after </think> is text as it came.
//     Tags are recognised only there, and not once reasoning arrived in a
//     reasoning field, so a literal "<think>" later in an answer stays
//     text. Text that might be the start of a tag is held back until it is
//     clear; an unclosed <think> is reasoning to the end.
//   - delta.tool_calls (and the legacy delta.function_call) → tool call
//     chunks, assembled by index, even when the fragments of parallel calls
//     interleave: a call starts (tool_call_start) once its name is known,
//     with "call_<n>" for an id it never got; each argument fragment is a
//     tool_call_delta; a fragment with another id under an index in use, or
//     a name for a call already started, starts a new call (providers that
//     send complete calls all under index 0 are read right); at the end
//     each call gets a "{}" delta when it had no arguments, then its
//     tool_call_end with the complete arguments.
//   - finish_reason → the open tool calls end (in index order), then a
//     stop chunk (StopReason; the raw reason is kept).
//   - usage (the last chunk, "choices": [], or any chunk that carries a
//     usage) → a usage chunk: prompt_tokens is Input, completion_tokens
//     Output, prompt_tokens_details.cached_tokens (or DeepSeek's
//     prompt_cache_hit_tokens) CacheRead, cache_write_tokens CacheWrite,
//     reasoning_tokens Reasoning and OpenRouter's cost Cost.
//   - an "error" key → an error chunk whose type is the error's type (or
//     its code, or "error"), retryable when the type or code names a rate
//     limit, an overload, a server error, an unavailable service or a
//     timeout, or is the status 408, 429 or 5xx; decoding goes on, so what
//     the provider sends after it (a finish_reason "error") is read.
//
// A stream that ends without [DONE], before or after its finish_reason or
// usage, ends cleanly: held-back text is flushed and open tool calls end;
// there is no stop chunk when no finish_reason came, which tells the
// consumer the stream was cut. A stream cut in the middle of its last
// event (data that is JSON cut short, with nothing after it) is such a
// cut too: the partial event is dropped. Other data that is not JSON ends
// the stream with an error naming the event and quoting its data; so does
// an event larger than 8 MiB, and tool calls past the bounds
// (MaxArguments for one call's arguments, MaxToolCalls calls,
// MaxToolCallBytes for all of them together).
func DecodeStream(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return decodeStream(r, decodeOptions{})
}

// decodeStream is DecodeStream with options.
func decodeStream(r io.Reader, o decodeOptions) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		d := streamDecoder{yield: yield, ok: true}
		if o.KeepThinkTags {
			d.think = thinkOff
		}
		return oaicompat.ReadEvents(r, o.MaxEvent, "openai stream", d.event, d.end, func() bool { return d.ok })
	})
}

// The bounds on the tool calls of one stream: a stream that goes past one
// ends with an error rather than growing without limit.
const (
	// MaxArguments bounds the arguments of one tool call.
	MaxArguments = oaicompat.MaxArguments
	// MaxToolCalls bounds the tool calls of one stream, started or not.
	MaxToolCalls = oaicompat.MaxToolCalls
	// MaxToolCallBytes bounds the arguments, ids and names of all the tool
	// calls of one stream together.
	MaxToolCallBytes = oaicompat.MaxToolCallBytes
)

// The wire shapes of a stream chunk, only the fields ctxkit reads.
type streamChunk struct {
	Choices []streamChoice   `json:"choices"`
	Usage   *oaicompat.Usage `json:"usage"`
	Error   json.RawMessage  `json:"error"`
}

type streamChoice struct {
	Index        int         `json:"index"`
	Delta        streamDelta `json:"delta"`
	FinishReason string      `json:"finish_reason"`
}

type streamDelta struct {
	Content          string            `json:"content"`
	Refusal          string            `json:"refusal"`
	ReasoningContent string            `json:"reasoning_content"`
	Reasoning        string            `json:"reasoning"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details"`
	ToolCalls        []toolCallDelta   `json:"tool_calls"`
	FunctionCall     *functionDelta    `json:"function_call"`
}

type reasoningDetail struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Summary   string `json:"summary,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	// ID: the tool call a Gemini signature came on (ctxkit writes it,
	// as OpenRouter does for Gemini; it is not read).
	ID string `json:"id,omitempty"`
	// Format and Index are written as OpenRouter writes them, for a
	// sealed signature (whose maker ctxkit knows); they are not read.
	Format string `json:"format,omitempty"`
	Index  *int   `json:"index,omitempty"`
	// raw is the detail as an upstream wrote it (its id, format, index
	// and keys ctxkit does not read), written back as it came.
	raw json.RawMessage
}

// UnmarshalJSON reads a detail, keeping its raw form.
func (d *reasoningDetail) UnmarshalJSON(b []byte) error {
	type plain reasoningDetail
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = reasoningDetail(v)
	d.raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes a detail: its raw form when it has one.
func (d reasoningDetail) MarshalJSON() ([]byte, error) {
	if len(d.raw) > 0 {
		return d.raw, nil
	}
	type plain reasoningDetail
	return json.Marshal(plain(d))
}

type toolCallDelta struct {
	Index    *int          `json:"index"`
	ID       string        `json:"id"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// legacyKey is the assembler key of the legacy delta.function_call, apart
// from every tool_calls index.
const legacyKey = -1 << 31

// Think-tag states.
const (
	thinkStart = iota // nothing of the content seen yet: a tag may open
	thinkIn           // inside <think>
	thinkOff          // content is text
)

const (
	openTag  = "<think>"
	closeTag = "</think>"
)

type streamDecoder struct {
	yield func(chat.Chunk) bool
	ok    bool // false once the consumer stopped
	think int
	held  string // content held back: a possible tag (or leading whitespace)
	since bool   // reasoning text was emitted since the last signature
	calls oaicompat.ToolCallAssembler
	buf   streamChunk // the chunk being decoded
	parse chunkParser
}

func (d *streamDecoder) emit(c chat.Chunk) bool {
	if d.ok && !d.yield(c) {
		d.ok = false
	}
	return d.ok
}

func (d *streamDecoder) event(name string, data []byte) error {
	// One chunk is decoded into at a time: its choices array is reused
	// from event to event (nothing keeps a pointer into it), so that a
	// chunk costs no allocation of its own.
	c := &d.buf
	*c = streamChunk{Choices: c.Choices[:0]}
	if err := d.parse.parse(data, c); err != nil {
		return oaicompat.DataError(data, err)
	}
	if name == "error" && len(c.Error) == 0 {
		c.Error = data
	}
	return d.chunk(c)
}

// chunk emits the chunks of one decoded stream chunk.
func (d *streamDecoder) chunk(c *streamChunk) error {
	var finish string
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d.delta(&ch.Delta)
		if err := d.calls.Err(); err != nil {
			return fmt.Errorf("openai: %w", err)
		}
		finish = ch.FinishReason
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		d.flush()
		d.emit(chat.Chunk{Type: chat.ChunkError, Error: oaicompat.StreamError(c.Error)})
	}
	if finish != "" {
		d.flush()
		d.calls.Close(d.emit)
		d.emit(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: StopReason(finish), Raw: finish}})
	}
	if c.Usage != nil {
		d.flush()
		d.emit(chat.Chunk{Type: chat.ChunkUsage, Usage: c.Usage.Chat()})
	}
	return nil
}

func (d *streamDecoder) delta(dl *streamDelta) {
	d.reasoning(dl)
	if dl.Content != "" {
		d.content(dl.Content)
	}
	if dl.Refusal != "" {
		d.flush()
		d.think = thinkOff
		d.emit(chat.Chunk{Type: chat.ChunkText, Text: dl.Refusal})
	}
	for i := range dl.ToolCalls {
		tc := &dl.ToolCalls[i]
		d.flush()
		key := i
		if tc.Index != nil {
			key = *tc.Index
		}
		d.calls.Fragment(key, tc.ID, tc.Function.Name, tc.Function.Arguments, d.emit)
	}
	if fc := dl.FunctionCall; fc != nil && (fc.Name != "" || fc.Arguments != "") {
		d.flush()
		d.calls.Fragment(legacyKey, "", fc.Name, fc.Arguments, d.emit)
	}
}

// reasoning emits the delta's reasoning, if any: one chunk a detail, in
// the details' order, each signature with its own detail's text (see
// DecodeStream).
func (d *streamDecoder) reasoning(dl *streamDelta) {
	field := dl.ReasoningContent
	if field == "" {
		field = dl.Reasoning
	}
	detailText := false
	for i := range dl.ReasoningDetails {
		if rd := &dl.ReasoningDetails[i]; rd.Type != "reasoning.encrypted" && rd.Text+rd.Summary != "" {
			detailText = true
			break
		}
	}
	// A delta with no reasoning text of its own whose details repeat the
	// text streamed since the last signature (a ctxkit stream's last
	// delta) adds their signatures only.
	if detailText && field == "" && d.since {
		detailText = false
	}
	started := false
	emit := func(c chat.Chunk) {
		if !started {
			started = true
			d.flush()
			if d.think == thinkStart {
				d.think = thinkOff
			}
		}
		if c.Text != "" {
			d.since = true
		}
		if c.Signature != "" {
			d.since = false
		}
		d.emit(c)
	}
	if !detailText && field != "" {
		emit(chat.Chunk{Type: chat.ChunkReasoning, Text: field})
	}
	for i := range dl.ReasoningDetails {
		rd := &dl.ReasoningDetails[i]
		var c chat.Chunk
		switch rd.Type {
		case "reasoning.encrypted":
			c.Redacted, c.Detail = rd.Data, string(rd.raw)
		case "reasoning.summary":
			if detailText {
				c.Text = rd.Summary
			}
			c.Signature = rd.Signature
		default:
			if detailText {
				c.Text = rd.Text
			}
			c.Signature = rd.Signature
		}
		if c.Signature != "" {
			c.Detail = string(rd.raw)
		}
		if c.Text != "" || c.Signature != "" || c.Redacted != "" {
			c.Type = chat.ChunkReasoning
			emit(c)
		}
	}
}

// content emits a content fragment: text, or reasoning inside think tags.
func (d *streamDecoder) content(s string) {
	switch d.think {
	case thinkOff:
		d.emit(chat.Chunk{Type: chat.ChunkText, Text: s})
	case thinkStart:
		buf := d.held + s
		rest := strings.TrimLeft(buf, " \t\r\n")
		switch {
		case strings.HasPrefix(rest, openTag):
			d.held, d.think = "", thinkIn
			d.inThink(rest[len(openTag):])
		case strings.HasPrefix(openTag, rest):
			d.held = buf // whitespace, or the start of "<think>"
		default:
			d.held, d.think = "", thinkOff
			d.emit(chat.Chunk{Type: chat.ChunkText, Text: buf})
		}
	case thinkIn:
		buf := d.held + s
		d.held = ""
		d.inThink(buf)
	}
}

// inThink emits s, content inside <think>, up to the closing tag; what
// might be the start of the closing tag is held back.
func (d *streamDecoder) inThink(s string) {
	if i := strings.Index(s, closeTag); i >= 0 {
		d.think = thinkOff
		if i > 0 {
			d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: s[:i]})
		}
		if rest := s[i+len(closeTag):]; rest != "" {
			d.emit(chat.Chunk{Type: chat.ChunkText, Text: rest})
		}
		return
	}
	k := partialSuffix(s, closeTag)
	if len(s) > k {
		d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: s[:len(s)-k]})
	}
	d.held = s[len(s)-k:]
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for k := min(len(s), len(tag)-1); k > 0; k-- {
		if strings.HasSuffix(s, tag[:k]) {
			return k
		}
	}
	return 0
}

// flush emits the content held back, before a chunk of another kind: at
// the start of the content it is text (and tags are no longer looked
// for), inside <think> it is reasoning.
func (d *streamDecoder) flush() {
	switch d.think {
	case thinkStart:
		if d.held == "" {
			return
		}
		d.think = thinkOff
		d.emit(chat.Chunk{Type: chat.ChunkText, Text: d.held})
	case thinkIn:
		if d.held != "" {
			d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: d.held})
		}
	}
	d.held = ""
}

// end finishes a stream at [DONE] or at its end.
func (d *streamDecoder) end() {
	d.flush()
	d.calls.Close(d.emit)
}

// StopReason is the canonical reason for a finish_reason: stop → end_turn,
// length → max_tokens, tool_calls and function_call → tool_use,
// content_filter → content_filter, error (OpenRouter) and DeepSeek's
// insufficient_system_resource → error. The Anthropic names (end_turn,
// max_tokens, tool_use, stop_sequence) that some proxies pass through map
// to themselves; anything else is end_turn (the raw reason is kept in
// chat.Stop.Raw by the decoders).
func StopReason(raw string) chat.StopReason {
	switch raw {
	case "length", "max_tokens":
		return chat.StopMaxTokens
	case "tool_calls", "function_call", "tool_use":
		return chat.StopToolUse
	case "content_filter":
		return chat.StopContentFilter
	case "stop_sequence":
		return chat.StopSequence
	case "error", "insufficient_system_resource":
		return chat.StopError
	}
	return chat.StopEndTurn
}
