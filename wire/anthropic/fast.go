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
// small shape; parseFast reads those in one pass, and every other event
// (or any doubt: an unknown key, an escaped surrogate, invalid UTF-8,
// anything not plain JSON) goes to encoding/json.
func parseEvent(data []byte, e *event) error {
	if parseFast(data, e) {
		return nil
	}
	*e = event{}
	return json.Unmarshal(data, e)
}

// parseFast reads an event made of only "type", "index" and a "delta"
// whose keys are among type, text, thinking, signature, partial_json and
// stop_reason, with string values (stop_reason: string or null) and a
// non-negative integer index below 10⁹ (jsonscan reads the values). It
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
		}
		return false
	}) && r.End()
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
