package bedrock

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/ctxkit/ctxkit/chat"
)

// Limits on one event stream frame. A frame's total length is read from
// its prelude and checked against these before its body is read, so a
// corrupt or hostile length cannot make the decoder allocate much memory.
const (
	// MaxFrameSize is the largest frame DecodeStream accepts, in bytes
	// (prelude, headers, payload and checksums).
	MaxFrameSize = 16 << 20
	// MaxHeadersSize is the largest headers section DecodeStream accepts.
	MaxHeadersSize = 128 << 10

	preludeSize  = 12 // total length, headers length, prelude CRC
	minFrameSize = preludeSize + 4
)

// Event stream header names and values (ConverseStream uses these; they
// are the same for every AWS event stream).
const (
	hdrMessageType   = ":message-type"
	hdrEventType     = ":event-type"
	hdrExceptionType = ":exception-type"
	hdrErrorCode     = ":error-code"
	hdrErrorMessage  = ":error-message"

	msgEvent     = "event"
	msgException = "exception"
	msgError     = "error"
)

// DecodeStream decodes the body of a ConverseStream response (content
// type application/vnd.amazon.eventstream) into the canonical chunk
// stream. r is closed when the loop ends if it is an io.Closer.
//
// Each binary frame is read whole (after its prelude's lengths and
// checksum have been checked against MaxFrameSize and MaxHeadersSize) and
// decoded with the eventstream package's Decoder, which checks the
// prelude and message checksums. Events map as follows:
//
//   - messageStart: nothing.
//   - contentBlockStart with start.toolUse → tool_call_start; tool calls
//     are numbered 0, 1, ... in the order they start, and the event's
//     contentBlockIndex is mapped to that number for the block's deltas
//     and stop. Other starts (start.text) give nothing.
//   - contentBlockDelta: delta.text → text; delta.toolUse.input (a
//     fragment of the JSON arguments) → tool_call_delta;
//     delta.reasoningContent.text and .signature → reasoning (text,
//     signature or both); .redactedContent → reasoning with Redacted (the
//     base64 string as the JSON carries it). A tool input fragment for a
//     block that had no toolUse start starts a call with no id or name.
//     Other deltas (citations, images, tool results) give nothing.
//   - contentBlockStop of a tool block → tool_call_end carrying the
//     complete arguments ("{}" when there were none).
//   - messageStop → a tool_call_end for each tool block still open, then
//     stop: end_turn, tool_use, max_tokens and stop_sequence as they are;
//     guardrail_intervened and content_filtered → content_filter;
//     model_context_window_exceeded → max_tokens; malformed_model_output
//     and malformed_tool_use → error; any other → end_turn. Raw keeps
//     Bedrock's reason.
//   - metadata with usage → usage: Input is inputTokens plus
//     cacheReadInputTokens plus cacheWriteInputTokens, Output is
//     outputTokens, CacheRead and CacheWrite as given. Bedrock sends one
//     metadata event, after messageStop, with the totals of the response.
//     Metrics and traces are ignored.
//   - other event types: nothing.
//
// An exception frame (:message-type exception) becomes an error chunk
// whose type is the :exception-type header and whose message is the
// payload's "message"; internalServerException, modelStreamErrorException,
// serviceUnavailableException and throttlingException are retryable,
// others are not. An error frame (:message-type error) becomes an error
// chunk with the :error-code and :error-message headers (the payload's
// message when the header is empty), retryable by the same rule. Either
// ends the stream, as it ends Bedrock's. Frames of other message types
// are ignored.
//
// A frame that cannot be read (a checksum mismatch, a length out of
// bounds, a stream cut inside a frame, an event payload that is not the
// JSON its type calls for) ends the stream with a decode error, and so do
// tool calls past a bound: one call's input past MaxArguments, more than
// MaxToolCalls calls, or more than MaxToolCallBytes of ids, names and
// inputs in all. A stream that ends between two frames ends without one.
func DecodeStream(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		d := streamDecoder{frames: newFrameReader(r), calls: map[int]*toolCall{}}
		return d.run(yield)
	})
}

