package bedrock

import (
	"encoding/json"
	"math"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// parseEvent fills ev from an event's JSON payload exactly as
// json.Unmarshal(p, ev) would. Event payloads are small objects of a few
// known fields, and they come one a frame; reading them in one pass with
// jsonscan instead of the reflection of encoding/json keeps a stream's
// decoding close to the cost of the JSON alone. The fast path handles
// the common shapes only; anything else (an escape in a key, a key
// matching a field only without regard to case, an escaped surrogate or
// invalid UTF-8 in a string, a number other than a plain integer, nesting
// deeper than maxDepth, invalid JSON) hands the payload to json.Unmarshal,
// which gives the result or the error.
func parseEvent(p []byte, ev *streamEvent) error {
	*ev = streamEvent{}
	r := jsonscan.New(p)
	if event(r, ev) && r.End() {
		return nil
	}
	*ev = streamEvent{}
	return json.Unmarshal(p, ev)
}

// maxDepth bounds the nesting the fast path skips over itself.
const maxDepth = 32

// event reads an event's payload into ev. Like every reader here it
// reports false when it cannot read what it is asked for, after which
// the reader is not used again.
func event(r *jsonscan.Reader, ev *streamEvent) bool {
	return object(r, func(k []byte) bool {
		switch string(k) {
		case "contentBlockIndex":
			return integer(r, &ev.ContentBlockIndex)
		case "start":
			return object(r, func(k []byte) bool {
				if string(k) != "toolUse" {
					return r.SkipUnknown(k, maxDepth, "toolUse")
				}
				if r.Literal("null") {
					ev.Start.ToolUse = nil
					return true
				}
				if ev.Start.ToolUse == nil {
					ev.Start.ToolUse = new(eventToolUse)
				}
				tu := ev.Start.ToolUse
				return object(r, func(k []byte) bool {
					switch string(k) {
					case "toolUseId":
						return r.NullableString(&tu.ToolUseID)
					case "name":
						return r.NullableString(&tu.Name)
					}
					return r.SkipUnknown(k, maxDepth, "toolUseId", "name")
				})
			})
		case "delta":
			d := &ev.Delta
			return object(r, func(k []byte) bool {
				switch string(k) {
				case "text":
					return r.NullableString(&d.Text)
				case "toolUse":
					return object(r, func(k []byte) bool {
						if string(k) != "input" {
							return r.SkipUnknown(k, maxDepth, "input")
						}
						return r.NullableString(&d.ToolUse.Input)
					})
				case "reasoningContent":
					rc := &d.ReasoningContent
					return object(r, func(k []byte) bool {
						switch string(k) {
						case "text":
							return r.NullableString(&rc.Text)
						case "signature":
							return r.NullableString(&rc.Signature)
						case "redactedContent":
							return r.NullableString(&rc.RedactedContent)
						}
						return r.SkipUnknown(k, maxDepth, "text", "signature", "redactedContent")
					})
				}
				return r.SkipUnknown(k, maxDepth, "text", "toolUse", "reasoningContent")
			})
		case "stopReason":
			return r.NullableString(&ev.StopReason)
		case "usage":
			if r.Literal("null") {
				ev.Usage = nil
				return true
			}
			if ev.Usage == nil {
				ev.Usage = new(eventUsage)
			}
			u := ev.Usage
			return object(r, func(k []byte) bool {
				switch string(k) {
				case "inputTokens":
					return r.NullableInt(&u.InputTokens)
				case "outputTokens":
					return r.NullableInt(&u.OutputTokens)
				case "cacheReadInputTokens":
					return r.NullableInt(&u.CacheReadInputTokens)
				case "cacheWriteInputTokens":
					return r.NullableInt(&u.CacheWriteInputTokens)
				}
				return r.SkipUnknown(k, maxDepth, "inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
			})
		case "message":
			return r.NullableString(&ev.Message)
		}
		return r.SkipUnknown(k, maxDepth, "contentBlockIndex", "start", "delta", "stopReason", "usage", "message")
	})
}

// object reads an object, calling field for each key with the reader at
// the value. null, which json.Unmarshal takes as no change to a struct,
// calls nothing.
func object(r *jsonscan.Reader, field func(key []byte) bool) bool {
	return r.Literal("null") || r.Object(field)
}

// integer reads a plain integer that fits an int (or null, no change)
// into dst.
func integer(r *jsonscan.Reader, dst *int) bool {
	v := int64(*dst)
	if !r.NullableInt(&v) || v < math.MinInt || v > math.MaxInt {
		return false
	}
	*dst = int(v)
	return true
}
