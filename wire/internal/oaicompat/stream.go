package oaicompat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

// The pieces of stream decoding that the OpenAI-shaped formats share
// (wire/openai and wire/mistral): the event loop, tool-call assembly, the
// usage object and in-stream errors.

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
	for ev, err := range sse.ReadLent(r, maxEvent) {
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

// ToolCallAssembler turns the tool-call fragments of a stream into
// canonical chunks. Fragments are keyed by the provider's index (the
// "index" of a tool_calls item); canonical indices (chat.Chunk.Index) are
// the order in which calls start, 0, 1, ..., whatever the provider's
// indices were.
//
//   - A call's tool_call_start is emitted as soon as its name is known
//     (normally with its first fragment, which carries id and name); a call
//     that has no id by then gets "call_<canonical index>". Arguments that
//     came before the name follow the start as one tool_call_delta.
//   - Each non-empty argument fragment of a started call is a
//     tool_call_delta.
//   - A fragment that carries an id different from the id of the call
//     open under its key, or a name but no id when that call has started
//     already, starts a new call: providers that send complete calls all
//     under index 0 (or with no index) are assembled right.
//   - Close ends every open call: a call that never got a name is started
//     then, with an empty name; then, in index order, each open call gets
//     a "{}" tool_call_delta when it had no argument text, and its
//     tool_call_end with the complete arguments. So the deltas of a call
//     always add up to the arguments of its end.
//
// Arguments are passed on as the provider sent them, not checked.
//
// The assembler keeps every call of the stream until it ends, so it bounds
// them: MaxArguments for one call's arguments, MaxToolCalls for the number
// of calls, MaxToolCallBytes for the arguments, ids and names of all the
// calls together. A fragment past a bound adds nothing, and Err reports it.
type ToolCallAssembler struct {
	calls   []assembledCall // in order of first appearance
	byKey   map[int]int     // provider index → the call open under it
	started []int           // calls in order of start: a call's canonical index is its place here
	bytes   int             // the arguments, ids and names kept, all calls together
	err     error           // the bound a fragment went past
}

// MaxArguments bounds the arguments of one tool call: a stream that sends
// more ends with an error (Err) rather than growing without limit.
const MaxArguments = 16 << 20

// MaxToolCalls bounds the tool calls of one stream, started or not: a
// stream that begins more ends with an error (Err). Models make a handful
// of calls in one response, a few tens at most (a request may offer at
// most 128 tools); the bound leaves room for far more, and keeps what a
// hostile upstream can make the assembler hold per call (its bookkeeping,
// and the per-call state of the encoders that follow) small.
const MaxToolCalls = 1000

// MaxToolCallBytes bounds the arguments, ids and names of all the tool
// calls of one stream together: a stream that sends more ends with an
// error (Err). MaxArguments alone would let MaxToolCalls calls hold nearly
// 16 GiB.
// 64 MiB is four calls at MaxArguments, and as much as the gateway reads
// of a whole upstream response for a client that does not stream.
const MaxToolCallBytes = 64 << 20

// Err reports the bound a fragment went past (MaxArguments, MaxToolCalls
// or MaxToolCallBytes); the decoder ends the stream with it.
func (a *ToolCallAssembler) Err() error { return a.err }

type assembledCall struct {
	id, name string
	args     []byte
	index    int // canonical index, once started
	started  bool
	closed   bool
}

// Fragment adds one fragment for the call the provider keys by key and
// emits the chunks it makes; it returns false as soon as emit does, and
// when the fragment goes past a bound (see Err), or one did before.
func (a *ToolCallAssembler) Fragment(key int, id, name, args string, emit func(chat.Chunk) bool) bool {
	if a.err != nil {
		return false
	}
	if a.byKey == nil {
		a.byKey = map[int]int{}
	}
	pos, ok := a.byKey[key]
	if ok {
		c := &a.calls[pos]
		if c.closed || (id != "" && c.id != "" && id != c.id) || (id == "" && name != "" && c.started) {
			ok = false
		}
	}
	var cur assembledCall // the call the fragment adds to, as it is (empty for a new one)
	if ok {
		cur = a.calls[pos]
	} else {
		if len(a.calls) >= MaxToolCalls {
			a.err = fmt.Errorf("more than %d tool calls in one stream", MaxToolCalls)
			return false
		}
		pos = len(a.calls)
	}
	// What the fragment adds to what the assembler keeps: its arguments,
	// and its id and name when they are the call's first.
	add := len(args)
	if cur.id == "" {
		add += len(id)
	}
	if !cur.started {
		add += len(name)
	}
	switch {
	case len(cur.args)+len(args) > MaxArguments:
		a.err = fmt.Errorf("tool call %d: arguments larger than %d bytes", pos, MaxArguments)
		return false
	case a.bytes+add > MaxToolCallBytes:
		a.err = fmt.Errorf("tool calls larger than %d bytes together (the arguments, ids and names of all the stream's calls)", MaxToolCallBytes)
		return false
	}
	a.bytes += add
	if !ok {
		a.calls = append(a.calls, assembledCall{})
		a.byKey[key] = pos
	}
	c := &a.calls[pos]
	if c.id == "" {
		c.id = id
	}
	c.args = append(c.args, args...)
	if !c.started {
		if name == "" {
			return true
		}
		c.name = name
		return a.start(pos, emit)
	}
	if args != "" {
		return emit(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: c.index, Arguments: args})
	}
	return true
}

