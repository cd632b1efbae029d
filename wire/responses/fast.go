package responses

import (
	"encoding/json"
	"math"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// The fast path reads the JSON of an upstream event or Response object in
// one pass with jsonscan, as encoding/json would decode it into the wire
// shapes of this package, and gives up (false) at anything it does not
// handle exactly like encoding/json: a key written in another case
// (encoding/json matches keys without regard to case), a key with an
// escape or a byte past ASCII, a key given twice, a number that is not a
// plain integer in an integer field, invalid UTF-8 in a string it
// decodes, an escaped surrogate, nesting deeper than maxDepth, and any
// invalid JSON. Its caller then decodes the document with encoding/json,
// which names the fault or handles the rare case.
//
// What the decoder does not read — the deltas' logprobs and obfuscation,
// the parts of content_part events, the response objects' echo of the
// request and their output — is skipped, but checked to be valid JSON on
// the way: an event the API could not have sent is still an error, as it
// is with encoding/json.

// maxDepth bounds the nesting the fast path skips; deeper documents are
// encoding/json's to read (it refuses past 10000).
const maxDepth = 128

// parseEvent decodes data, an event's JSON, into ev (zeroed first), as
// json.Unmarshal would. scanEvent reads every event the API sends in one
// pass; any doubt (see above) goes to encoding/json, which also names
// the fault of data that is not valid JSON. index is where ev's output
// index is kept (ev.OutputIndex points to it), and intern gives the
// strings of the item ids the decoder holds already, so that most events
// allocate nothing but the text they carry.
//
// streamed, when not nil, reports whether the text an event repeats (the
// text of a done event, the content and summary of a done item) is known
// to be of no use to the decoder, asked once the event's type and output
// index are read: that text is then checked but not decoded, and left
// empty.
func parseEvent(data []byte, ev *wireEvent, index *int, room *eventRoom, intern func([]byte) (string, bool), streamed func(*wireEvent) bool) error {
	*ev = wireEvent{}
	if scanEvent(data, ev, index, room, intern, streamed) {
		return nil
	}
	*ev = wireEvent{}
	return json.Unmarshal(data, ev)
}

// The keys of the wire shapes, for the check of keys that
// differ from them only in case.
var (
	eventKeys = []string{"type", "output_index", "item_id", "item", "delta", "text", "refusal", "arguments",
		"summary_index", "response", "code", "message", "error"}
	itemKeys     = []string{"type", "id", "call_id", "name", "arguments", "summary", "content", "encrypted_content", "status"}
	wireTextKeys = []string{"type", "text", "refusal"}
	responseKeys = []string{"status", "error", "incomplete_details", "usage"}
	usageKeys    = []string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
)

// eventRoom is where scanEvent puts an event's item, response and usage
// rather than allocate them: a decoder reads one event at a time and
// keeps none of them past it.
type eventRoom struct {
	item  wireItem
	resp  wireResponse
	usage wireUsage
}

// scanEvent reads data into ev (zero) in one pass, or reports false,
// leaving ev in any state. room, when not nil, holds what ev points to
// (until the next event read with it); intern and streamed are
// parseEvent's.
func scanEvent(data []byte, ev *wireEvent, index *int, room *eventRoom, intern func([]byte) (string, bool), streamed func(*wireEvent) bool) bool {
	s := jsonscan.New(data)
	var set uint32
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return seen(&set, 1<<0) && str(s, &ev.Type, internType)
		case "output_index":
			if !seen(&set, 1<<1) {
				return false
			}
			if s.Literal("null") {
				ev.OutputIndex = nil
				return true
			}
			var v int64
			if !integer(s, &v, 0, 1e9) {
				return false
			}
			*index = int(v)
			ev.OutputIndex = index
			return true
		case "item_id":
			return seen(&set, 1<<2) && str(s, &ev.ItemID, intern)
		case "item":
			if !seen(&set, 1<<3) {
				return false
			}
			if s.Literal("null") {
				ev.Item = nil
				return true
			}
			if room != nil {
				room.item = wireItem{}
				ev.Item = &room.item
			} else {
				ev.Item = &wireItem{}
			}
			return scanItem(s, ev.Item, intern, streamed != nil && streamed(ev))
		case "delta":
			return seen(&set, 1<<4) && str(s, &ev.Delta, nil)
		case "text":
			if streamed != nil && streamed(ev) {
				return seen(&set, 1<<5) && s.Skip(maxDepth)
			}
			return seen(&set, 1<<5) && str(s, &ev.Text, nil)
		case "refusal":
			return seen(&set, 1<<6) && str(s, &ev.Refusal, nil)
		case "arguments":
			return seen(&set, 1<<7) && str(s, &ev.Arguments, nil)
		case "summary_index":
			v := int64(ev.SummaryIndex)
			ok := seen(&set, 1<<8) && integer(s, &v, 0, 1e9)
			ev.SummaryIndex = int(v)
			return ok
		case "response":
			if !seen(&set, 1<<9) {
				return false
			}
			if s.Literal("null") {
				ev.Response = nil
				return true
			}
			var u *wireUsage
			if room != nil {
				room.resp, room.usage = wireResponse{}, wireUsage{}
				ev.Response, u = &room.resp, &room.usage
			} else {
				ev.Response = &wireResponse{}
			}
			return scanResponse(s, ev.Response, nil, u)
		case "code":
			return seen(&set, 1<<10) && raw(s, (*[]byte)(&ev.Code))
		case "message":
			return seen(&set, 1<<11) && str(s, &ev.Message, nil)
		case "error":
			return seen(&set, 1<<12) && raw(s, (*[]byte)(&ev.Error))
		case "sequence_number", "content_index", "logprobs", "obfuscation", "part":
			// Not fields, nor any field's name in another case: skipped
			// without looking further.
			return s.Skip(maxDepth)
		}
		return s.SkipUnknown(key, maxDepth, eventKeys...)
	}) && s.End()
}

