package anthropic

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

// EncodeStream writes a canonical chunk stream to w as the body of a
// streamed Messages API response (text/event-stream), the way an HTTP
// handler answers a client that speaks Anthropic: each event is written as
// its chunk arrives and flush, when not nil, is called after every chunk
// that wrote something (pass an http.Flusher's Flush; set the
// Content-Type: text/event-stream header before). model and id go in
// message_start.
//
// A decode error from chunks ends the response with an error event (see
// Errors below) and is returned; an error chunk ends it too (the API
// sends nothing after an error event) and stops reading chunks. So does a
// chunk past the bounds (see Bounds below), and the error naming the
// bound is returned. Otherwise EncodeStream returns the first write
// error, or nil.
//
// # Events
//
// message_start is written with the first chunk (or at the end, for a
// stream with none). Its message has the given id and model, empty content, a null
// stop_reason and the usage of the usage chunk that came before any
// content, if one did (zeros otherwise).
//
// Content becomes blocks in the order it began, each opened with
// content_block_start and closed with content_block_stop before the next
// one opens (the API never interleaves blocks), with content indexes
// 0, 1, ...:
//
//   - text chunks: a text block; consecutive text chunks share it, each
//     one a text_delta.
//   - reasoning chunks with Text or Signature: a thinking block (start
//     {"thinking":"","signature":""}), Text as thinking_delta, Signature as
//     signature_delta. Text after a signature begins a new thinking block,
//     as chat.Collect does.
//   - reasoning chunks with Redacted: a redacted_thinking block carrying
//     the data in content_block_start, closed at once (its Text and
//     Signature, if any, are not sent: the block type has no room for
//     them).
//   - tool_call_start: a tool_use block (input {}); each tool_call_delta
//     fragment is an input_json_delta; tool_call_end closes the block,
//     first sending what its complete Arguments add to the fragments sent
//     (all of them when there were no fragments; nothing for "{}").
//
// Chunks with nothing to send (empty text) write nothing. Canonical
// streams may interleave tool calls (chat.Chunk.Index says which call a
// fragment is for); Anthropic's blocks cannot, so a call that starts while
// another is still open waits, its fragments kept, until the open one
// ends, and is then written whole up to where it has got. When a text or
// reasoning chunk or a stop comes while tool calls are open or waiting,
// they are closed in order with what they have (at the end of the stream,
// see below); a fragment that comes later for a closed call cannot
// be sent and is dropped. Deltas and ends for calls that never started are
// ignored, and so is a second start for the same Index.
//
// # Usage
//
// Usage chunks are running totals; Anthropic's usage splits the input:
// input_tokens = Input − CacheRead − CacheWrite (0 if that is negative),
// cache_read_input_tokens = CacheRead, cache_creation_input_tokens =
// CacheWrite, output_tokens = Output, and cost_usd = Cost (US dollars, a
// running total like the counts) when it is set. Reasoning has no place in
// Anthropic's usage and is not sent. A usage chunk after message_start is
// held until the next chunk says where it belongs: with a stop chunk right
// after it, or after the stop, it goes in the stop's message_delta; with
// content after it (a provider that reports running usage mid-content) it
// waits, and the next usage chunk supersedes it (no message_delta in the
// middle of the content); with another usage chunk right after it, it is
// sent in a message_delta of its own (stop_reason null), as the API does
// when it sends several. Every message_delta carries usage: the latest
// total when no usage chunk came with it.
//
// # Stop and end
//
// A stop chunk closes the open blocks and becomes a message_delta with its
// stop_reason, written when the next chunk or the end shows no usage
// chunk follows it (so that a provider's usage reported after the stop
// still goes in it). The stop reason is Stop.Raw when it is one of the
// API's reasons and DecodeStream maps it to Stop.Reason (this keeps
// pause_turn, refusal and model_context_window_exceeded); otherwise it
// follows Stop.Reason: end_turn, max_tokens, tool_use and stop_sequence
// as they are, content_filter as refusal, and anything else as end_turn.
// A stop of reason error becomes an api_error event instead (the API has
// no such reason), which ends the stream.
// stop_sequence is always null.
//
// The end of chunks ends the stream: the open blocks are closed, the
// pending stop or usage is written (no message_delta when there is neither, as for a cut stream)
// and message_stop. A tool call left open with no tool_call_end (nor other
// calls waiting behind it) is not closed: the stream was cut in it, its
// arguments may be incomplete JSON, and content_block_stop would tell the
// client they are complete.
//
// # Errors
//
// An error chunk becomes an error event {"type":"error","error":{"type",
// "message"}} and ends the stream: no message_stop, nothing written after
// it (the API's behaviour). Blocks still open stay unclosed, as when the
// API fails mid-block. An error of one of the API's types keeps it; another
// provider's type becomes api_error when retryable and
// invalid_request_error when not, and its message is prefixed with the
// original type. A decode error from chunks is an api_error with the
// error's text as the message (a *chat.StreamError keeps its type).
//
// # Bounds
//
// EncodeStream keeps a record of every tool call that has started (to
// ignore a second start and late fragments), and what it needs of the
// calls not yet closed: the id and name of a waiting call, the fragments
// of the open call and of those waiting (to complete them at their end),
// and the complete arguments of a waiting call that has ended. So that an
// upstream cannot make it hold memory without limit, a stream with more
// than MaxToolCalls tool calls, or whose calls not yet closed hold more
// than MaxToolCallBytes of all that together, ends at the chunk past the
// bound: an api_error event naming the bound is sent, nothing more is
// written, and EncodeStream returns an error naming it too.
func EncodeStream(w io.Writer, flush func(), model, id string, chunks iter.Seq2[chat.Chunk, error]) error {
	s := newStreamWriter(w, flush, model, id)
	for c, err := range chunks {
		if err != nil {
			s.Fail(err)
			return err
		}
		if err := s.Write(c); err != nil {
			return err
		}
		if s.done {
			return s.err
		}
	}
	return s.Close()
}