// Open is the canonical index of the call open under the provider's key:
// started and not closed, so that a fragment with arguments only (no id,
// no name) is one tool_call_delta of it; ok is false for any other key.
func (a *ToolCallAssembler) Open(key int) (index int, ok bool) {
	pos, ok := a.byKey[key]
	if !ok || a.err != nil {
		return 0, false
	}
	c := &a.calls[pos]
	if !c.started || c.closed {
		return 0, false
	}
	return c.index, true
}

// start emits the start of call pos and the arguments it already has.
func (a *ToolCallAssembler) start(pos int, emit func(chat.Chunk) bool) bool {
	c := &a.calls[pos]
	c.started, c.index = true, len(a.started)
	a.started = append(a.started, pos)
	if c.id == "" {
		c.id = "call_" + strconv.Itoa(c.index)
	}
	if !emit(chat.Chunk{Type: chat.ChunkToolCallStart, Index: c.index, ID: c.id, Name: c.name}) {
		return false
	}
	if len(c.args) > 0 {
		return emit(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: c.index, Arguments: string(c.args)})
	}
	return true
}

// Close ends every open call; it returns false as soon as emit does.
func (a *ToolCallAssembler) Close(emit func(chat.Chunk) bool) bool {
	for pos := range a.calls {
		if c := &a.calls[pos]; !c.started && !c.closed && !a.start(pos, emit) {
			return false
		}
	}
	for _, pos := range a.started {
		c := &a.calls[pos]
		if c.closed {
			continue
		}
		c.closed = true
		if len(c.args) == 0 {
			c.args = append(c.args, "{}"...)
			if !emit(chat.Chunk{Type: chat.ChunkToolCallDelta, Index: c.index, Arguments: "{}"}) {
				return false
			}
		}
		if !emit(chat.Chunk{Type: chat.ChunkToolCallEnd, Index: c.index, Arguments: string(c.args)}) {
			return false
		}
	}
	return true
}

