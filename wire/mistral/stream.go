package mistral

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// MaxEvent bounds one SSE event of a stream: 8 MiB, the bound of the SSE
// reader.
const MaxEvent = sse.DefaultMaxEvent

// DecodeStream reads a Mistral chat completions stream as canonical
// chunks. The stream is OpenAI-shaped ("data:" lines of
// chat.completion.chunk objects ended by "data: [DONE]"; read as
// openai.DecodeStream reads them, so comments are skipped, a stream cut
// short ends cleanly and data that is not JSON is an error naming the
// event), with Mistral's differences:
//
//   - delta.content is a string (→ text) or an array of content chunks:
//     {"type":"text","text"} → text; {"type":"thinking","thinking":[...]}
//     (Magistral's reasoning) → a reasoning chunk for each text item
//     inside, and its signature, when it has one, as a reasoning chunk of
//     its own after them; other chunk types (references, images) carry no
//     text of the answer and are skipped. There is no <think> tag parsing.
//   - delta.tool_calls carry complete calls ({id, function {name,
//     arguments}, index}); arguments may be JSON text or an object, and an
//     id of "null" (the SDK's default) counts as none. They are assembled
//     by index as openai.DecodeStream assembles them (a call under an index
//     already taken by a call with another id is a new call), so each call
//     is a start, one delta with its arguments ("{}" when it has none) and
//     an end at the finish.
//   - finish_reason: stop → end_turn, length and model_length →
//     max_tokens, tool_calls → tool_use, error → error; others as
//     openai.StopReason. The open calls end first, then the stop chunk
//     (raw reason kept).
//   - usage (prompt_tokens → Input, completion_tokens → Output; Mistral
//     has no cache or reasoning counts) → a usage chunk, usually in the
//     same chunk as the finish_reason, after the stop.
//   - an "error" key, or a chunk whose object is "error", → an error chunk
//     (read as openai.DecodeStream reads one).
//
// Only choice 0 is read. Tool calls past the assembler's bounds
// (openai.MaxArguments, openai.MaxToolCalls, openai.MaxToolCallBytes) end
// the stream with an error.
func DecodeStream(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		d := decoder{yield: yield, ok: true}
		return oaicompat.ReadEvents(r, MaxEvent, "mistral stream", d.event, d.end, func() bool { return d.ok })
	})
}

// A stream chunk, only the fields ctxkit reads. C is the type of
// delta.content: string, or []contentChunk for the chunks that carry an
// array (each event is unmarshalled once, into the shape it has).
type streamChunk[C any] struct {
	Choices []streamChoice[C] `json:"choices"`
	Usage   *oaicompat.Usage  `json:"usage"`
	Error   json.RawMessage   `json:"error"`
}

type streamChoice[C any] struct {
	Index        int            `json:"index"`
	Delta        streamDelta[C] `json:"delta"`
	FinishReason string         `json:"finish_reason"`
}

type streamDelta[C any] struct {
	Content   C          `json:"content"`
	ToolCalls []toolCall `json:"tool_calls"`
}