// streamWriter writes a canonical chunk stream as Anthropic Messages SSE
// events, one chunk at a time, as EncodeStream documents: Write each
// chunk, then Close (or Fail). It is not safe for concurrent use.
type streamWriter struct {
	w           sse.Writer
	flush       func()
	model, id   string
	started     bool
	done        bool
	wrote       bool  // an event was written since the last flush
	err         error // the first write error
	next        int   // the next content block index
	open        blockKind
	signed      bool // the open thinking block has a signature
	cur         *toolCall
	calls       map[int]*toolCall
	queue       []*toolCall // calls waiting for the open one to end
	held        int         // the bytes kept for the calls not yet closed (see Bounds)
	bound       error       // the bound the stream went past, if any
	usage       chat.Usage  // the latest total, sent or held
	pending     bool        // usage is held, not yet sent
	fresh       bool        // no content since usage was held
	stop        *chat.Stop  // a stop not yet written
	lastStopRaw string      // the stop_reason last written
	buf         []byte
}

type blockKind uint8

const (
	noBlock blockKind = iota
	textBlock
	thinkingBlock
	toolBlock
)

// toolCall is a tool call the writer has seen start.
type toolCall struct {
	id, name string
	args     []byte // the fragments received
	sent     int    // how much of args is on the wire
	final    string // tool_call_end's Arguments
	ended    bool
	state    callState
	held     int // the bytes counted in streamWriter.held for this call
}

type callState uint8

const (
	callWaiting callState = iota
	callOpen
	callClosed
)

// newStreamWriter returns a streamWriter writing to w, calling flush (if
// not nil) after each chunk that wrote something.
func newStreamWriter(w io.Writer, flush func(), model, id string) *streamWriter {
	// buf holds one event's JSON at a time: message_start is the
	// largest of a text stream's.
	return &streamWriter{w: sse.Writer{W: w}, flush: flush, model: model, id: id,
		buf: make([]byte, 0, 512+len(model)+len(id))}
}

