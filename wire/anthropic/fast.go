package anthropic

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// parseEvent decodes data, an event's JSON, into e (zeroed), as
// json.Unmarshal would. Nearly all of a stream's events are
// content_block_delta, content_block_stop or message_stop events of one
// small shape, and the others (message_start, content_block_start,
// message_delta) few and plain; parseFast reads those in one pass, and
// every other event (or any doubt: an unknown key, an escaped surrogate,
// invalid UTF-8, anything not plain JSON) goes to encoding/json.
func parseEvent(data []byte, e *event) error {
	if parseFast(data, e) {
		return nil
	}
	*e = event{}
	return json.Unmarshal(data, e)
}

// parseFast reads an event made of only "type", "index", a "delta" whose
// keys are among type, text, thinking, signature, partial_json,
// stop_reason and stop_sequence, a "usage" (see usageField), a
// "content_block" whose keys are among type, text, thinking, signature,
// data, id, name (strings) and input (only {}), and a "message" whose
// keys are among id, type, role, model (strings), content (only []),
// stop_reason, stop_sequence (strings or null) and usage; strings are
// read by jsonscan, the index is a non-negative integer below 10⁹. It
// reports false, leaving e in any state, for anything else.
func parseFast(data []byte, e *event) bool {
	r := jsonscan.New(data)
	return r.Object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return kindField(r, &e.Type)
		case "index":
			v, ok := r.Int()
			e.Index = int(v)
			return ok && v >= 0 && v < 1e9
		case "delta":
			return r.Object(func(key []byte) bool { return deltaField(r, key, &e.Delta) })
		case "usage":
			return usageValue(r, &e.Usage)
		case "content_block":
			if r.Literal("null") {
				e.ContentBlock = nil
				return true
			}
			if e.ContentBlock == nil {
				e.ContentBlock = &startBlock{}
			}
			b := e.ContentBlock
			return r.Object(func(key []byte) bool { return blockField(r, key, b) })
		case "message":
			if r.Literal("null") {
				e.Message = nil
				return true
			}
			if e.Message == nil {
				e.Message = &message{}
			}
			m := e.Message
			return r.Object(func(key []byte) bool { return messageField(r, key, m) })
		}
		return false
	}) && r.End()
}

// blockField reads a key of content_block_start's content_block.
func blockField(r *jsonscan.Reader, key []byte, b *startBlock) bool {
	switch string(key) {
	case "type":
		return kindField(r, &b.Type)
	case "text":
		return r.NullableString(&b.Text)
	case "thinking":
		return r.NullableString(&b.Thinking)
	case "signature":
		return r.NullableString(&b.Signature)
	case "data":
		return r.NullableString(&b.Data)
	case "id":
		return r.NullableString(&b.ID)
	case "name":
		return r.NullableString(&b.Name)
	case "input":
		// The API's input of a tool_use block's start is {}; any other
		// (even "{ }") is left to encoding/json, which keeps it as written.
		if !r.Literal("{}") {
			return false
		}
		b.Input = json.RawMessage(emptyObject[:2:2])
		return true
	}
	return false
}

// emptyObject is the input of a tool_use block's start; the capacity
// bound makes any append copy it.
var emptyObject = []byte("{}")

// messageField reads a key of message_start's message.
func messageField(r *jsonscan.Reader, key []byte, m *message) bool {
	switch string(key) {
	case "id", "type", "role", "model":
		_, ok := r.RawString()
		return ok
	case "content":
		return r.Eat('[') && r.Eat(']')
	case "stop_reason", "stop_sequence":
		return skipNullableString(r)
	case "usage":
		return usageValue(r, &m.Usage)
	}
	return false
}

// usageValue reads a usage object, or null, into *dst as encoding/json
// does: into the object *dst points to, if any (a key given twice). Its
// keys are among input_tokens, output_tokens, cache_creation_input_tokens
// and cache_read_input_tokens (integers or null), service_tier and
// inference_geo (strings or null), and cache_creation, server_tool_use and
// output_tokens_details (null, or objects of integers), which the decoder
// does not use.
func usageValue(r *jsonscan.Reader, dst **usage) bool {
	if r.Literal("null") {
		*dst = nil
		return true
	}
	if *dst == nil {
		// The counts live beside the object: one allocation for all.
		b := &usageBlock{}
		b.u = usage{}
		*dst = &b.u
		return r.Object(func(key []byte) bool { return usageField(r, key, &b.u, &b.n) })
	}
	// A usage given twice: the counts its first object set keep their
	// place; one it left nil gets one of its own.
	var n [4]int64
	u := *dst
	return r.Object(func(key []byte) bool { return usageField(r, key, u, &n) })
}