// scanItem reads an output item; intern is as scanEvent's, for its id.
// With streamed, its summary and content are checked but not read.
func scanItem(s *jsonscan.Reader, it *wireItem, intern func([]byte) (string, bool), streamed bool) bool {
	var set uint32
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return seen(&set, 1<<0) && str(s, &it.Type, internType)
		case "id":
			return seen(&set, 1<<1) && str(s, &it.ID, intern)
		case "call_id":
			return seen(&set, 1<<2) && str(s, &it.CallID, nil)
		case "name":
			return seen(&set, 1<<3) && str(s, &it.Name, nil)
		case "arguments":
			return seen(&set, 1<<4) && str(s, &it.Arguments, nil)
		case "summary":
			if streamed {
				return seen(&set, 1<<5) && s.Skip(maxDepth)
			}
			return seen(&set, 1<<5) && scanTexts(s, &it.Summary)
		case "content":
			if streamed {
				return seen(&set, 1<<6) && s.Skip(maxDepth)
			}
			return seen(&set, 1<<6) && scanTexts(s, &it.Content)
		case "encrypted_content":
			return seen(&set, 1<<7) && str(s, &it.EncryptedContent, nil)
		case "status":
			return seen(&set, 1<<8) && str(s, &it.Status, internType)
		}
		return s.SkipUnknown(key, maxDepth, itemKeys...)
	})
}

// fastTexts bounds the parts of an item the fast path reads; more are
// encoding/json's.
const fastTexts = 64

