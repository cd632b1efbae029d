package chat

import (
	"bytes"
	"encoding/json"
	"maps"
	"strconv"
	"unicode/utf8"
)

// The canonical JSON writer: fixed key order (type first), extra fields
// after the modelled ones in sorted order, so equal requests encode to
// equal bytes.

// MarshalJSON writes the Anthropic shape.
func (r Request) MarshalJSON() ([]byte, error) {
	var o obj
	o.begin()
	if r.Model != "" {
		o.str("model", r.Model)
	}
	if r.MaxTokens != 0 {
		o.int("max_tokens", int64(r.MaxTokens))
	}
	if r.System != nil {
		o.key("system")
		if err := r.System.appendJSON(&o.b); err != nil {
			return nil, err
		}
	}
	o.key("messages")
	o.b = append(o.b, '[')
	for i := range r.Messages {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		if err := r.Messages[i].appendJSON(&o.b); err != nil {
			return nil, err
		}
	}
	o.b = append(o.b, ']')
	if len(r.Tools) > 0 {
		o.key("tools")
		o.b = append(o.b, '[')
		for i := range r.Tools {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			if err := r.Tools[i].appendJSON(&o.b); err != nil {
				return nil, err
			}
		}
		o.b = append(o.b, ']')
	}
	if r.ToolChoice != nil {
		if err := o.value("tool_choice", r.ToolChoice); err != nil {
			return nil, err
		}
	}
	if r.Temperature != nil {
		o.float("temperature", *r.Temperature)
	}
	if r.TopP != nil {
		o.float("top_p", *r.TopP)
	}
	if len(r.StopSequences) > 0 {
		if err := o.value("stop_sequences", r.StopSequences); err != nil {
			return nil, err
		}
	}
	if r.Thinking != nil {
		if err := o.value("thinking", r.Thinking); err != nil {
			return nil, err
		}
	}
	if r.ReasoningEffort != "" {
		o.str("reasoning_effort", r.ReasoningEffort)
	}
	if r.Stream {
		o.key("stream")
		o.b = append(o.b, "true"...)
	}
	if len(r.Metadata) > 0 {
		if err := o.raw("metadata", r.Metadata); err != nil {
			return nil, err
		}
	}
	extra := r.Extra
	if r.Format != nil {
		// The format goes in output_config, beside what the request's
		// output_config holds.
		cfg, err := formatConfig(r.Format, r.Extra["output_config"])
		if err != nil {
			return nil, err
		}
		extra = maps.Clone(extra)
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra["output_config"] = cfg
	}
	if err := o.extra(extra); err != nil {
		return nil, err
	}
	return o.end(), nil
}

// formatConfig is output_config with f as its format and cfg's other
// members (cfg may be empty).
func formatConfig(f *OutputFormat, cfg json.RawMessage) (json.RawMessage, error) {
	members := map[string]json.RawMessage{}
	if len(cfg) > 0 {
		if err := json.Unmarshal(cfg, &members); err != nil || members == nil {
			return nil, &Error{Code: CodeInvalidValue, Path: "output_config", Msg: "must be a JSON object"}
		}
	}
	format, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	members["format"] = format
	return json.Marshal(members)
}

// MarshalJSON writes {"role","content",...}.
func (m Message) MarshalJSON() ([]byte, error) {
	var b []byte
	err := m.appendJSON(&b)
	return b, err
}

func (m *Message) appendJSON(dst *[]byte) error {
	o := obj{b: *dst}
	o.begin()
	o.str("role", m.Role)
	o.key("content")
	if err := m.Content.appendJSON(&o.b); err != nil {
		return err
	}
	if len(m.ReasoningDetails) > 0 {
		if err := o.raw("reasoning_details", m.ReasoningDetails); err != nil {
			return err
		}
	}
	if err := o.extra(m.Extra); err != nil {
		return err
	}
	*dst = o.end()
	return nil
}

// MarshalJSON writes a string or a block array.
func (c Content) MarshalJSON() ([]byte, error) {
	var b []byte
	err := c.appendJSON(&b)
	return b, err
}

func (c *Content) appendJSON(dst *[]byte) error {
	if c.IsString {
		*dst = appendString(*dst, c.Text)
		return nil
	}
	b := append(*dst, '[')
	for i := range c.Blocks {
		if i > 0 {
			b = append(b, ',')
		}
		if err := c.Blocks[i].appendJSON(&b); err != nil {
			return err
		}
	}
	*dst = append(b, ']')
	return nil
}

// MarshalJSON writes the block in its type's shape.
func (b Block) MarshalJSON() ([]byte, error) {
	var out []byte
	err := b.appendJSON(&out)
	return out, err
}

