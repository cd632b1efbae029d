package openai

import (
	"bytes"
	"encoding/json"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// chunkParser decodes the events of one stream, each into a streamChunk
// (zeroed, but for an empty Choices whose room may be reused), as
// json.Unmarshal would. Nearly all of a stream's events are chunks of one
// small shape (an id, the model, a choice with a content or tool-call
// delta, null usage); parseFastFrom reads those in one pass, and every
// other event (or any doubt: an unknown key, a key written in another
// case, reasoning_details, an escaped key, an escaped surrogate, invalid
// UTF-8, anything not plain JSON) goes to encoding/json. It keeps the
// prefix the last event shared with its predecessors and skips it in an
// event that starts with it.
type chunkParser struct {
	prefix []byte // a copy: the events' data is lent
}

// maxPrefix bounds the prefix a chunkParser keeps (ids and models are
// short; the prefix of a stream's events is about 200 bytes).
const maxPrefix = 1 << 10

func (p *chunkParser) parse(data []byte, c *streamChunk) error {
	from := 0
	if len(p.prefix) > 0 && bytes.HasPrefix(data, p.prefix) {
		from = len(p.prefix)
	}
	if resume, ok := parseFastFrom(data, c, from); ok {
		if resume != from {
			p.prefix = p.prefix[:0]
			if resume <= maxPrefix {
				p.prefix = append(p.prefix, data[:resume]...)
			}
		}
		return nil
	}
	p.prefix = p.prefix[:0]
	*c = streamChunk{}
	return json.Unmarshal(data, c)
}

// Bounds of the fast path: a chunk with more choices or tool calls than
// these goes to encoding/json.
const (
	fastChoices   = 8
	fastToolCalls = 64
)

// parseFast reads a chunk whose keys are among id, object, created,
// model, service_tier, system_fingerprint, obfuscation, provider (skipped:
// strings without escapes, created an integer), usage (null, or once an
// object of integer counts: see usageField) and choices
// (once). A choice may hold index, delta, logprobs (null), finish_reason
// and native_finish_reason; a delta role, content, refusal,
// reasoning_content, reasoning (strings or null) and tool_calls (once per
// choice), each call index, id, type and function {name, arguments}. It
// reports false, leaving c in any state, for anything else.
func parseFast(data []byte, c *streamChunk) bool {
	_, ok := parseFastFrom(data, c, 0)
	return ok
}

// parseFastFrom is parseFast, resumed at offset from of data when from is
// not 0: data[:from] is then the prefix an earlier call returned as
// resume for another chunk (the caller has checked that data starts with
// it), and is not read again. The events of a stream repeat their id,
// object, created, model and the other keys parseFast skips, byte for
// byte, before "choices": a prefix made only of those leaves the reader in
// one state whatever follows, and resume (not 0 when there is such a
// prefix) is its end, just before the "choices" key.
func parseFastFrom(data []byte, c *streamChunk, from int) (resume int, ok bool) {
	var r *jsonscan.Reader
	if from > 0 {
		r = jsonscan.NewAt(data, from)
	} else {
		r = jsonscan.New(data)
		if !r.Eat('{') {
			return 0, false
		}
		if r.Eat('}') {
			return 0, r.End()
		}
	}
	choices := false
	skipped := true // every member before this one was skipped
	next := r.Pos() // just after the '{' or ',' before the member being read
	ok = r.Members(func(key []byte) bool {
		at := next
		if !member(r, key, c, &choices) {
			return false
		}
		switch string(key) {
		case "choices":
			if skipped {
				resume = at
			}
			skipped = false
		case "id", "object", "model", "service_tier", "system_fingerprint", "obfuscation", "provider", "created":
		default:
			skipped = false
		}
		r.Space()
		next = r.Pos() + 1 // past the ',' that follows, if one does
		return true
	}) && r.End()
	if !ok {
		return 0, false
	}
	return resume, true
}

// member reads the value of a chunk's key.
func member(r *jsonscan.Reader, key []byte, c *streamChunk, choices *bool) bool {
	switch string(key) {
	case "id", "object", "model", "service_tier", "system_fingerprint", "obfuscation", "provider":
		_, ok := r.RawString()
		return ok
	case "created":
		_, ok := r.Int()
		return ok
	case "usage":
		if r.Literal("null") {
			c.Usage = nil
			return true
		}
		if c.Usage != nil {
			return false // a second usage object merges into the first: rare, left to encoding/json
		}
		b := &usageBlock{}
		c.Usage = &b.u
		return r.Object(func(key []byte) bool { return usageField(r, key, b) })
	case "choices":
		if *choices {
			return false // a second array replaces the first: rare, left to encoding/json
		}
		*choices = true
		c.Choices = c.Choices[:0]
		if c.Choices == nil {
			c.Choices = make([]streamChoice, 0, 1)
		}
		return r.Array(fastChoices, func() bool {
			c.Choices = append(c.Choices, streamChoice{})
			return choice(r, &c.Choices[len(c.Choices)-1])
		})
	}
	return false
}

func choice(r *jsonscan.Reader, ch *streamChoice) bool {
	tools := false
	return r.Object(func(key []byte) bool {
		switch string(key) {
		case "index":
			v, ok := r.Int()
			ch.Index = int(v)
			return ok && v >= 0 && v < 1e9
		case "delta":
			return r.Object(func(key []byte) bool {
				if string(key) == "tool_calls" {
					if tools {
						return false
					}
					tools = true
					return toolCalls(r, &ch.Delta.ToolCalls)
				}
				return deltaField(r, key, &ch.Delta)
			})
		case "logprobs":
			return r.Literal("null")
		case "finish_reason":
			return r.NullableString(&ch.FinishReason)
		case "native_finish_reason":
			var s string
			return r.NullableString(&s)
		}
		return false
	})
}

func deltaField(r *jsonscan.Reader, key []byte, d *streamDelta) bool {
	switch string(key) {
	case "role":
		var s string
		return r.NullableString(&s)
	case "content":
		return r.NullableString(&d.Content)
	case "refusal":
		return r.NullableString(&d.Refusal)
	case "reasoning_content":
		return r.NullableString(&d.ReasoningContent)
	case "reasoning":
		return r.NullableString(&d.Reasoning)
	}
	return false
}

func toolCalls(r *jsonscan.Reader, dst *[]toolCallDelta) bool {
	*dst = make([]toolCallDelta, 0, 1)
	return r.Array(fastToolCalls, func() bool {
		*dst = append(*dst, toolCallDelta{})
		tc := &(*dst)[len(*dst)-1]
		return r.Object(func(key []byte) bool {
			switch string(key) {
			case "index":
				v, ok := r.Int()
				n := int(v)
				tc.Index = &n
				return ok && v >= 0 && v < 1e9
			case "id":
				return r.NullableString(&tc.ID)
			case "type":
				var s string
				return r.NullableString(&s)
			case "function":
				return r.Object(func(key []byte) bool {
					switch string(key) {
					case "name":
						return r.NullableString(&tc.Function.Name)
					case "arguments":
						return r.NullableString(&tc.Function.Arguments)
					}
					return false
				})
			}
			return false
		})
	})
}

// usageBlock is a usage object and the objects and counts it points to:
// one allocation for all.
type usageBlock struct {
	u          oaicompat.Usage
	prompt     oaicompat.PromptTokensDetails
	completion oaicompat.CompletionTokensDetails
	n          [3]int64 // cached_tokens, prompt_cache_hit_tokens, prompt_cache_miss_tokens
}

// usageField reads a key of a usage object: prompt_tokens,
// completion_tokens, total_tokens, prompt_cache_hit_tokens and
// prompt_cache_miss_tokens (integers or null), prompt_tokens_details
// {cached_tokens, cache_write_tokens, audio_tokens} and
// completion_tokens_details {reasoning_tokens, audio_tokens,
// accepted_prediction_tokens, rejected_prediction_tokens} (null, or
// objects of integers or null). Anything else (OpenRouter's cost, a
// float) is left to encoding/json.
func usageField(r *jsonscan.Reader, key []byte, b *usageBlock) bool {
	u := &b.u
	switch string(key) {
	case "prompt_tokens":
		return r.NullableInt(&u.PromptTokens)
	case "completion_tokens":
		return r.NullableInt(&u.CompletionTokens)
	case "total_tokens":
		return r.NullableInt(&u.TotalTokens)
	case "prompt_cache_hit_tokens":
		return r.IntRef(&u.PromptCacheHitTokens, &b.n[1])
	case "prompt_cache_miss_tokens":
		return r.IntRef(&u.PromptCacheMissTokens, &b.n[2])
	case "prompt_tokens_details":
		if r.Literal("null") {
			u.PromptTokensDetails = nil
			return true
		}
		if u.PromptTokensDetails == nil {
			b.prompt = oaicompat.PromptTokensDetails{}
			u.PromptTokensDetails = &b.prompt
		}
		d := u.PromptTokensDetails
		return r.Object(func(key []byte) bool {
			switch string(key) {
			case "cached_tokens":
				return r.IntRef(&d.CachedTokens, &b.n[0])
			case "cache_write_tokens":
				return r.NullableInt(&d.CacheWriteTokens)
			case "audio_tokens":
				var n int64
				return r.NullableInt(&n)
			}
			return false
		})
	case "completion_tokens_details":
		if r.Literal("null") {
			u.CompletionTokensDetails = nil
			return true
		}
		if u.CompletionTokensDetails == nil {
			b.completion = oaicompat.CompletionTokensDetails{}
			u.CompletionTokensDetails = &b.completion
		}
		d := u.CompletionTokensDetails
		return r.Object(func(key []byte) bool {
			switch string(key) {
			case "reasoning_tokens":
				return r.NullableInt(&d.ReasoningTokens)
			case "audio_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens":
				var n int64
				return r.NullableInt(&n)
			}
			return false
		})
	}
	return false
}

// parseResponse decodes body, a non-streamed response, into r (zeroed)
// as json.Unmarshal would: a plain chat.completion (see
// parseResponseFast) in one pass, anything else by encoding/json.
func parseResponse(body []byte, r *unaryResponse) error {
	if parseResponseFast(body, r) {
		return nil
	}
	*r = unaryResponse{}
	return json.Unmarshal(body, r)
}

// parseResponseFast reads a chat.completion whose keys are those of a
// stream chunk parseFast reads (choices once, usage once), each choice's
// message read as a delta, with annotations (only []) beside its fields.
// It reports false, leaving r in any state, for anything else.
func parseResponseFast(body []byte, resp *unaryResponse) bool {
	r := jsonscan.New(body)
	choices := false
	return r.Object(func(key []byte) bool {
		switch string(key) {
		case "id", "object", "model", "service_tier", "system_fingerprint", "provider":
			_, ok := r.RawString()
			return ok
		case "created":
			_, ok := r.Int()
			return ok
		case "usage":
			if r.Literal("null") {
				resp.Usage = nil
				return true
			}
			if resp.Usage != nil {
				return false
			}
			b := &usageBlock{}
			resp.Usage = &b.u
			return r.Object(func(key []byte) bool { return usageField(r, key, b) })
		case "choices":
			if choices {
				return false
			}
			choices = true
			if r.Literal("null") {
				resp.Choices = nil
				return true
			}
			resp.Choices = make([]unaryChoice, 0, 1)
			return r.Array(fastChoices, func() bool {
				resp.Choices = append(resp.Choices, unaryChoice{})
				return unaryChoiceFast(r, &resp.Choices[len(resp.Choices)-1])
			})
		}
		return false
	}) && r.End()
}

func unaryChoiceFast(r *jsonscan.Reader, ch *unaryChoice) bool {
	message := false
	return r.Object(func(key []byte) bool {
		switch string(key) {
		case "index":
			v, ok := r.Int()
			ch.Index = int(v)
			return ok && v >= 0 && v < 1e9
		case "message":
			if message {
				return false
			}
			message = true
			tools := false
			return r.Object(func(key []byte) bool {
				switch string(key) {
				case "tool_calls":
					if tools {
						return false
					}
					tools = true
					return toolCalls(r, &ch.Message.ToolCalls)
				case "annotations":
					return r.Eat('[') && r.Eat(']')
				}
				return deltaField(r, key, &ch.Message)
			})
		case "logprobs":
			return r.Literal("null")
		case "finish_reason":
			return r.NullableString(&ch.FinishReason)
		}
		return false
	})
}
