package bedrock

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// parseEvent fills ev from an event's JSON payload exactly as
// json.Unmarshal(p, ev) would. Event payloads are small objects of a few
// known fields, and they come one a frame; reading them with a scanner of
// their own instead of the reflection of encoding/json keeps a stream's
// decoding close to the cost of the JSON alone. The scanner handles the
// common shapes only; anything else (an escape in a key, a key matching a
// field only without regard to case, a string with escapes or invalid
// UTF-8, a number other than a plain integer, nesting deeper than
// maxDepth, invalid JSON) hands the payload to json.Unmarshal, which gives
// the result or the error.
func parseEvent(p []byte, ev *streamEvent) error {
	*ev = streamEvent{}
	s := scanner{b: p}
	if s.event(ev) {
		s.ws()
		if s.i == len(s.b) {
			return nil
		}
	}
	*ev = streamEvent{}
	return json.Unmarshal(p, ev)
}

// maxDepth bounds the nesting the scanner skips over itself.
const maxDepth = 32

// scanner reads JSON from b at i. Its methods return false when they
// cannot read what they are asked for, after which the scanner is not
// used again.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) event(ev *streamEvent) bool {
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "contentBlockIndex":
			return s.int(&ev.ContentBlockIndex)
		case "start":
			return s.object(func(k []byte) bool {
				if string(k) != "toolUse" {
					return s.unknown(k, "toolUse")
				}
				if s.null() {
					ev.Start.ToolUse = nil
					return true
				}
				if ev.Start.ToolUse == nil {
					ev.Start.ToolUse = new(eventToolUse)
				}
				tu := ev.Start.ToolUse
				return s.object(func(k []byte) bool {
					switch string(k) {
					case "toolUseId":
						return s.str(&tu.ToolUseID)
					case "name":
						return s.str(&tu.Name)
					}
					return s.unknown(k, "toolUseId", "name")
				})
			})
		case "delta":
			d := &ev.Delta
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "text":
					return s.str(&d.Text)
				case "toolUse":
					return s.object(func(k []byte) bool {
						if string(k) != "input" {
							return s.unknown(k, "input")
						}
						return s.str(&d.ToolUse.Input)
					})
				case "reasoningContent":
					rc := &d.ReasoningContent
					return s.object(func(k []byte) bool {
						switch string(k) {
						case "text":
							return s.str(&rc.Text)
						case "signature":
							return s.str(&rc.Signature)
						case "redactedContent":
							return s.str(&rc.RedactedContent)
						}
						return s.unknown(k, "text", "signature", "redactedContent")
					})
				}
				return s.unknown(k, "text", "toolUse", "reasoningContent")
			})
		case "stopReason":
			return s.str(&ev.StopReason)
		case "usage":
			if s.null() {
				ev.Usage = nil
				return true
			}
			if ev.Usage == nil {
				ev.Usage = new(eventUsage)
			}
			u := ev.Usage
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "inputTokens":
					return s.int64(&u.InputTokens)
				case "outputTokens":
					return s.int64(&u.OutputTokens)
				case "cacheReadInputTokens":
					return s.int64(&u.CacheReadInputTokens)
				case "cacheWriteInputTokens":
					return s.int64(&u.CacheWriteInputTokens)
				}
				return s.unknown(k, "inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
			})
		case "message":
			return s.str(&ev.Message)
		}
		return s.unknown(k, "contentBlockIndex", "start", "delta", "stopReason", "usage", "message")
	})
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c (and
// consumes it if so).
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads an object, calling field for each key with the scanner at
// the value. null, which json.Unmarshal takes as no change to a struct,
// calls nothing.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.null() {
		return true
	}
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		s.ws()
		k, ok := s.key()
		if !ok || !s.next(':') {
			return false
		}
		s.ws()
		if !field(k) {
			return false
		}
		switch {
		case s.next(','):
		case s.next('}'):
			return true
		default:
			return false
		}
	}
}

// key reads a key made of printable ASCII without escapes.
func (s *scanner) key() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// unknown skips the value of a key that is none of known; a key that
// json.Unmarshal would match to one of them without regard to case makes
// the scanner give up.
func (s *scanner) unknown(k []byte, known ...string) bool {
	for _, name := range known {
		if bytes.EqualFold(k, []byte(name)) {
			return false
		}
	}
	return s.skip(0)
}

// null reads a null if one is next.
func (s *scanner) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// str reads a string (or null, no change) into dst.
func (s *scanner) str(dst *string) bool {
	if s.null() {
		return true
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	start := s.i
	plain, ascii := true, true
	for i := start + 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			body := s.b[start+1 : i]
			if plain && (ascii || utf8.Valid(body)) {
				*dst = string(body)
				return true
			}
			// Escapes or invalid UTF-8: encoding/json reads the string.
			return json.Unmarshal(s.b[start:s.i], dst) == nil
		case c == '\\':
			plain = false
			i++ // the escaped byte, checked by json.Unmarshal
		case c < 0x20:
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return false
}

// int reads a plain integer (or null, no change) into dst.
func (s *scanner) int(dst *int) bool {
	var v int64
	if !s.int64(&v) {
		return false
	}
	if int64(int(v)) != v {
		return false
	}
	*dst = int(v)
	return true
}

// int64 reads an integer of at most 18 digits, without fraction or
// exponent, (or null, no change) into dst.
func (s *scanner) int64(dst *int64) bool {
	if s.null() {
		return true
	}
	i, neg := s.i, false
	if i < len(s.b) && s.b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var v int64
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		v = v*10 + int64(s.b[i]-'0')
		i++
	}
	n := i - start
	switch {
	case n == 0 || n > 18 || (n > 1 && s.b[start] == '0'):
		return false
	case i < len(s.b) && (s.b[i] == '.' || s.b[i] == 'e' || s.b[i] == 'E'):
		return false
	}
	if neg {
		v = -v
	}
	*dst = v
	s.i = i
	return true
}

// skip skips over any valid JSON value.
func (s *scanner) skip(depth int) bool {
	s.ws()
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		s.i++
		if s.next('}') {
			return true
		}
		for {
			s.ws()
			if !s.skipString() || !s.next(':') || !s.skip(depth+1) {
				return false
			}
			switch {
			case s.next(','):
			case s.next('}'):
				return true
			default:
				return false
			}
		}
	case c == '[':
		s.i++
		if s.next(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			switch {
			case s.next(','):
			case s.next(']'):
				return true
			default:
				return false
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.skipNumber()
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

// skipString skips over a valid JSON string.
func (s *scanner) skipString() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for i := s.i + 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i >= len(s.b) {
				return false
			}
			switch s.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s.b) {
					return false
				}
				for _, h := range s.b[i+1 : i+5] {
					if !isHex(h) {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipNumber skips over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) skipNumber() bool {
	b, i := s.b, s.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch n := digits(); {
	case n == 0:
		return false
	case n > 1 && b[i-n] == '0':
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	s.i = i
	return true
}
