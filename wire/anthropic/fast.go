package anthropic

import (
	"encoding/json"
	"unicode/utf8"
)

// parseEvent decodes data, an event's JSON, into e (zeroed), as
// json.Unmarshal would. Nearly all of a stream's events are
// content_block_delta, content_block_stop or message_stop events of one
// small shape; parseFast reads those in one pass, and every other event
// (or any doubt: an unknown key, an escape it does not decode, invalid
// UTF-8, anything not plain JSON) goes to encoding/json.
func parseEvent(data []byte, e *event) error {
	if parseFast(data, e) {
		return nil
	}
	*e = event{}
	return json.Unmarshal(data, e)
}

// parseFast reads an event made of only "type", "index" and a "delta"
// whose keys are among type, text, thinking, signature, partial_json and
// stop_reason, with string values (stop_reason: string or null), a
// non-negative integer index and no \u escapes. It reports false, leaving
// e in any state, for anything else.
func parseFast(data []byte, e *event) bool {
	p := fastParser{b: data}
	if !p.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return p.kind(&e.Type)
		case "index":
			return p.index(&e.Index)
		case "delta":
			return p.object(func(key []byte) bool { return p.deltaField(key, &e.Delta) })
		}
		return false
	}) {
		return false
	}
	p.space()
	return p.i == len(p.b)
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) next(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads an object, calling member for each key with the parser at
// the key's value.
func (p *fastParser) object(member func(key []byte) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	for {
		p.space()
		key, ok := p.rawString()
		if !ok || !p.next(':') {
			return false
		}
		p.space()
		if !member(key) {
			return false
		}
		if p.next('}') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// rawString reads a string without escapes and returns its bytes.
func (p *fastParser) rawString() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value: no \u escapes, valid UTF-8.
func (p *fastParser) str(dst *string) bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i + 1
	j := start
	for ; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' {
			break
		}
		if c == '\\' {
			return p.escaped(start, dst)
		}
		if c < 0x20 {
			return false
		}
	}
	if j >= len(p.b) || !utf8.Valid(p.b[start:j]) {
		return false
	}
	*dst = string(p.b[start:j])
	p.i = j + 1
	return true
}

// escaped reads a string with escapes other than \u, from start (just
// after the opening quote).
func (p *fastParser) escaped(start int, dst *string) bool {
	out := make([]byte, 0, 64)
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return false
			}
			*dst = string(out)
			p.i = j + 1
			return true
		case c < 0x20:
			return false
		case c != '\\':
			out = append(out, c)
			continue
		}
		j++
		if j >= len(p.b) {
			return false
		}
		switch p.b[j] {
		case '"', '\\', '/':
			out = append(out, p.b[j])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // \u, or not an escape
			return false
		}
	}
	return false
}

// kind reads a type name.
func (p *fastParser) kind(dst *kind) bool {
	s, ok := p.rawString()
	if !ok || !utf8.Valid(s) {
		return false
	}
	*dst = kindOf(string(s))
	return true
}

// index reads a small non-negative integer.
func (p *fastParser) index(dst *int) bool {
	start, n := p.i, 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		n = n*10 + int(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > 9 || (digits > 1 && p.b[start] == '0') {
		return false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	*dst = n
	return true
}

func (p *fastParser) deltaField(key []byte, d *delta) bool {
	switch string(key) {
	case "type":
		return p.kind(&d.Type)
	case "text":
		return p.str(&d.Text)
	case "thinking":
		return p.str(&d.Thinking)
	case "signature":
		return p.str(&d.Signature)
	case "partial_json":
		return p.str(&d.PartialJSON)
	case "stop_reason":
		if p.i+4 <= len(p.b) && string(p.b[p.i:p.i+4]) == "null" {
			p.i += 4
			d.StopReason = nil
			return true
		}
		var s string
		if !p.str(&s) {
			return false
		}
		d.StopReason = &s
		return true
	}
	return false
}