func scanTexts(s *jsonscan.Reader, dst *[]wireText) bool {
	if s.Literal("null") {
		*dst = nil
		return true
	}
	*dst = []wireText{}
	return s.Array(fastTexts, func() bool {
		*dst = append(*dst, wireText{})
		t := &(*dst)[len(*dst)-1]
		var set uint32
		return s.Object(func(key []byte) bool {
			switch string(key) {
			case "type":
				return seen(&set, 1<<0) && str(s, &t.Type, internType)
			case "text":
				return seen(&set, 1<<1) && str(s, &t.Text, nil)
			case "refusal":
				return seen(&set, 1<<2) && str(s, &t.Refusal, nil)
			}
			return s.SkipUnknown(key, maxDepth, wireTextKeys...)
		})
	})
}

// scanResponse reads a Response object: the status, error, incomplete
// details and usage into r (the usage into u when it is not nil), and,
// when items is not nil, the output items into *items (at most
// MaxItems); the rest is skipped.
func scanResponse(s *jsonscan.Reader, r *wireResponse, items *[]wireItem, u *wireUsage) bool {
	var set uint32
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "status":
			return seen(&set, 1<<0) && str(s, &r.Status, internType)
		case "error":
			return seen(&set, 1<<1) && raw(s, (*[]byte)(&r.Error))
		case "incomplete_details":
			if !seen(&set, 1<<2) {
				return false
			}
			if s.Literal("null") {
				r.IncompleteDetails = nil
				return true
			}
			r.IncompleteDetails = &struct {
				Reason string `json:"reason"`
			}{}
			var inner uint32
			return s.Object(func(key []byte) bool {
				if string(key) == "reason" {
					return seen(&inner, 1) && str(s, &r.IncompleteDetails.Reason, internType)
				}
				return s.SkipUnknown(key, maxDepth, "reason")
			})
		case "usage":
			if !seen(&set, 1<<3) {
				return false
			}
			if s.Literal("null") {
				r.Usage = nil
				return true
			}
			if u == nil {
				u = &wireUsage{}
			}
			r.Usage = u
			return scanUsage(s, r.Usage)
		case "output":
			if items == nil {
				break
			}
			if !seen(&set, 1<<4) {
				return false
			}
			if s.Literal("null") {
				*items = nil
				return true
			}
			*items = []wireItem{}
			return s.Array(MaxItems, func() bool {
				*items = append(*items, wireItem{})
				return scanItem(s, &(*items)[len(*items)-1], nil, false)
			})
		case "id", "object", "created_at", "model", "instructions", "tools", "text", "reasoning", "metadata":
			return s.Skip(maxDepth)
		}
		if items != nil {
			return s.SkipUnknown(key, maxDepth, bodyKeys...)
		}
		return s.SkipUnknown(key, maxDepth, responseKeys...)
	})
}

var bodyKeys = append([]string{"output"}, responseKeys...)

func scanUsage(s *jsonscan.Reader, u *wireUsage) bool {
	var set uint32
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "input_tokens":
			return seen(&set, 1<<0) && integer(s, &u.InputTokens, math.MinInt64, math.MaxInt64)
		case "output_tokens":
			return seen(&set, 1<<1) && integer(s, &u.OutputTokens, math.MinInt64, math.MaxInt64)
		case "input_tokens_details":
			if !seen(&set, 1<<2) {
				return false
			}
			if s.Literal("null") {
				u.InputTokensDetails = nil
				return true
			}
			d := &struct {
				CachedTokens     int64 `json:"cached_tokens"`
				CacheWriteTokens int64 `json:"cache_write_tokens"`
			}{}
			u.InputTokensDetails = d
			var inner uint32
			return s.Object(func(key []byte) bool {
				switch string(key) {
				case "cached_tokens":
					return seen(&inner, 1<<0) && integer(s, &d.CachedTokens, math.MinInt64, math.MaxInt64)
				case "cache_write_tokens":
					return seen(&inner, 1<<1) && integer(s, &d.CacheWriteTokens, math.MinInt64, math.MaxInt64)
				}
				return s.SkipUnknown(key, maxDepth, "cached_tokens", "cache_write_tokens")
			})
		case "output_tokens_details":
			if !seen(&set, 1<<3) {
				return false
			}
			if s.Literal("null") {
				u.OutputTokensDetails = nil
				return true
			}
			d := &struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			}{}
			u.OutputTokensDetails = d
			var inner uint32
			return s.Object(func(key []byte) bool {
				if string(key) == "reasoning_tokens" {
					return seen(&inner, 1) && integer(s, &d.ReasoningTokens, math.MinInt64, math.MaxInt64)
				}
				return s.SkipUnknown(key, maxDepth, "reasoning_tokens")
			})
		}
		return s.SkipUnknown(key, maxDepth, usageKeys...)
	})
}