// usageBlock is a usage object and room for its counts.
type usageBlock struct {
	u usage
	n [4]int64
}

func usageField(r *jsonscan.Reader, key []byte, u *usage, n *[4]int64) bool {
	switch string(key) {
	case "input_tokens":
		return r.IntRef(&u.InputTokens, &n[0])
	case "output_tokens":
		return r.IntRef(&u.OutputTokens, &n[1])
	case "cache_creation_input_tokens":
		return r.IntRef(&u.CacheCreationInputTokens, &n[2])
	case "cache_read_input_tokens":
		return r.IntRef(&u.CacheReadInputTokens, &n[3])
	case "service_tier", "inference_geo":
		return skipNullableString(r)
	case "cache_creation", "server_tool_use", "output_tokens_details":
		if r.Literal("null") {
			return true
		}
		return r.Object(func([]byte) bool { _, ok := r.Int(); return ok })
	}
	return false
}

// skipNullableString reads a string or null that the decoder does not
// use.
func skipNullableString(r *jsonscan.Reader) bool {
	if r.Literal("null") {
		return true
	}
	_, ok := r.RawString()
	return ok
}

// kindField reads a type name.
func kindField(r *jsonscan.Reader, dst *kind) bool {
	s, ok := r.RawString()
	if !ok || !utf8.Valid(s) {
		return false
	}
	*dst = kindOf(string(s))
	return true
}

func deltaField(r *jsonscan.Reader, key []byte, d *delta) bool {
	var ok bool
	switch string(key) {
	case "type":
		return kindField(r, &d.Type)
	case "text":
		d.Text, ok = r.String(math.MaxInt)
	case "thinking":
		d.Thinking, ok = r.String(math.MaxInt)
	case "signature":
		d.Signature, ok = r.String(math.MaxInt)
	case "partial_json":
		d.PartialJSON, ok = r.String(math.MaxInt)
	case "stop_sequence":
		return skipNullableString(r)
	case "stop_reason":
		if r.Literal("null") {
			d.StopReason = nil
			return true
		}
		var s string
		if s, ok = r.String(math.MaxInt); ok {
			d.StopReason = &s
		}
	}
	return ok
}

// parseMessage decodes body, a non-streamed response, into m (zeroed) as
// json.Unmarshal would: a plain Message (see parseMessageFast) in one
// pass, anything else (an error object, a tool_use input other than {},
// any doubt) by encoding/json.
func parseMessage(body []byte, m *unaryMessage) error {
	if parseMessageFast(body, m) {
		return nil
	}
	*m = unaryMessage{}
	return json.Unmarshal(body, m)
}

// maxFastBlocks bounds the content blocks the fast path reads; a longer
// content goes to encoding/json (and DecodeResponse's own bound).
const maxFastBlocks = 64

// parseMessageFast reads a Message whose keys are among id, role, model
// (strings), type, content (once: blocks as content_block_start's, see
// blockField), stop_reason (a string or null), stop_sequence (a string or
// null) and usage (see usageValue). It reports false, leaving m in any
// state, for anything else.
func parseMessageFast(body []byte, m *unaryMessage) bool {
	r := jsonscan.New(body)
	content := false
	return r.Object(func(key []byte) bool {
		switch string(key) {
		case "id", "role", "model":
			_, ok := r.RawString()
			return ok
		case "type":
			return kindField(r, &m.Type)
		case "stop_sequence":
			return skipNullableString(r)
		case "stop_reason":
			if r.Literal("null") {
				m.StopReason = nil
				return true
			}
			s, ok := r.String(math.MaxInt)
			if ok {
				m.StopReason = &s
			}
			return ok
		case "usage":
			return usageValue(r, &m.Usage)
		case "content":
			if content {
				return false // a second content array decodes into the first's blocks: left to encoding/json
			}
			content = true
			if r.Literal("null") {
				m.Content = nil
				return true
			}
			m.Content = make([]startBlock, 0, 1)
			return r.Array(maxFastBlocks, func() bool {
				m.Content = append(m.Content, startBlock{})
				b := &m.Content[len(m.Content)-1]
				return r.Object(func(key []byte) bool { return blockField(r, key, b) })
			})
		}
		return false
	}) && r.End()
}
