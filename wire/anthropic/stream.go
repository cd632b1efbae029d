package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

// MaxEvent bounds one event of a Messages stream (all its data lines
// together): 8 MiB, the bound of the SSE reader. DecodeStream ends with an
// error at an event larger than this instead of buffering it.
const MaxEvent = sse.DefaultMaxEvent

// MaxArguments bounds the arguments of one tool call, which DecodeStream
// assembles from input_json_delta fragments to put them in the call's
// tool_call_end chunk. Longer arguments end the stream with an error.
const MaxArguments = 16 << 20

// MaxToolCalls bounds the tool_use blocks of one stream; one more ends the
// stream with an error. Models make a handful of calls in one response, a
// few tens at most; the bound leaves room for far more, and keeps the
// per-call state of what consumes the stream (the calls EncodeStream
// keeps, the blocks chat.Collect builds) small.
const MaxToolCalls = 1000

// MaxToolCallBytes bounds the ids, names and arguments of all the tool
// calls of one stream together; more end the stream with an error.
// MaxArguments alone would let MaxToolCalls calls carry nearly 16 GiB.
// 64 MiB is four calls at MaxArguments, and as much as the gateway reads
// of a whole upstream response for a client that does not stream.
const MaxToolCallBytes = 64 << 20

// MaxOpenBlocks bounds the content blocks open at once (started and not
// stopped) in a stream DecodeStream reads; one more ends the stream with
// an error. The API opens one block at a time, but the decoder keeps a
// record of each open block, so a stream that starts blocks and never
// stops them must not grow it without limit.
const MaxOpenBlocks = 1000

// DecodeStream reads the body of a streamed Messages API response
// (text/event-stream) and yields it as canonical chunks. The loop closes r,
// if it is an io.Closer, when it ends, early or not.
//
// # Events
//
// Each event is read with a size bound (MaxEvent) and its JSON is decoded
// once, into a typed struct: content_block_delta and content_block_stop
// events, nearly all of a stream, by a one-pass reader, the others by
// encoding/json. The JSON "type" says what the event is (the SSE event
// name when the JSON has none). An event whose SSE name is not one of the
// Messages events below is skipped without being parsed: ping, and any
// event type the API adds later; an event without a name is parsed, then
// skipped if its JSON type is not one of them. An event whose data does
// not decode (not JSON, or a field of the wrong type) ends the stream with
// an error naming the event ("anthropic: content_block_delta event: ..."),
// as does an event larger than MaxEvent, a tool call's arguments growing
// past MaxArguments, more than MaxToolCalls tool calls, tool calls past
// MaxToolCallBytes together, or more than MaxOpenBlocks blocks open at
// once.
//
//   - message_start: its message.usage becomes a usage chunk (see Usage).
//   - content_block_start, content_block_delta, content_block_stop: see
//     Blocks.
//   - message_delta: its usage becomes a usage chunk, then its stop_reason,
//     when not null, a stop chunk (see Stop reasons).
//   - message_stop: the end; nothing after it is read.
//   - error: an error chunk (see Errors). Decoding goes on with what
//     follows, if anything does.
//
// A stream that ends before message_stop ends cleanly with the chunks of
// what arrived: no stop chunk is made up, and a tool call whose block did
// not end gets no tool_call_end (its arguments may be cut short).
//
// # Blocks
//
// content_block_start, _delta and _stop carry the block's index in the
// message's content; chunks do not, except tool calls:
//
//   - text: each text_delta is a text chunk (text in content_block_start, if
//     any, comes first).
//   - thinking: each thinking_delta is a reasoning chunk with Text, and each
//     signature_delta (sent just before the block ends) a reasoning chunk
//     with only Signature.
//   - redacted_thinking: content_block_start carries the whole block; its
//     data becomes a reasoning chunk with Redacted.
//   - tool_use: content_block_start becomes tool_call_start with the id, the
//     name and Index, the block's position among this response's tool_use
//     blocks (0, 1, ...; not its content index, which counts text and
//     thinking blocks too). Each input_json_delta fragment becomes a
//     tool_call_delta; empty fragments (the API's first one usually is "")
//     are skipped. content_block_stop becomes tool_call_end with the whole
//     arguments (the fragments joined, as received: they are not
//     re-validated), "{}" when there were none. An input other than {} in
//     content_block_start (the API sends {}) is passed on, compacted, as a
//     first tool_call_delta.
//
// Empty text, thinking and signature deltas make no chunk. Blocks of other
// types (server_tool_use, web_search_tool_result, ...) and other delta
// types (citations_delta, ...) have no canonical chunk and are skipped.
//
// # Usage
//
// Usage chunks carry running totals for the whole response. Anthropic's
// input_tokens excludes the prompt tokens read from or written to the cache,
// so Input = input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens, CacheWrite = cache_creation_input_tokens,
// CacheRead = cache_read_input_tokens and Output = output_tokens. The usage
// in message_delta is cumulative: a count it carries replaces the one
// known so far, and a count it omits (input and cache counts, often) keeps
// the value from message_start. Reasoning and Cost stay unset: the API
// reports neither.
//
// # Stop reasons
//
// end_turn, max_tokens, tool_use and stop_sequence keep their names;
// refusal becomes content_filter; model_context_window_exceeded becomes
// max_tokens; pause_turn (a server tool loop paused, the turn can be
// continued) and any reason this package does not know become end_turn.
// Stop.Raw always holds the API's own stop_reason. The matched stop
// sequence (stop_sequence) is not carried: chat.Stop has no field for it.
//
// # Errors
//
// An error event becomes an error chunk with the error's type and message.
// It is retryable for overloaded_error, api_error, rate_limit_error and
// timeout types (timeout_error, or any type mentioning "timeout"); not for
// invalid_request_error, authentication_error, permission_error,
// not_found_error, request_too_large, billing_error and other types.
func DecodeStream(r io.Reader) iter.Seq2[chat.Chunk, error] {
	return chat.Stream(r, func(yield func(chat.Chunk) bool) error {
		d := decoder{yield: yield, blocks: map[int]*openBlock{}}
		return d.run(r, nil)
	})
}