// Write writes the events for one chunk. It returns the first write error;
// after an error chunk, or once the stream is closed, it writes nothing.
func (s *streamWriter) Write(c chat.Chunk) error {
	if s.done || s.err != nil {
		return s.err
	}
	switch c.Type {
	case chat.ChunkUsage:
		if c.Usage != nil {
			s.addUsage(*c.Usage)
		}
	case chat.ChunkStop:
		if c.Stop != nil && c.Stop.Reason == chat.StopError {
			// The API has no error stop reason: the upstream ended in error
			// (a malformed tool call, say), so the client gets an error event.
			msg := "the upstream stopped with an error"
			if c.Stop.Raw != "" {
				msg += ": " + c.Stop.Raw
			}
			s.fail("api_error", msg, true)
			break
		}
		if c.Stop != nil {
			s.content() // writes an earlier stop, if any
			s.closeBlock()
			st := *c.Stop
			s.stop = &st
		}
	case chat.ChunkError:
		if c.Error != nil {
			s.fail(c.Error.Type, c.Error.Message, c.Error.Retryable)
		}
	case chat.ChunkText:
		if c.Text != "" {
			s.content()
			s.text(c.Text)
		}
	case chat.ChunkReasoning:
		if c.Text != "" || c.Signature != "" || c.Redacted != "" {
			s.content()
			s.reasoning(c)
		}
	case chat.ChunkToolCallStart:
		s.content()
		s.toolStart(c)
	case chat.ChunkToolCallDelta:
		if tc := s.calls[c.Index]; tc != nil && tc.state != callClosed && c.Arguments != "" {
			s.content()
			if !s.hold(tc, len(c.Arguments)) {
				break
			}
			tc.args = append(tc.args, c.Arguments...)
			if tc.state == callOpen {
				s.sendArgs(tc)
			}
		}
	case chat.ChunkToolCallEnd:
		if tc := s.calls[c.Index]; tc != nil && !tc.ended && tc.state != callClosed {
			s.content()
			if tc.state == callWaiting && !s.hold(tc, len(c.Arguments)) {
				break
			}
			tc.ended, tc.final = true, c.Arguments
			if tc.state == callOpen {
				s.endTool()
				s.drain(false)
			}
		}
	}
	s.doFlush()
	if s.err == nil && s.bound != nil {
		return s.bound
	}
	return s.err
}

// Close ends the stream: it closes the open blocks (but see EncodeStream
// on a tool call cut short), writes the pending stop and usage and
// message_stop, and flushes. After an error event it writes nothing. It
// returns the first write error.
func (s *streamWriter) Close() error {
	if s.done || s.err != nil {
		return s.err
	}
	s.start()
	if s.open != toolBlock || len(s.queue) > 0 {
		// A tool call still open with nothing waiting behind it stays
		// open: its stream was cut, and content_block_stop would say its
		// arguments are complete.
		s.closeBlock()
	}
	switch {
	case s.stop != nil:
		s.messageDelta(s.stop)
	case s.pending:
		s.messageDelta(nil)
	}
	s.event("message_stop", append(s.buf[:0], `{"type":"message_stop"}`...))
	s.done = true
	s.doFlush()
	return s.err
}

// Fail ends the stream with an error event for err: a *chat.StreamError
// keeps its type (see Errors in EncodeStream), any other error is an api_error with
// err's text as the message. It returns the first write error.
func (s *streamWriter) Fail(err error) error {
	if s.done || s.err != nil {
		return s.err
	}
	var se *chat.StreamError
	if errors.As(err, &se) {
		s.fail(se.Type, se.Message, se.Retryable)
	} else {
		s.fail(errTypeAPI, err.Error(), true)
	}
	s.doFlush()
	return s.err
}

func (s *streamWriter) doFlush() {
	if s.wrote && s.err == nil && s.flush != nil {
		s.flush()
	}
	s.wrote = false
}

// event writes one event whose data is the JSON in data.
func (s *streamWriter) event(name string, data []byte) {
	if s.err != nil {
		return
	}
	s.err = s.w.Event(name, data)
	s.buf = data[:0]
	s.wrote = true
}