// frameReader reads event stream frames one at a time.
type frameReader struct {
	r       io.Reader
	dec     *eventstream.Decoder
	frame   []byte // the current frame, reused
	payload []byte // the decoder's payload buffer, reused
	br      bytes.Reader
	n       int // frames read
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: r, dec: eventstream.NewDecoder()}
}

// next reads and decodes the next frame. It returns io.EOF, and nothing
// else, when the stream ends cleanly between frames. The message's payload
// is valid until the next call.
func (f *frameReader) next() (eventstream.Message, error) {
	buf, err := f.read(f.frame[:0], preludeSize)
	f.frame = buf[:0]
	if err != nil {
		if len(buf) == 0 && err == io.EOF {
			return eventstream.Message{}, io.EOF
		}
		return eventstream.Message{}, f.readErr(err)
	}
	total := binary.BigEndian.Uint32(buf[0:4])
	hlen := binary.BigEndian.Uint32(buf[4:8])
	if crc32.ChecksumIEEE(buf[:8]) != binary.BigEndian.Uint32(buf[8:12]) {
		return eventstream.Message{}, fmt.Errorf("bedrock: frame %d: prelude checksum mismatch", f.n)
	}
	switch {
	case total < minFrameSize || total > MaxFrameSize:
		return eventstream.Message{}, fmt.Errorf("bedrock: frame %d: total length %d out of bounds [%d, %d]", f.n, total, minFrameSize, MaxFrameSize)
	case hlen > MaxHeadersSize || hlen > total-minFrameSize:
		return eventstream.Message{}, fmt.Errorf("bedrock: frame %d: headers length %d out of bounds for a frame of %d bytes", f.n, hlen, total)
	}
	buf, err = f.read(buf, int(total))
	f.frame = buf[:0]
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return eventstream.Message{}, f.readErr(err)
	}
	f.br.Reset(buf)
	m, err := f.dec.Decode(&f.br, f.payload[:0])
	if err != nil {
		return eventstream.Message{}, fmt.Errorf("bedrock: frame %d: %w", f.n, err)
	}
	if cap(m.Payload) > cap(f.payload) && cap(m.Payload) <= 1<<20 {
		f.payload = m.Payload[:0]
	}
	f.n++
	return m, nil
}

// read appends bytes from the stream to buf until it holds want bytes.
// The buffer grows with the bytes that actually arrive, so a large length
// on a short stream costs little. On an error it returns what it has: an
// io.EOF with no bytes read at all, io.ErrUnexpectedEOF with some, or
// io.ErrNoProgress when the reader keeps returning nothing.
func (f *frameReader) read(buf []byte, want int) ([]byte, error) {
	have := len(buf)
	for empty := 0; len(buf) < want; {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(len(buf), 4<<10), want-len(buf)))
		}
		n, err := f.r.Read(buf[len(buf):min(cap(buf), want)])
		buf = buf[:len(buf)+n]
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				err = io.ErrNoProgress
			}
		} else {
			empty = 0
		}
		if err != nil && len(buf) < want {
			if err == io.EOF && len(buf) > have {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

func (f *frameReader) readErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("bedrock: frame %d: stream truncated inside a frame: %w", f.n, err)
	}
	return fmt.Errorf("bedrock: frame %d: %w", f.n, err)
}

// header returns a string header's value ("" when it is missing or not a
// string).
func header(m *eventstream.Message, name string) string {
	for _, h := range m.Headers {
		if h.Name == name {
			if v, ok := h.Value.(eventstream.StringValue); ok {
				return string(v)
			}
			return ""
		}
	}
	return ""
}

// streamEvent is the union of the JSON payloads DecodeStream reads; each
// payload is read once, into a zeroed streamEvent (see parseEvent).
type streamEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             struct {
		ToolUse *eventToolUse `json:"toolUse"`
	} `json:"start"`
	Delta struct {
		Text    string `json:"text"`
		ToolUse struct {
			Input string `json:"input"`
		} `json:"toolUse"`
		ReasoningContent struct {
			Text            string `json:"text"`
			Signature       string `json:"signature"`
			RedactedContent string `json:"redactedContent"`
		} `json:"reasoningContent"`
	} `json:"delta"`
	StopReason string      `json:"stopReason"`
	Usage      *eventUsage `json:"usage"`
	// Message is an exception's (and sometimes an error's) message.
	Message string `json:"message"`
}