func (b *Block) appendJSON(dst *[]byte) error {
	o := obj{b: *dst}
	o.begin()
	o.str("type", b.Type)
	switch b.Type {
	case TypeText, TypeReasoning:
		o.str("text", b.Text)
	case TypeImage, TypeDocument:
		if b.Source != nil {
			o.key("source")
			if err := b.Source.appendJSON(&o.b); err != nil {
				return err
			}
		}
		if b.Title != "" {
			o.str("title", b.Title)
		}
		if b.Context != "" {
			o.str("context", b.Context)
		}
	case TypeToolUse:
		o.str("id", b.ID)
		o.str("name", b.Name)
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		if err := o.raw("input", input); err != nil {
			return err
		}
	case TypeToolResult:
		o.str("tool_use_id", b.ToolUseID)
		if b.Content != nil {
			o.key("content")
			if err := b.Content.appendJSON(&o.b); err != nil {
				return err
			}
		}
		if b.IsError {
			o.key("is_error")
			o.b = append(o.b, "true"...)
		}
	case TypeThinking:
		o.str("thinking", b.Thinking)
		if b.Signature != "" {
			o.str("signature", b.Signature)
		}
	case TypeThoughtSignature:
		o.str("signature", b.Signature)
	case TypeRedactedThinking:
		o.str("data", b.Data)
	}
	if len(b.Citations) > 0 {
		if err := o.raw("citations", b.Citations); err != nil {
			return err
		}
	}
	if len(b.CacheControl) > 0 {
		if err := o.raw("cache_control", b.CacheControl); err != nil {
			return err
		}
	}
	if err := o.extra(b.Extra); err != nil {
		return err
	}
	*dst = o.end()
	return nil
}

// MarshalJSON writes the source with its extra fields.
func (s Source) MarshalJSON() ([]byte, error) {
	var out []byte
	err := s.appendJSON(&out)
	return out, err
}

func (s *Source) appendJSON(dst *[]byte) error {
	o := obj{b: *dst}
	o.begin()
	o.str("type", s.Type)
	if s.MediaType != "" {
		o.str("media_type", s.MediaType)
	}
	if s.Data != "" {
		o.str("data", s.Data)
	}
	if s.URL != "" {
		o.str("url", s.URL)
	}
	if err := o.extra(s.Extra); err != nil {
		return err
	}
	*dst = o.end()
	return nil
}

// MarshalJSON writes the tool.
func (t Tool) MarshalJSON() ([]byte, error) {
	var out []byte
	err := t.appendJSON(&out)
	return out, err
}

func (t *Tool) appendJSON(dst *[]byte) error {
	o := obj{b: *dst}
	o.begin()
	if t.Type != "" {
		o.str("type", t.Type)
	}
	o.str("name", t.Name)
	if t.Description != "" {
		o.str("description", t.Description)
	}
	if len(t.InputSchema) > 0 {
		if err := o.raw("input_schema", t.InputSchema); err != nil {
			return err
		}
	}
	if len(t.CacheControl) > 0 {
		if err := o.raw("cache_control", t.CacheControl); err != nil {
			return err
		}
	}
	if err := o.extra(t.Extra); err != nil {
		return err
	}
	*dst = o.end()
	return nil
}

// obj appends one JSON object.
type obj struct {
	b []byte
	n int
}

func (o *obj) begin() { o.b = append(o.b, '{') }

func (o *obj) end() []byte { return append(o.b, '}') }

func (o *obj) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = appendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *obj) str(k, v string) {
	o.key(k)
	o.b = appendString(o.b, v)
}

func (o *obj) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *obj) float(k string, v float64) {
	o.key(k)
	o.b = strconv.AppendFloat(o.b, v, 'g', -1, 64)
}

// raw appends a JSON value, checked and compacted.
func (o *obj) raw(k string, v json.RawMessage) error {
	o.key(k)
	buf := bytes.NewBuffer(o.b)
	if err := json.Compact(buf, v); err != nil {
		return &Error{Code: CodeInvalidJSON, Path: k, Msg: "not valid JSON: " + err.Error(), Err: err}
	}
	o.b = buf.Bytes()
	return nil
}

func (o *obj) value(k string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o.key(k)
	o.b = append(o.b, data...)
	return nil
}

func (o *obj) extra(m map[string]json.RawMessage) error {
	for _, k := range SortedKeys(m) {
		if err := o.raw(k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD, and U+2028/U+2029
// escaped as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendString appends s as a JSON string; wire encoders use it.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }
