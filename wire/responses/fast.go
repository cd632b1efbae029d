package responses

import (
	"encoding/json"
	"math"
)

// parseEvent decodes data, an event's JSON, into ev (zeroed first), as
// json.Unmarshal would. scanEvent reads every event the API sends in one
// pass; any doubt (see scanner) goes to encoding/json, which also names
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
func parseEvent(data []byte, ev *wireEvent, index *int, intern func([]byte) (string, bool), streamed func(*wireEvent) bool) error {
	*ev = wireEvent{}
	if scanEvent(data, ev, index, intern, streamed) {
		return nil
	}
	*ev = wireEvent{}
	return json.Unmarshal(data, ev)
}

// The keys of the wire shapes, for the scanner's check of keys that
// differ from them only in case.
var (
	eventKeys = []string{"type", "output_index", "item_id", "item", "delta", "text", "refusal", "arguments",
		"summary_index", "response", "code", "message", "error"}
	itemKeys     = []string{"type", "id", "call_id", "name", "arguments", "summary", "content", "encrypted_content", "status"}
	wireTextKeys = []string{"type", "text", "refusal"}
	responseKeys = []string{"status", "error", "incomplete_details", "usage"}
	usageKeys    = []string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
)

// scanEvent reads data into ev (zero) in one pass, or reports false,
// leaving ev in any state. intern and streamed are parseEvent's.
func scanEvent(data []byte, ev *wireEvent, index *int, intern func([]byte) (string, bool), streamed func(*wireEvent) bool) bool {
	s := scanner{b: data}
	var set uint32
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return seen(&set, 1<<0) && s.str(&ev.Type, internType)
		case "output_index":
			if !seen(&set, 1<<1) {
				return false
			}
			if s.null() {
				ev.OutputIndex = nil
				return true
			}
			var v int64
			if !s.integer(&v, 0, 1e9) {
				return false
			}
			*index = int(v)
			ev.OutputIndex = index
			return true
		case "item_id":
			return seen(&set, 1<<2) && s.str(&ev.ItemID, intern)
		case "item":
			if !seen(&set, 1<<3) {
				return false
			}
			if s.null() {
				ev.Item = nil
				return true
			}
			ev.Item = &wireItem{}
			return scanItem(&s, ev.Item, intern, streamed != nil && streamed(ev))
		case "delta":
			return seen(&set, 1<<4) && s.str(&ev.Delta, nil)
		case "text":
			if streamed != nil && streamed(ev) {
				return seen(&set, 1<<5) && s.skip()
			}
			return seen(&set, 1<<5) && s.str(&ev.Text, nil)
		case "refusal":
			return seen(&set, 1<<6) && s.str(&ev.Refusal, nil)
		case "arguments":
			return seen(&set, 1<<7) && s.str(&ev.Arguments, nil)
		case "summary_index":
			v := int64(ev.SummaryIndex)
			ok := seen(&set, 1<<8) && s.integer(&v, 0, 1e9)
			ev.SummaryIndex = int(v)
			return ok
		case "response":
			if !seen(&set, 1<<9) {
				return false
			}
			if s.null() {
				ev.Response = nil
				return true
			}
			ev.Response = &wireResponse{}
			return scanResponse(&s, ev.Response, nil)
		case "code":
			return seen(&set, 1<<10) && s.raw((*[]byte)(&ev.Code))
		case "message":
			return seen(&set, 1<<11) && s.str(&ev.Message, nil)
		case "error":
			return seen(&set, 1<<12) && s.raw((*[]byte)(&ev.Error))
		case "sequence_number", "content_index", "logprobs", "obfuscation", "part":
			// Not fields, nor any field's name in another case: skipped
			// without looking further.
			return s.skip()
		}
		return s.unknown(key, eventKeys)
	}) && s.end()
}

// scanItem reads an output item; intern is as scanEvent's, for its id.
// With streamed, its summary and content are checked but not read.
func scanItem(s *scanner, it *wireItem, intern func([]byte) (string, bool), streamed bool) bool {
	var set uint32
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return seen(&set, 1<<0) && s.str(&it.Type, internType)
		case "id":
			return seen(&set, 1<<1) && s.str(&it.ID, intern)
		case "call_id":
			return seen(&set, 1<<2) && s.str(&it.CallID, nil)
		case "name":
			return seen(&set, 1<<3) && s.str(&it.Name, nil)
		case "arguments":
			return seen(&set, 1<<4) && s.str(&it.Arguments, nil)
		case "summary":
			if streamed {
				return seen(&set, 1<<5) && s.skip()
			}
			return seen(&set, 1<<5) && scanTexts(s, &it.Summary)
		case "content":
			if streamed {
				return seen(&set, 1<<6) && s.skip()
			}
			return seen(&set, 1<<6) && scanTexts(s, &it.Content)
		case "encrypted_content":
			return seen(&set, 1<<7) && s.str(&it.EncryptedContent, nil)
		case "status":
			return seen(&set, 1<<8) && s.str(&it.Status, internType)
		}
		return s.unknown(key, itemKeys)
	})
}