type eventToolUse struct {
	ToolUseID string `json:"toolUseId"`
	Name      string `json:"name"`
}

type eventUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
}

// toolCall is an open tool block.
type toolCall struct {
	index int // among the response's tool calls
	args  strings.Builder
}

type streamDecoder struct {
	frames *frameReader
	calls  map[int]*toolCall // open tool blocks by contentBlockIndex
	ncalls int
	bytes  int   // the ids, names and inputs of the tool calls so far
	err    error // the bound the stream went past (MaxArguments, MaxToolCalls, MaxToolCallBytes)
}

// MaxArguments bounds the input of one tool call: a stream that sends more
// ends with an error rather than growing without limit.
const MaxArguments = 16 << 20

// MaxToolCalls bounds the tool calls of one stream: one more ends the
// stream with an error. Models make a handful of calls in one response, a
// few tens at most; the bound leaves room for far more, and keeps the
// per-call state of the decoder (its open tool blocks) and of what
// consumes the stream small.
const MaxToolCalls = 1000

// MaxToolCallBytes bounds the ids, names and inputs of all the tool calls
// of one stream together; more end the stream with an error. MaxArguments
// alone would let MaxToolCalls calls carry nearly 16 GiB. 64 MiB is four
// calls at MaxArguments, and as much as the gateway reads of a whole
// upstream response for a client that does not stream.
const MaxToolCallBytes = 64 << 20

func (d *streamDecoder) run(yield func(chat.Chunk) bool) error {
	var ev streamEvent
	for {
		m, err := d.frames.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch header(&m, hdrMessageType) {
		case msgEvent:
			typ := header(&m, hdrEventType)
			switch typ {
			case "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata":
			default:
				continue // messageStart and event types ctxkit does not know
			}
			if err := parseEvent(m.Payload, &ev); err != nil {
				return fmt.Errorf("bedrock: frame %d: %s event: %w", d.frames.n-1, typ, err)
			}
			if !d.event(typ, &ev, yield) {
				return d.err
			}
		case msgException:
			typ := header(&m, hdrExceptionType)
			yield(chat.Chunk{Type: chat.ChunkError, Error: &chat.StreamError{
				Type: typ, Message: payloadMessage(m.Payload), Retryable: retryable(typ),
			}})
			return nil
		case msgError:
			code := header(&m, hdrErrorCode)
			msg := header(&m, hdrErrorMessage)
			if msg == "" {
				msg = payloadMessage(m.Payload)
			}
			yield(chat.Chunk{Type: chat.ChunkError, Error: &chat.StreamError{
				Type: code, Message: msg, Retryable: retryable(code),
			}})
			return nil
		}
	}
}