// Usage is the usage object of a Chat Completions response or stream, with
// the fields of the OpenAI-compatible providers ctxkit reads (DeepSeek's
// cache counts, OpenRouter's cost).
type Usage struct {
	PromptTokens            int64                    `json:"prompt_tokens"`
	CompletionTokens        int64                    `json:"completion_tokens"`
	TotalTokens             int64                    `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
	PromptCacheHitTokens    *int64                   `json:"prompt_cache_hit_tokens,omitempty"`
	PromptCacheMissTokens   *int64                   `json:"prompt_cache_miss_tokens,omitempty"`
	Cost                    *float64                 `json:"cost,omitempty"`
}

// PromptTokensDetails breaks the prompt tokens down.
type PromptTokensDetails struct {
	CachedTokens     *int64 `json:"cached_tokens,omitempty"`
	CacheWriteTokens int64  `json:"cache_write_tokens,omitempty"`
}

// CompletionTokensDetails breaks the completion tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
}

// Chat is the usage as canonical running totals: prompt_tokens is Input
// (it counts cached tokens too), completion_tokens is Output (reasoning
// included), prompt_tokens_details.cached_tokens is CacheRead (DeepSeek's
// prompt_cache_hit_tokens when there is no cached_tokens),
// prompt_tokens_details.cache_write_tokens is CacheWrite,
// completion_tokens_details.reasoning_tokens is Reasoning and OpenRouter's
// cost is Cost.
func (u *Usage) Chat() *chat.Usage {
	out := &chat.Usage{Input: u.PromptTokens, Output: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		if d.CachedTokens != nil {
			out.CacheRead = *d.CachedTokens
		}
		out.CacheWrite = d.CacheWriteTokens
	}
	if (u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens == nil) && u.PromptCacheHitTokens != nil {
		out.CacheRead = *u.PromptCacheHitTokens
	}
	if u.CompletionTokensDetails != nil {
		out.Reasoning = u.CompletionTokensDetails.ReasoningTokens
	}
	if u.Cost != nil {
		c := *u.Cost
		out.Cost = &c
	}
	return out
}

type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// StreamError reads the value of an "error" key in a stream (an object
// {"message","type","code"}, or a bare string) as a canonical stream
// error. Its Type is the error's type, or its code (a string, or a number
// as text) when it has no type, or "error". It is retryable when the type
// or code names a rate limit, an overload, a server error, an unavailable
// service or a timeout, or is the status 408, 429 or 5xx.
func StreamError(raw []byte) *chat.StreamError {
	raw = bytes.TrimSpace(raw)
	var e wireError
	if len(raw) > 0 && raw[0] == '"' {
		if json.Unmarshal(raw, &e.Message) != nil {
			e.Message = string(raw)
		}
	} else if json.Unmarshal(raw, &e) != nil {
		e = wireError{Message: string(raw)}
	}
	code := ""
	if c := bytes.TrimSpace(e.Code); len(c) > 0 && string(c) != "null" {
		if c[0] == '"' {
			_ = json.Unmarshal(c, &code)
		} else {
			code = string(c)
		}
	}
	out := &chat.StreamError{Type: e.Type, Message: e.Message}
	if out.Type == "" {
		out.Type = code
	}
	if out.Type == "" {
		out.Type = "error"
	}
	out.Retryable = Retryable(e.Type) || Retryable(code)
	return out
}

// Retryable reports whether an error type or code says that retrying may
// succeed: it names a rate limit, an overload, a server error, an
// unavailable service or a timeout (server_error, rate_limit_exceeded,
// overloaded_error, service_unavailable, ...), or is the status 408, 429
// or 5xx.
func Retryable(typ string) bool {
	if typ == "" {
		return false
	}
	if n, err := strconv.Atoi(typ); err == nil {
		return n == 408 || n == 429 || (n >= 500 && n <= 599)
	}
	t := strings.ToLower(typ)
	for _, s := range []string{"rate_limit", "ratelimit", "overloaded", "server_error", "unavailable", "timeout", "throttl", "internal_error"} {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// BodyError is the error for a response body that is not the shape of
// the API's response: what says whose ("openai response"); a field of the
// wrong type is named by its path in the body.
func BodyError(what string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: %s: a JSON %s where ctxkit reads a %s", what, te.Field, te.Value, jsonKind(te.Type.Kind().String()))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// jsonKind names a Go kind as the JSON value it reads.
func jsonKind(k string) string {
	switch k {
	case "struct", "map":
		return "object"
	case "slice":
		return "array"
	case "int", "int64", "int32", "float64":
		return "number"
	case "bool":
		return "boolean"
	}
	return k
}