// start writes message_start, once, with the usage held if any.
func (s *streamWriter) start() {
	if s.started {
		return
	}
	s.started = true
	b := append(s.buf[:0], `{"type":"message_start","message":{"id":`...)
	b = chat.AppendString(b, s.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = chat.AppendString(b, s.model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	b = appendUsage(b, s.usage)
	b = append(b, `}}`...)
	s.pending = false
	s.event("message_start", b)
}

// content prepares for a content chunk (or a stop): message_start first,
// a stop written before content that follows it, and any usage held
// superseded by the next one rather than sent on its own.
func (s *streamWriter) content() {
	s.start()
	if s.stop != nil {
		s.closeBlock()
		s.messageDelta(s.stop)
		s.stop = nil
	}
	s.fresh = false
}

func (s *streamWriter) addUsage(u chat.Usage) {
	switch {
	case !s.started && !s.pending:
		// The usage for message_start, written with the first content.
	case !s.started:
		// A second usage before any content: the first goes in
		// message_start, this one is held like any later one.
		s.start()
	case s.pending && s.fresh && s.stop == nil:
		// Usage right after usage: the first gets a message_delta of its
		// own.
		s.closeBlock()
		s.messageDelta(nil)
	}
	s.usage, s.pending, s.fresh = u, true, true
}

// messageDelta writes a message_delta with stop's reason (nil: the last
// one written, or null) and the latest usage.
func (s *streamWriter) messageDelta(stop *chat.Stop) {
	b := append(s.buf[:0], `{"type":"message_delta","delta":{"stop_reason":`...)
	raw := s.lastStopRaw
	if stop != nil {
		raw = encodeStopReason(*stop)
		s.lastStopRaw = raw
		if s.stop == stop {
			s.stop = nil
		}
	}
	if raw == "" {
		b = append(b, "null"...)
	} else {
		b = chat.AppendString(b, raw)
	}
	b = append(b, `,"stop_sequence":null},"usage":`...)
	b = appendUsage(b, s.usage)
	b = append(b, '}')
	s.pending = false
	s.event("message_delta", b)
}

func (s *streamWriter) blockStart(kind blockKind, block []byte) {
	b := append(s.buf[:0], `{"type":"content_block_start","index":`...)
	b = strconv.AppendInt(b, int64(s.next), 10)
	b = append(b, `,"content_block":`...)
	b = append(b, block...)
	b = append(b, '}')
	s.open = kind
	s.event("content_block_start", b)
}

// blockDelta writes a content_block_delta of type typ whose field key
// holds value.
func (s *streamWriter) blockDelta(typ, key, value string) {
	b := append(s.buf[:0], `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(s.next), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = chat.AppendString(b, value)
	b = append(b, `}}`...)
	s.event("content_block_delta", b)
}

func (s *streamWriter) blockStop() {
	b := append(s.buf[:0], `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(s.next), 10)
	b = append(b, '}')
	s.event("content_block_stop", b)
	s.next++
	s.open = noBlock
}

// closeBlock closes the open block; for a tool call, it also closes the
// calls waiting behind it.
func (s *streamWriter) closeBlock() {
	switch s.open {
	case noBlock:
	case toolBlock:
		s.endTool()
		s.drain(true)
	default:
		s.blockStop()
	}
}

func (s *streamWriter) text(t string) {
	if s.open != textBlock {
		s.closeBlock()
		s.blockStart(textBlock, []byte(`{"type":"text","text":""}`))
	}
	s.blockDelta(deltaText, "text", t)
}

func (s *streamWriter) reasoning(c chat.Chunk) {
	if c.Redacted != "" {
		s.closeBlock()
		b := chat.AppendString([]byte(`{"type":"redacted_thinking","data":`), c.Redacted)
		s.blockStart(noBlock, append(b, '}'))
		s.blockStop()
		return
	}
	if s.open != thinkingBlock || (s.signed && c.Text != "") {
		s.closeBlock()
		s.blockStart(thinkingBlock, []byte(`{"type":"thinking","thinking":"","signature":""}`))
		s.signed = false
	}
	if c.Text != "" {
		s.blockDelta(deltaThinking, "thinking", c.Text)
	}
	if c.Signature != "" {
		s.blockDelta(deltaSignature, "signature", c.Signature)
		s.signed = true
	}
}

func (s *streamWriter) toolStart(c chat.Chunk) {
	if s.calls[c.Index] != nil {
		return // started already
	}
	if len(s.calls) >= MaxToolCalls {
		s.refuse(fmt.Errorf("anthropic: more than %d tool calls in one stream", MaxToolCalls))
		return
	}
	tc := &toolCall{id: c.ID, name: c.Name}
	if !s.hold(tc, len(c.ID)+len(c.Name)) {
		return
	}
	if s.calls == nil {
		s.calls = map[int]*toolCall{} // made for the first call: most streams have none
	}
	s.calls[c.Index] = tc
	if s.open == toolBlock {
		s.queue = append(s.queue, tc)
		return
	}
	s.closeBlock()
	s.openTool(tc)
}

func (s *streamWriter) openTool(tc *toolCall) {
	b := chat.AppendString([]byte(`{"type":"tool_use","id":`), tc.id)
	b = append(b, `,"name":`...)
	b = chat.AppendString(b, tc.name)
	b = append(b, `,"input":{}}`...)
	s.blockStart(toolBlock, b)
	tc.state = callOpen
	s.cur = tc
	s.sendArgs(tc)
}