// event handles one event; it returns false once the consumer has stopped.
func (d *streamDecoder) event(typ string, ev *streamEvent, yield func(chat.Chunk) bool) bool {
	switch typ {
	case "contentBlockStart":
		if tu := ev.Start.ToolUse; tu != nil {
			c := d.open(ev.ContentBlockIndex, len(tu.ToolUseID)+len(tu.Name))
			if c == nil {
				return false
			}
			return yield(chat.Chunk{Type: chat.ChunkToolCallStart, Index: c.index, ID: tu.ToolUseID, Name: tu.Name})
		}
	case "contentBlockDelta":
		dl := &ev.Delta
		if dl.Text != "" && !yield(chat.Chunk{Type: chat.ChunkText, Text: dl.Text}) {
			return false
		}
		if in := dl.ToolUse.Input; in != "" {
			c, ok := d.calls[ev.ContentBlockIndex]
			if !ok {
				if c = d.open(ev.ContentBlockIndex, 0); c == nil {
					return false
				}
				if !yield(chat.Chunk{Type: chat.ChunkToolCallStart, Index: c.index}) {
					return false
				}
			}
			if c.args.Len()+len(in) > MaxArguments {
				d.err = fmt.Errorf("bedrock: tool call %d: input larger than %d bytes", c.index, MaxArguments)
				return false
			}
			if !d.addBytes(len(in)) {
				return false
			}
			c.args.WriteString(in)
			if !yield(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: c.index, Arguments: in}) {
				return false
			}
		}
		rc := &dl.ReasoningContent
		if (rc.Text != "" || rc.Signature != "") && !yield(chat.Chunk{Type: chat.ChunkReasoning, Text: rc.Text, Signature: rc.Signature}) {
			return false
		}
		if rc.RedactedContent != "" && !yield(chat.Chunk{Type: chat.ChunkReasoning, Redacted: rc.RedactedContent}) {
			return false
		}
	case "contentBlockStop":
		if c, ok := d.calls[ev.ContentBlockIndex]; ok {
			delete(d.calls, ev.ContentBlockIndex)
			return yield(endChunk(c))
		}
	case "messageStop":
		if len(d.calls) > 0 {
			open := make([]*toolCall, 0, len(d.calls))
			for _, c := range d.calls {
				open = append(open, c)
			}
			clear(d.calls)
			sort.Slice(open, func(i, j int) bool { return open[i].index < open[j].index })
			for _, c := range open {
				if !yield(endChunk(c)) {
					return false
				}
			}
		}
		return yield(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: stopReason(ev.StopReason), Raw: ev.StopReason}})
	case "metadata":
		if u := ev.Usage; u != nil {
			return yield(chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{
				Input:      u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
				Output:     u.OutputTokens,
				CacheRead:  u.CacheReadInputTokens,
				CacheWrite: u.CacheWriteInputTokens,
			}})
		}
	}
	return true
}

// open starts a tool call for content block i whose id and name are n
// bytes long. Past MaxToolCalls or MaxToolCallBytes it sets d.err and
// returns nil.
func (d *streamDecoder) open(i, n int) *toolCall {
	if d.ncalls >= MaxToolCalls {
		d.err = fmt.Errorf("bedrock: content block %d: more than %d tool calls in one stream", i, MaxToolCalls)
		return nil
	}
	if !d.addBytes(n) {
		return nil
	}
	c := &toolCall{index: d.ncalls}
	d.ncalls++
	d.calls[i] = c
	return c
}

// addBytes counts n more bytes of tool calls (ids, names, inputs) against
// MaxToolCallBytes; past it, it sets d.err and reports false.
func (d *streamDecoder) addBytes(n int) bool {
	if d.bytes+n > MaxToolCallBytes {
		d.err = fmt.Errorf("bedrock: tool calls larger than %d bytes together (the ids, names and inputs of all the stream's calls)", MaxToolCallBytes)
		return false
	}
	d.bytes += n
	return true
}

func endChunk(c *toolCall) chat.Chunk {
	args := c.args.String()
	if args == "" {
		args = "{}"
	}
	return chat.Chunk{Type: chat.ChunkToolCallEnd, Index: c.index, Arguments: args}
}

// stopReason normalises a ConverseStream stopReason.
func stopReason(s string) chat.StopReason {
	switch s {
	case "end_turn":
		return chat.StopEndTurn
	case "tool_use":
		return chat.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return chat.StopMaxTokens
	case "stop_sequence":
		return chat.StopSequence
	case "guardrail_intervened", "content_filtered":
		return chat.StopContentFilter
	case "malformed_model_output", "malformed_tool_use":
		return chat.StopError
	}
	return chat.StopEndTurn
}

// retryable reports whether an in-stream exception (or error code) of
// this type may succeed when the request is retried.
func retryable(typ string) bool {
	for _, t := range [...]string{"internalServerException", "modelStreamErrorException", "serviceUnavailableException", "throttlingException"} {
		if strings.EqualFold(typ, t) {
			return true
		}
	}
	return false
}

// maxRawMessage bounds the message taken from a payload that is not JSON.
const maxRawMessage = 1 << 10

// payloadMessage is the "message" (or "Message") of an exception's JSON
// payload; a payload that is not a JSON object is taken as the message
// itself, cut to maxRawMessage bytes.
func payloadMessage(p []byte) string {
	var v struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(p, &v); err == nil {
		return v.Message
	}
	s := strings.TrimSpace(string(p[:min(len(p), maxRawMessage)]))
	return strings.ToValidUTF8(s, "\uFFFD")
}
