package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/sse"
)

// DecodeOptions tune DecodeStreamWith.
type DecodeOptions struct {
	// MaxEvent bounds one SSE event (0: sse.DefaultMaxEvent); a larger
	// event ends the stream with an error.
	MaxEvent int
	// KeepThinkTags turns off the <think> tag parsing: content is text as
	// it came.
	KeepThinkTags bool
}

// DecodeStream reads a Chat Completions stream (OpenAI, DeepSeek,
// OpenRouter and the other OpenAI-compatible servers) as canonical chunks,
// with the default DecodeOptions.
func DecodeStream(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return DecodeStreamWith(r, DecodeOptions{})
}

// DecodeStreamWith reads a Chat Completions stream as canonical chunks.
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
//     reasoning_details: a reasoning.text item's signature becomes the
//     chunk's Signature, its text the chunk's text when there is no
//     reasoning field; a reasoning.summary item's summary likewise; a
//     reasoning.encrypted item's data becomes a reasoning chunk of its own
//     with Redacted.
//   - <think>…</think> at the start of the content (leading whitespace
//     allowed) → reasoning, even when the tags are split across deltas
//     ("<thi" + "nk>"); the content after </think> is text as it came.
//     Tags are recognised only there, and not once reasoning arrived in a
//     reasoning field, so a literal "<think>" later in an answer stays
//     text. Text that might be the start of a tag is held back until it is
//     clear; an unclosed <think> is reasoning to the end.
//     DecodeOptions.KeepThinkTags turns this off.
//   - delta.tool_calls (and the legacy delta.function_call) → tool call
//     chunks, assembled by index as ToolCallAssembler says, even when the
//     fragments of parallel calls interleave.
//   - finish_reason → the open tool calls end (in index order), then a
//     stop chunk (StopReason; the raw reason is kept).
//   - usage (the last chunk, "choices": [], or any chunk that carries a
//     usage) → a usage chunk (Usage.Chat).
//   - an "error" key → an error chunk (StreamError); decoding goes on, so
//     what the provider sends after it (a finish_reason "error") is read.
//
// A stream that ends without [DONE], before or after its finish_reason or
// usage, ends cleanly: held-back text is flushed and open tool calls end;
// there is no stop chunk when no finish_reason came, which tells the
// consumer the stream was cut. A stream cut in the middle of its last
// event (data that is JSON cut short, with nothing after it) is such a
// cut too: the partial event is dropped. Other data that is not JSON ends
// the stream with an error naming the event and quoting its data; so does
// an event larger than MaxEvent, and tool calls past the bounds of
// ToolCallAssembler (MaxArguments for one call's arguments, MaxToolCalls
// calls, MaxToolCallBytes for all of them together).
func DecodeStreamWith(r io.Reader, o DecodeOptions) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		d := streamDecoder{yield: yield, ok: true}
		if o.KeepThinkTags {
			d.think = thinkOff
		}
		return ReadEvents(r, o.MaxEvent, "openai stream", d.event, d.end, func() bool { return d.ok })
	})
}

// ReadEvents is the event loop of an OpenAI-shaped stream: it reads the
// SSE events of r (maxEvent bounds one) and hands each non-empty data
// payload and the event's name to event, up to "data: [DONE]" or the end
// of r, then calls end. It stops, without calling end, as soon as ok
// reports false (the consumer stopped). Errors are prefixed with what,
// and an event's error with its number ("event 3: ...").
//
// A last event whose data is cut short (invalid JSON that ends too soon,
// with nothing after it) is a stream cut in the middle of an event: it is
// dropped and the stream ends cleanly. event must report invalid JSON
// with an error wrapping the *json.SyntaxError (DataError does).
func ReadEvents(r io.Reader, maxEvent int, what string, event func(name string, data []byte) error, end func(), ok func() bool) error {
	n := 0
	var cut error // a truncated event, an error unless it was the last
	for ev, err := range sse.Read(r, maxEvent) {
		if cut != nil {
			return cut
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		n++
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			break
		}
		if err := event(ev.Name, data); err != nil {
			err = fmt.Errorf("%s: event %d: %w", what, n, err)
			if !truncated(err) {
				return err
			}
			cut = err
			continue
		}
		if !ok() {
			return nil
		}
	}
	end()
	return nil
}

// truncated reports whether err is JSON that ended too soon.
func truncated(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Error() == "unexpected end of JSON input"
}

// DataError is the error for an event whose data is not valid: it quotes
// the data (the first 120 bytes).
func DataError(data []byte, err error) error {
	q := data
	if len(q) > 120 {
		q = q[:120]
	}
	return fmt.Errorf("data line %s is not a valid chunk: %w", strconv.Quote(string(q)), err)
}

// The wire shapes of a stream chunk, only the fields ctxkit reads.
type streamChunk struct {
	Choices []streamChoice  `json:"choices"`
	Usage   *Usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
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
	calls ToolCallAssembler
}

func (d *streamDecoder) emit(c chat.Chunk) bool {
	if d.ok && !d.yield(c) {
		d.ok = false
	}
	return d.ok
}

func (d *streamDecoder) event(name string, data []byte) error {
	var c streamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return DataError(data, err)
	}
	if name == "error" && len(c.Error) == 0 {
		c.Error = data
	}
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
		d.emit(chat.Chunk{Type: chat.ChunkError, Error: StreamError(c.Error)})
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

// reasoning emits the delta's reasoning, if any.
func (d *streamDecoder) reasoning(dl *streamDelta) {
	text := dl.ReasoningContent
	if text == "" {
		text = dl.Reasoning
	}
	fromDetails := text == ""
	var sig string
	var redacted []string
	for i := range dl.ReasoningDetails {
		rd := &dl.ReasoningDetails[i]
		switch rd.Type {
		case "reasoning.encrypted":
			if rd.Data != "" {
				redacted = append(redacted, rd.Data)
			}
			continue
		case "reasoning.summary":
			if fromDetails {
				text += rd.Summary
			}
		default:
			if fromDetails {
				text += rd.Text
			}
		}
		if rd.Signature != "" {
			sig = rd.Signature
		}
	}
	if text == "" && sig == "" && len(redacted) == 0 {
		return
	}
	d.flush()
	if d.think == thinkStart {
		d.think = thinkOff
	}
	if text != "" || sig != "" {
		d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: text, Signature: sig})
	}
	for _, r := range redacted {
		d.emit(chat.Chunk{Type: chat.ChunkReasoning, Redacted: r})
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