// fastTexts bounds the parts of an item the scanner reads; more are
// encoding/json's.
const fastTexts = 64

func scanTexts(s *scanner, dst *[]wireText) bool {
	if s.null() {
		*dst = nil
		return true
	}
	*dst = []wireText{}
	return s.array(fastTexts, func() bool {
		*dst = append(*dst, wireText{})
		t := &(*dst)[len(*dst)-1]
		var set uint32
		return s.object(func(key []byte) bool {
			switch string(key) {
			case "type":
				return seen(&set, 1<<0) && s.str(&t.Type, internType)
			case "text":
				return seen(&set, 1<<1) && s.str(&t.Text, nil)
			case "refusal":
				return seen(&set, 1<<2) && s.str(&t.Refusal, nil)
			}
			return s.unknown(key, wireTextKeys)
		})
	})
}

// scanResponse reads a Response object: the status, error, incomplete
// details and usage into r, and, when items is not nil, the output items
// into *items (at most MaxItems); the rest is skipped.
func scanResponse(s *scanner, r *wireResponse, items *[]wireItem) bool {
	var set uint32
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "status":
			return seen(&set, 1<<0) && s.str(&r.Status, internType)
		case "error":
			return seen(&set, 1<<1) && s.raw((*[]byte)(&r.Error))
		case "incomplete_details":
			if !seen(&set, 1<<2) {
				return false
			}
			if s.null() {
				r.IncompleteDetails = nil
				return true
			}
			r.IncompleteDetails = &struct {
				Reason string `json:"reason"`
			}{}
			var inner uint32
			return s.object(func(key []byte) bool {
				if string(key) == "reason" {
					return seen(&inner, 1) && s.str(&r.IncompleteDetails.Reason, internType)
				}
				return s.unknown(key, []string{"reason"})
			})
		case "usage":
			if !seen(&set, 1<<3) {
				return false
			}
			if s.null() {
				r.Usage = nil
				return true
			}
			r.Usage = &wireUsage{}
			return scanUsage(s, r.Usage)
		case "output":
			if items == nil {
				break
			}
			if !seen(&set, 1<<4) {
				return false
			}
			if s.null() {
				*items = nil
				return true
			}
			*items = []wireItem{}
			return s.array(MaxItems, func() bool {
				*items = append(*items, wireItem{})
				return scanItem(s, &(*items)[len(*items)-1], nil, false)
			})
		case "id", "object", "created_at", "model", "instructions", "tools", "text", "reasoning", "metadata":
			return s.skip()
		}
		if items != nil {
			return s.unknown(key, bodyKeys)
		}
		return s.unknown(key, responseKeys)
	})
}

var bodyKeys = append([]string{"output"}, responseKeys...)

func scanUsage(s *scanner, u *wireUsage) bool {
	var set uint32
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "input_tokens":
			return seen(&set, 1<<0) && s.integer(&u.InputTokens, math.MinInt64, math.MaxInt64)
		case "output_tokens":
			return seen(&set, 1<<1) && s.integer(&u.OutputTokens, math.MinInt64, math.MaxInt64)
		case "input_tokens_details":
			if !seen(&set, 1<<2) {
				return false
			}
			if s.null() {
				u.InputTokensDetails = nil
				return true
			}
			d := &struct {
				CachedTokens     int64 `json:"cached_tokens"`
				CacheWriteTokens int64 `json:"cache_write_tokens"`
			}{}
			u.InputTokensDetails = d
			var inner uint32
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "cached_tokens":
					return seen(&inner, 1<<0) && s.integer(&d.CachedTokens, math.MinInt64, math.MaxInt64)
				case "cache_write_tokens":
					return seen(&inner, 1<<1) && s.integer(&d.CacheWriteTokens, math.MinInt64, math.MaxInt64)
				}
				return s.unknown(key, []string{"cached_tokens", "cache_write_tokens"})
			})
		case "output_tokens_details":
			if !seen(&set, 1<<3) {
				return false
			}
			if s.null() {
				u.OutputTokensDetails = nil
				return true
			}
			d := &struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			}{}
			u.OutputTokensDetails = d
			var inner uint32
			return s.object(func(key []byte) bool {
				if string(key) == "reasoning_tokens" {
					return seen(&inner, 1) && s.integer(&d.ReasoningTokens, math.MinInt64, math.MaxInt64)
				}
				return s.unknown(key, []string{"reasoning_tokens"})
			})
		}
		return s.unknown(key, usageKeys)
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