type toolCall struct {
	ID       string `json:"id"`
	Index    *int   `json:"index"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type contentChunk struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	Thinking  []contentChunk `json:"thinking"`
	Signature string         `json:"signature"`
}

// arrayContent marks the events whose content is an array. A quote
// inside a JSON string is escaped, so the marker only matches the key
// itself; an array written with spaces is caught by the type error of the
// string shape.
var arrayContent = []byte(`"content":[`)

// errorObject marks an error sent as a chunk of its own,
// {"object":"error","message",...}; it is looked for only in a chunk with
// no choices and no usage.
var errorObject = []byte(`"object":"error"`)

type decoder struct {
	yield func(chat.Chunk) bool
	ok    bool
	calls oaicompat.ToolCallAssembler
}

func (d *decoder) emit(c chat.Chunk) bool {
	if d.ok && !d.yield(c) {
		d.ok = false
	}
	return d.ok
}

func (d *decoder) event(_ string, data []byte) error {
	if !bytes.Contains(data, arrayContent) {
		var c streamChunk[string]
		err := json.Unmarshal(data, &c)
		if err == nil {
			handle(d, &c, data, func(s string) (string, []contentChunk) { return s, nil })
			return d.argumentsErr()
		}
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field != "choices.delta.content" {
			return oaicompat.DataError(data, err)
		}
	}
	var c streamChunk[[]contentChunk]
	if err := json.Unmarshal(data, &c); err != nil {
		return oaicompat.DataError(data, err)
	}
	handle(d, &c, data, func(cs []contentChunk) (string, []contentChunk) { return "", cs })
	return d.argumentsErr()
}

// argumentsErr reports tool calls past the bounds of the assembler: one
// call's arguments past openai.MaxArguments, more than openai.MaxToolCalls
// calls, or more than openai.MaxToolCallBytes of arguments, ids and names
// in all.
func (d *decoder) argumentsErr() error {
	if err := d.calls.Err(); err != nil {
		return fmt.Errorf("mistral: %w", err)
	}
	return nil
}

// handle emits the chunks of one event; content splits a delta's content
// into its string and its content chunks.
func handle[C any](d *decoder, c *streamChunk[C], data []byte, content func(C) (string, []contentChunk)) {
	finish := ""
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		text, chunks := content(ch.Delta.Content)
		d.delta(text, chunks, ch.Delta.ToolCalls)
		finish = ch.FinishReason
	}
	if d.calls.Err() != nil {
		return // the stream ends with the error (argumentsErr), not a stop
	}
	switch {
	case len(c.Error) > 0 && string(c.Error) != "null":
		d.emit(chat.Chunk{Type: chat.ChunkError, Error: oaicompat.StreamError(c.Error)})
	case len(c.Choices) == 0 && c.Usage == nil && bytes.Contains(data, errorObject):
		d.emit(chat.Chunk{Type: chat.ChunkError, Error: oaicompat.StreamError(data)})
	}
	if finish != "" {
		d.calls.Close(d.emit)
		d.emit(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: stopReason(finish), Raw: finish}})
	}
	if c.Usage != nil {
		d.emit(chat.Chunk{Type: chat.ChunkUsage, Usage: c.Usage.Chat()})
	}
}

func (d *decoder) delta(text string, chunks []contentChunk, calls []toolCall) {
	if text != "" {
		d.emit(chat.Chunk{Type: chat.ChunkText, Text: text})
	}
	for i := range chunks {
		cc := &chunks[i]
		switch cc.Type {
		case "text":
			if cc.Text != "" {
				d.emit(chat.Chunk{Type: chat.ChunkText, Text: cc.Text})
			}
		case "thinking":
			for j := range cc.Thinking {
				if t := &cc.Thinking[j]; t.Type == "text" && t.Text != "" {
					d.emit(chat.Chunk{Type: chat.ChunkReasoning, Text: t.Text})
				}
			}
			if cc.Signature != "" {
				d.emit(chat.Chunk{Type: chat.ChunkReasoning, Signature: cc.Signature})
			}
		}
	}
	for i := range calls {
		tc := &calls[i]
		key := i
		if tc.Index != nil {
			key = *tc.Index
		}
		id := tc.ID
		if id == "null" {
			id = ""
		}
		d.calls.Fragment(key, id, tc.Function.Name, arguments(tc.Function.Arguments), d.emit)
	}
}

// arguments is a call's arguments as JSON text: a string as it is, an
// object (or another value) as its compact JSON.
func arguments(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func (d *decoder) end() { d.calls.Close(d.emit) }

// stopReason is the canonical reason for a Mistral finish_reason: stop →
// end_turn, length and model_length → max_tokens, tool_calls → tool_use,
// error → error, anything else as openai.StopReason.
func stopReason(raw string) chat.StopReason {
	if raw == "model_length" {
		return chat.StopMaxTokens
	}
	return openai.StopReason(raw)
}