// event is every Messages stream event's payload in one struct, so that
// each event is unmarshalled once, whatever its type.
type event struct {
	Type         kind        `json:"type"`
	Index        int         `json:"index"`
	Message      *message    `json:"message"`
	ContentBlock *startBlock `json:"content_block"`
	Delta        delta       `json:"delta"`
	Usage        *usage      `json:"usage"`
	Error        *apiError   `json:"error"`
}

// message is the part of message_start's message the decoder uses.
type message struct {
	Usage *usage `json:"usage"`
}

// startBlock is content_block_start's content_block.
type startBlock struct {
	Type      kind            `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// delta is content_block_delta's delta (type and one of the text fields)
// or message_delta's (stop_reason).
type delta struct {
	Type        kind    `json:"type"`
	Text        string  `json:"text"`
	Thinking    string  `json:"thinking"`
	Signature   string  `json:"signature"`
	PartialJSON string  `json:"partial_json"`
	StopReason  *string `json:"stop_reason"`
}

// usage is the API's usage object; a nil count was not sent.
type usage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// apiError is an error event's error.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Names the API uses.
const (
	evMessageStart      = "message_start"
	evBlockStart        = "content_block_start"
	evBlockDelta        = "content_block_delta"
	evBlockStop         = "content_block_stop"
	evMessageDelta      = "message_delta"
	evMessageStop       = "message_stop"
	evError             = "error"
	blockText           = "text"
	blockThinking       = "thinking"
	blockRedacted       = "redacted_thinking"
	blockToolUse        = "tool_use"
	deltaText           = "text_delta"
	deltaThinking       = "thinking_delta"
	deltaSignature      = "signature_delta"
	deltaInputJSON      = "input_json_delta"
	errTypeInvalid      = "invalid_request_error"
	errTypeAPI          = "api_error"
	errTypeOverloaded   = "overloaded_error"
	errTypeRateLimit    = "rate_limit_error"
	errTypeTimeout      = "timeout_error"
	stopReasonRefusal   = "refusal"
	stopReasonPauseTurn = "pause_turn"
	stopReasonContext   = "model_context_window_exceeded"
)

// kind is a "type" the decoder acts on: an event's, a block's or a
// delta's. Decoding the names into a small enum spares a string per name.
type kind uint8

const (
	kindNone  kind = iota // no type
	kindOther             // a type the decoder skips
	kindMessageStart
	kindBlockStart
	kindBlockDelta
	kindBlockStop
	kindMessageDelta
	kindMessageStop
	kindError
	kindText
	kindThinking
	kindRedacted
	kindToolUse
	kindTextDelta
	kindThinkingDelta
	kindSignatureDelta
	kindInputJSONDelta
)

func kindOf(name string) kind {
	switch name {
	case "":
		return kindNone
	case evMessageStart:
		return kindMessageStart
	case evBlockStart:
		return kindBlockStart
	case evBlockDelta:
		return kindBlockDelta
	case evBlockStop:
		return kindBlockStop
	case evMessageDelta:
		return kindMessageDelta
	case evMessageStop:
		return kindMessageStop
	case evError:
		return kindError
	case blockText:
		return kindText
	case blockThinking:
		return kindThinking
	case blockRedacted:
		return kindRedacted
	case blockToolUse:
		return kindToolUse
	case deltaText:
		return kindTextDelta
	case deltaThinking:
		return kindThinkingDelta
	case deltaSignature:
		return kindSignatureDelta
	case deltaInputJSON:
		return kindInputJSONDelta
	}
	return kindOther
}

// UnmarshalText decodes a type name.
func (k *kind) UnmarshalText(b []byte) error {
	*k = kindOf(string(b))
	return nil
}

// isEvent reports whether k is a Messages event the decoder acts on.
func (k kind) isEvent() bool { return k >= kindMessageStart && k <= kindError }

// openBlock is a content block that has started and not stopped.
type openBlock struct {
	kind kind // text, thinking, tool_use, or another type (skipped)
	tool int  // tool_use: the call's index among tool calls
	args strings.Builder
}

type decoder struct {
	yield  func(chat.Chunk) bool
	blocks map[int]*openBlock // by content index
	tools  int                // tool_use blocks so far
	bytes  int                // the ids, names and arguments of the tool calls so far
	// Running usage: the API's own counts.
	input, output, cacheWrite, cacheRead int64
}

// run decodes the events of r. skip, when not nil, is given each event
// first, and the events it handles (done) are not decoded: more is then
// false when the stream is over.
func (d *decoder) run(r io.Reader, skip func(name kind, data []byte) (done, more bool, err error)) error {
	var e event
	for ev, err := range sse.ReadLent(r, MaxEvent) {
		if err != nil {
			return fmt.Errorf("anthropic: %w", err)
		}
		name := kindOf(ev.Name)
		if name != kindNone && !name.isEvent() {
			continue // ping, or an event type added later
		}
		if skip != nil {
			if done, more, err := skip(name, ev.Data); done {
				if err != nil || !more {
					return err
				}
				continue
			}
		}
		e = event{}
		if err := parseEvent(ev.Data, &e); err != nil {
			n := ev.Name
			if n == "" {
				n = "unnamed"
			}
			return fmt.Errorf("anthropic: %s event: %v", n, err)
		}
		typ := e.Type
		if typ == kindNone {
			typ = name
		}
		more, err := d.event(typ, &e)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// event handles one event. It reports false when the stream is over
// (message_stop) or the consumer has stopped.
func (d *decoder) event(typ kind, e *event) (bool, error) {
	switch typ {
	case kindMessageStart:
		if e.Message != nil && e.Message.Usage != nil {
			return d.usage(e.Message.Usage), nil
		}
	case kindBlockStart:
		if e.ContentBlock != nil {
			return d.blockStart(e.Index, e.ContentBlock)
		}
	case kindBlockDelta:
		return d.blockDelta(e.Index, &e.Delta)
	case kindBlockStop:
		return d.blockStop(e.Index), nil
	case kindMessageDelta:
		if e.Usage != nil && !d.usage(e.Usage) {
			return false, nil
		}
		if r := e.Delta.StopReason; r != nil && *r != "" {
			return d.yield(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: stopReason(*r), Raw: *r}}), nil
		}
	case kindMessageStop:
		return false, nil
	case kindError:
		se := &chat.StreamError{}
		if e.Error != nil {
			se.Type, se.Message = e.Error.Type, e.Error.Message
		}
		se.Retryable = retryable(se.Type)
		return d.yield(chat.Chunk{Type: chat.ChunkError, Error: se}), nil
	}
	return true, nil
}

// usage folds the counts u carries into the running totals and yields them.
func (d *decoder) usage(u *usage) bool {
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&d.input, u.InputTokens)
	set(&d.output, u.OutputTokens)
	set(&d.cacheWrite, u.CacheCreationInputTokens)
	set(&d.cacheRead, u.CacheReadInputTokens)
	return d.yield(chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{
		Input:      d.input + d.cacheWrite + d.cacheRead,
		Output:     d.output,
		CacheRead:  d.cacheRead,
		CacheWrite: d.cacheWrite,
	}})
}

func (d *decoder) blockStart(index int, b *startBlock) (bool, error) {
	if _, dup := d.blocks[index]; dup {
		return true, nil // a second start for an open block: keep the first
	}
	if len(d.blocks) >= MaxOpenBlocks {
		return false, fmt.Errorf("anthropic: content block %d: more than %d blocks open at once", index, MaxOpenBlocks)
	}
	ob := &openBlock{kind: b.Type}
	d.blocks[index] = ob
	switch b.Type {
	case kindText:
		if b.Text != "" {
			return d.yield(chat.Chunk{Type: chat.ChunkText, Text: b.Text}), nil
		}
	case kindThinking:
		if b.Thinking != "" && !d.yield(chat.Chunk{Type: chat.ChunkReasoning, Text: b.Thinking}) {
			return false, nil
		}
		if b.Signature != "" {
			return d.yield(chat.Chunk{Type: chat.ChunkReasoning, Signature: b.Signature}), nil
		}
	case kindRedacted:
		if b.Data != "" {
			return d.yield(chat.Chunk{Type: chat.ChunkReasoning, Redacted: b.Data}), nil
		}
	case kindToolUse:
		if d.tools >= MaxToolCalls {
			return false, fmt.Errorf("anthropic: content block %d: more than %d tool calls in one stream", index, MaxToolCalls)
		}
		// The input, compacted, when it is other than {} (what the API sends).
		var in bytes.Buffer
		if len(b.Input) > 0 && (json.Compact(&in, b.Input) != nil || in.String() == "{}" || in.String() == "null") {
			in.Reset()
		}
		if err := d.addBytes(len(b.ID) + len(b.Name) + in.Len()); err != nil {
			return false, err
		}
		ob.tool = d.tools
		d.tools++
		if !d.yield(chat.Chunk{Type: chat.ChunkToolCallStart, Index: ob.tool, ID: b.ID, Name: b.Name}) {
			return false, nil
		}
		if in.Len() == 0 {
			return true, nil
		}
		ob.args.Write(in.Bytes())
		return d.yield(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: ob.tool, Arguments: in.String()}), nil
	}
	return true, nil
}

// addBytes counts n more bytes of tool calls (ids, names, arguments)
// against MaxToolCallBytes.
func (d *decoder) addBytes(n int) error {
	if d.bytes+n > MaxToolCallBytes {
		return fmt.Errorf("anthropic: tool calls larger than %d bytes together (the ids, names and arguments of all the stream's calls)", MaxToolCallBytes)
	}
	d.bytes += n
	return nil
}

func (d *decoder) blockDelta(index int, dl *delta) (bool, error) {
	ob := d.blocks[index]
	if ob == nil {
		return true, nil // a delta for a block that never started
	}
	switch {
	case dl.Type == kindTextDelta && ob.kind == kindText:
		if dl.Text != "" {
			return d.yield(chat.Chunk{Type: chat.ChunkText, Text: dl.Text}), nil
		}
	case dl.Type == kindThinkingDelta && ob.kind == kindThinking:
		if dl.Thinking != "" {
			return d.yield(chat.Chunk{Type: chat.ChunkReasoning, Text: dl.Thinking}), nil
		}
	case dl.Type == kindSignatureDelta && ob.kind == kindThinking:
		if dl.Signature != "" {
			return d.yield(chat.Chunk{Type: chat.ChunkReasoning, Signature: dl.Signature}), nil
		}
	case dl.Type == kindInputJSONDelta && ob.kind == kindToolUse:
		if dl.PartialJSON == "" {
			return true, nil
		}
		if ob.args.Len()+len(dl.PartialJSON) > MaxArguments {
			return false, fmt.Errorf("anthropic: tool call %d: arguments larger than %d bytes", ob.tool, MaxArguments)
		}
		if err := d.addBytes(len(dl.PartialJSON)); err != nil {
			return false, err
		}
		ob.args.WriteString(dl.PartialJSON)
		return d.yield(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: ob.tool, Arguments: dl.PartialJSON}), nil
	}
	return true, nil
}

func (d *decoder) blockStop(index int) bool {
	ob := d.blocks[index]
	if ob == nil {
		return true
	}
	delete(d.blocks, index)
	if ob.kind != kindToolUse {
		return true
	}
	args := ob.args.String()
	if args == "" {
		args = "{}"
	}
	return d.yield(chat.Chunk{Type: chat.ChunkToolCallEnd, Index: ob.tool, Arguments: args})
}

// stopReason maps the API's stop_reason to a canonical one.
func stopReason(raw string) chat.StopReason {
	switch raw {
	case string(chat.StopEndTurn), string(chat.StopMaxTokens), string(chat.StopToolUse), string(chat.StopSequence):
		return chat.StopReason(raw)
	case stopReasonRefusal:
		return chat.StopContentFilter
	case stopReasonContext:
		return chat.StopMaxTokens
	}
	return chat.StopEndTurn // pause_turn and reasons added later
}

// retryable reports whether retrying a request that failed with an error
// of type t may succeed.
func retryable(t string) bool {
	switch t {
	case errTypeOverloaded, errTypeAPI, errTypeRateLimit, errTypeTimeout:
		return true
	}
	return strings.Contains(t, "timeout")
}