// internType is the string of a type or status the API sends, shared
// rather than allocated for each event.
func internType(b []byte) (string, bool) {
	switch string(b) {
	case "response.output_text.delta":
		return "response.output_text.delta", true
	case "response.reasoning_summary_text.delta":
		return "response.reasoning_summary_text.delta", true
	case "response.function_call_arguments.delta":
		return "response.function_call_arguments.delta", true
	case "response.reasoning_text.delta":
		return "response.reasoning_text.delta", true
	case "response.refusal.delta":
		return "response.refusal.delta", true
	case "response.created":
		return "response.created", true
	case "response.in_progress":
		return "response.in_progress", true
	case "response.output_item.added":
		return "response.output_item.added", true
	case "response.output_item.done":
		return "response.output_item.done", true
	case "response.content_part.added":
		return "response.content_part.added", true
	case "response.content_part.done":
		return "response.content_part.done", true
	case "response.output_text.done":
		return "response.output_text.done", true
	case "response.reasoning_summary_part.added":
		return "response.reasoning_summary_part.added", true
	case "response.reasoning_summary_part.done":
		return "response.reasoning_summary_part.done", true
	case "response.reasoning_summary_text.done":
		return "response.reasoning_summary_text.done", true
	case "response.function_call_arguments.done":
		return "response.function_call_arguments.done", true
	case "response.completed":
		return "response.completed", true
	case "response.incomplete":
		return "response.incomplete", true
	case "response.failed":
		return "response.failed", true
	case "message":
		return "message", true
	case "reasoning":
		return "reasoning", true
	case "function_call":
		return "function_call", true
	case "output_text":
		return "output_text", true
	case "summary_text":
		return "summary_text", true
	case "in_progress":
		return "in_progress", true
	case "completed":
		return "completed", true
	case "incomplete":
		return "incomplete", true
	case "max_output_tokens":
		return "max_output_tokens", true
	}
	return "", false
}

// str reads a string (or a null, which leaves *dst as it is, as
// encoding/json does) into *dst. known, when not nil, may give the string
// of the bytes of a string without escapes that is kept already.
func str(s *jsonscan.Reader, dst *string, known func([]byte) (string, bool)) bool {
	if s.Literal("null") {
		return true
	}
	v, ok := s.StringKnown(math.MaxInt, known)
	if ok {
		*dst = v
	}
	return ok
}

// integer reads an integer written as -?(0|[1-9][0-9]*) within [lo, hi]
// into *dst; a null leaves *dst as it is.
func integer(s *jsonscan.Reader, dst *int64, lo, hi int64) bool {
	if s.Literal("null") {
		return true
	}
	v, ok := s.Int()
	if !ok || v < lo || v > hi {
		return false
	}
	*dst = v
	return true
}

// raw reads any value as json.RawMessage does: a copy of its text.
func raw(s *jsonscan.Reader, dst *[]byte) bool {
	v, ok := s.Raw(maxDepth)
	if ok {
		*dst = append([]byte(nil), v...)
	}
	return ok
}

// seen marks bit in *set and reports whether it was clear: a key given
// twice is encoding/json's to read (it merges or replaces).
func seen(set *uint32, bit uint32) bool {
	if *set&bit != 0 {
		return false
	}
	*set |= bit
	return true
}