// sendArgs sends the fragments of the open call not sent yet.
func (s *streamWriter) sendArgs(tc *toolCall) {
	if tc.sent < len(tc.args) {
		s.blockDelta(deltaInputJSON, "partial_json", string(tc.args[tc.sent:]))
		tc.sent = len(tc.args)
	}
}

// endTool closes the open tool call's block, first sending what its
// complete arguments add to the fragments.
func (s *streamWriter) endTool() {
	tc := s.cur
	s.sendArgs(tc)
	if tc.final != "" && tc.final != "{}" && len(tc.final) > len(tc.args) && tc.final[:len(tc.args)] == string(tc.args) {
		s.blockDelta(deltaInputJSON, "partial_json", tc.final[len(tc.args):])
	}
	s.held -= tc.held
	tc.state, tc.args, tc.final, tc.id, tc.name, tc.held = callClosed, nil, "", "", "", 0
	s.cur = nil
	s.blockStop()
}

// hold counts n more bytes kept for call tc against MaxToolCallBytes (see
// Bounds). Past the bound it ends the stream (refuse) and reports false.
func (s *streamWriter) hold(tc *toolCall, n int) bool {
	if s.held+n > MaxToolCallBytes {
		s.refuse(fmt.Errorf("anthropic: tool calls not yet written whole hold more than %d bytes together (ids, names and arguments)", MaxToolCallBytes))
		return false
	}
	s.held += n
	tc.held += n
	return true
}

// refuse ends the stream at a chunk past a bound: an api_error event
// naming it, and err kept for Write to return.
func (s *streamWriter) refuse(err error) {
	s.fail(errTypeAPI, err.Error(), false)
	s.bound = err
}

// drain opens the waiting calls in order, sending what they have, and
// closes those that have ended (all of them when force is set); it stops
// at the first call that stays open. The open call, if any, has just
// closed.
func (s *streamWriter) drain(force bool) {
	for len(s.queue) > 0 && s.open == noBlock {
		tc := s.queue[0]
		s.queue = s.queue[1:]
		s.openTool(tc)
		if tc.ended || force {
			s.endTool()
		}
	}
}

// fail writes an error event and ends the stream.
func (s *streamWriter) fail(typ, msg string, retry bool) {
	if !s.started && s.pending {
		s.start() // the usage of a message that failed before any content
	}
	if s.started && s.pending && s.fresh {
		s.closeBlock()
		s.messageDelta(nil)
	}
	if s.stop != nil {
		s.closeBlock()
		s.messageDelta(s.stop)
	}
	b := appendError(s.buf[:0], &chat.StreamError{Type: typ, Message: msg, Retryable: retry})
	s.event("error", b)
	s.done = true
}

// appendUsage appends the API's usage object for u.
func appendUsage(b []byte, u chat.Usage) []byte {
	in := u.Input - u.CacheRead - u.CacheWrite
	if in < 0 {
		in = 0
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, in, 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheWrite, 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheRead, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	if u.Cost != nil {
		b = append(b, `,"cost_usd":`...)
		b = strconv.AppendFloat(b, *u.Cost, 'f', -1, 64)
	}
	return append(b, '}')
}

// encodeStopReason is the API's stop_reason for a canonical stop.
func encodeStopReason(st chat.Stop) string {
	switch st.Raw {
	case string(chat.StopEndTurn), string(chat.StopMaxTokens), string(chat.StopToolUse), string(chat.StopSequence),
		stopReasonRefusal, stopReasonPauseTurn, stopReasonContext:
		if stopReason(st.Raw) == st.Reason {
			return st.Raw
		}
	}
	switch st.Reason {
	case chat.StopMaxTokens, chat.StopToolUse, chat.StopSequence:
		return string(st.Reason)
	case chat.StopContentFilter:
		return stopReasonRefusal
	}
	return string(chat.StopEndTurn)
}

// anthropicError reports whether t is one of the API's error types.
func anthropicError(t string) bool {
	switch t {
	case errTypeInvalid, "authentication_error", "billing_error", "permission_error", "not_found_error",
		"request_too_large", errTypeRateLimit, errTypeAPI, errTypeTimeout, errTypeOverloaded:
		return true
	}
	return false
}
