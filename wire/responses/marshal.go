package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// MarshalJSON writes the request as encoding/json would, field by field
// in the struct's order with its omitempty rules, without reflection:
// the gateway writes one per request before the upstream is called, so
// its cost is in every answer's latency. Strings are escaped as
// chat.AppendString escapes them (as encoding/json does, less its HTML
// escapes, which no API needs); raw fields are compacted. A raw field
// that is not valid JSON, or a number JSON cannot write, is an error
// naming the field.
func (r *Request) MarshalJSON() ([]byte, error) {
	var m requestMarshaler
	b := append(make([]byte, 0, r.sizeHint()), `{"model":`...)
	b = chat.AppendString(b, r.Model)
	if r.Instructions != "" {
		b = appendStr(b, "instructions", r.Instructions)
	}
	b = appendKey(b, "input")
	if r.Input == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Input {
			if i > 0 {
				b = append(b, ',')
			}
			b = m.item(b, &r.Input[i], i)
		}
		b = append(b, ']')
	}
	if len(r.Tools) > 0 {
		b = appendKey(b, "tools")
		b = append(b, '[')
		for i := range r.Tools {
			t := &r.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = chat.AppendString(b, t.Type)
			b = appendStr(b, "name", t.Name)
			if t.Description != "" {
				b = appendStr(b, "description", t.Description)
			}
			b = m.raw(appendKey(b, "parameters"), t.Parameters, field{"tools", i, "parameters"})
			b = strconv.AppendBool(appendKey(b, "strict"), t.Strict)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = m.optRaw(b, "tool_choice", r.ToolChoice)
	if r.ParallelToolCalls != nil {
		b = strconv.AppendBool(appendKey(b, "parallel_tool_calls"), *r.ParallelToolCalls)
	}
	if r.MaxOutputTokens != 0 {
		b = appendInt(b, "max_output_tokens", r.MaxOutputTokens)
	}
	b = m.float(b, "temperature", r.Temperature)
	b = m.float(b, "top_p", r.TopP)
	if r.Reasoning != nil {
		b = appendKey(b, "reasoning")
		b = append(b, '{')
		n := len(b)
		if r.Reasoning.Effort != "" {
			b = chat.AppendString(append(b, `"effort":`...), r.Reasoning.Effort)
		}
		if r.Reasoning.Summary != "" {
			if len(b) > n {
				b = append(b, ',')
			}
			b = chat.AppendString(append(b, `"summary":`...), r.Reasoning.Summary)
		}
		b = append(b, '}')
	}
	b = m.optRaw(b, "text", r.Text)
	if len(r.Include) > 0 {
		b = appendKey(b, "include")
		b = append(b, '[')
		for i, s := range r.Include {
			if i > 0 {
				b = append(b, ',')
			}
			b = chat.AppendString(b, s)
		}
		b = append(b, ']')
	}
	b = strconv.AppendBool(appendKey(b, "store"), r.Store)
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	b = m.optRaw(b, "metadata", r.Metadata)
	b = m.optRaw(b, "user", r.User)
	b = m.optRaw(b, "safety_identifier", r.SafetyIdentifier)
	b = m.optRaw(b, "prompt_cache_key", r.PromptCacheKey)
	b = m.optRaw(b, "prompt_cache_retention", r.PromptCacheRetention)
	b = m.optRaw(b, "service_tier", r.ServiceTier)
	b = m.optRaw(b, "truncation", r.Truncation)
	b = m.optRaw(b, "max_tool_calls", r.MaxToolCalls)
	b = m.optRaw(b, "prompt", r.Prompt)
	b = append(b, '}')
	if m.err != nil {
		return nil, m.err
	}
	return b, nil
}

// sizeHint is about the size of the request's JSON, so that it is
// written in one buffer: the strings and raw fields that make most of it,
// and room for the rest.
func (r *Request) sizeHint() int {
	n := 256 + len(r.Model) + len(r.Instructions) + len(r.ToolChoice) + len(r.Text) + len(r.Metadata) + len(r.Prompt)
	for i := range r.Input {
		it := &r.Input[i]
		n += 64 + len(it.CallID) + len(it.Name) + len(it.Output) + len(it.EncryptedContent)
		if it.Arguments != nil {
			n += len(*it.Arguments)
		}
		for j := range it.Content {
			p := &it.Content[j]
			n += 32 + len(p.Text) + len(p.ImageURL) + len(p.FileData) + len(p.FileURL) + len(p.FileID) + len(p.Filename)
		}
		if it.Summary != nil {
			for _, p := range *it.Summary {
				n += 32 + len(p.Text)
			}
		}
	}
	for i := range r.Tools {
		n += 64 + len(r.Tools[i].Name) + len(r.Tools[i].Description) + len(r.Tools[i].Parameters)
	}
	// A string's escapes make it longer: an eighth more is room for
	// most.
	return n + n/8
}

// requestMarshaler holds the first fault of the request being written.
type requestMarshaler struct{ err error }

// item appends the input item it, the i-th.
func (m *requestMarshaler) item(b []byte, it *Item, i int) []byte {
	b = append(b, `{"type":`...)
	b = chat.AppendString(b, it.Type)
	if it.Role != "" {
		b = appendStr(b, "role", it.Role)
	}
	if len(it.Content) > 0 {
		b = appendParts(appendKey(b, "content"), it.Content)
	}
	if it.CallID != "" {
		b = appendStr(b, "call_id", it.CallID)
	}
	if it.Name != "" {
		b = appendStr(b, "name", it.Name)
	}
	if it.Arguments != nil {
		b = appendStr(b, "arguments", *it.Arguments)
	}
	if len(it.Output) > 0 {
		b = m.raw(appendKey(b, "output"), it.Output, field{"input", i, "output"})
	}
	if it.Summary != nil {
		b = appendKey(b, "summary")
		if *it.Summary == nil {
			b = append(b, "null"...)
		} else {
			b = appendParts(b, *it.Summary)
		}
	}
	if it.EncryptedContent != "" {
		b = appendStr(b, "encrypted_content", it.EncryptedContent)
	}
	return append(b, '}')
}

// appendParts appends content parts as a JSON array.
func appendParts(b []byte, parts []Part) []byte {
	b = append(b, '[')
	for i := range parts {
		p := &parts[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = chat.AppendString(b, p.Type)
		for _, f := range [...]struct {
			k, v string
		}{{"text", p.Text}, {"image_url", p.ImageURL}, {"file_id", p.FileID}, {"detail", p.Detail},
			{"file_data", p.FileData}, {"file_url", p.FileURL}, {"filename", p.Filename}} {
			if f.v != "" {
				b = appendStr(b, f.k, f.v)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// optRaw appends key k and raw unless raw is empty (omitempty).
func (m *requestMarshaler) optRaw(b []byte, k string, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return b
	}
	return m.raw(appendKey(b, k), raw, field{k, -1, ""})
}

// field names a raw field for an error: name, or name[index].sub; made a
// string only for the error.
type field struct {
	name  string
	index int
	sub   string
}

func (f field) String() string {
	if f.index < 0 {
		return f.name
	}
	return f.name + "[" + strconv.Itoa(f.index) + "]." + f.sub
}

// raw appends raw JSON compacted, null for none; JSON that is not valid
// is the marshaler's error, naming f.
func (m *requestMarshaler) raw(b []byte, raw json.RawMessage, f field) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	if s := jsonscan.New(raw); s.Skip(maxDepth) && s.End() && !bytes.ContainsAny(raw, " \t\n\r") {
		return append(b, raw...)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		if m.err == nil {
			m.err = fmt.Errorf("responses: %s: not valid JSON: %w", f, err)
		}
		return append(b, "null"...)
	}
	return append(b, buf.Bytes()...)
}

// float appends key k and *f as encoding/json writes a float64, unless f
// is nil (omitempty).
func (m *requestMarshaler) float(b []byte, k string, f *float64) []byte {
	if f == nil {
		return b
	}
	if math.IsNaN(*f) || math.IsInf(*f, 0) {
		if m.err == nil {
			m.err = fmt.Errorf("responses: %s: %v is not a number JSON can write", k, *f)
		}
		return b
	}
	return appendOptFloat(appendKey(b, k), f)
}
