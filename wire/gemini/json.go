package gemini

import (
	"bytes"
	"encoding/json"

	"github.com/ctxkit/ctxkit/chat"
)

// MarshalJSON writes the part with the field names of its struct tags, and
// "text" whenever the part has no other data, so a part that only carries
// a thought signature (or an empty thought) is still a valid text part.
// Written by hand because base64 payloads dominate a request's size.
func (p Part) MarshalJSON() ([]byte, error) {
	n := 64 + len(p.Text) + len(p.ThoughtSignature)
	if p.InlineData != nil {
		n += len(p.InlineData.Data)
	}
	return p.appendJSON(make([]byte, 0, n))
}

func (p *Part) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	hasData := p.InlineData != nil || p.FileData != nil || p.FunctionCall != nil || p.FunctionResponse != nil
	if p.Text != "" || !hasData {
		key("text")
		b = chat.AppendString(b, p.Text)
	}
	if p.Thought {
		key("thought")
		b = append(b, "true"...)
	}
	if p.ThoughtSignature != "" {
		key("thoughtSignature")
		b = chat.AppendString(b, p.ThoughtSignature)
	}
	if d := p.InlineData; d != nil {
		key("inlineData")
		b = append(b, `{"mimeType":`...)
		b = chat.AppendString(b, d.MimeType)
		b = append(b, `,"data":`...)
		b = chat.AppendString(b, d.Data)
		b = append(b, '}')
	}
	if f := p.FileData; f != nil {
		key("fileData")
		b = append(b, '{')
		if f.MimeType != "" {
			b = append(b, `"mimeType":`...)
			b = chat.AppendString(b, f.MimeType)
			b = append(b, ',')
		}
		b = append(b, `"fileUri":`...)
		b = chat.AppendString(b, f.FileURI)
		b = append(b, '}')
	}
	if c := p.FunctionCall; c != nil {
		key("functionCall")
		b = append(b, '{')
		if c.ID != "" {
			b = append(b, `"id":`...)
			b = chat.AppendString(b, c.ID)
			b = append(b, ',')
		}
		b = append(b, `"name":`...)
		b = chat.AppendString(b, c.Name)
		b = append(b, `,"args":`...)
		var err error
		if b, err = appendObject(b, c.Args); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	if r := p.FunctionResponse; r != nil {
		key("functionResponse")
		b = append(b, '{')
		if r.ID != "" {
			b = append(b, `"id":`...)
			b = chat.AppendString(b, r.ID)
			b = append(b, ',')
		}
		b = append(b, `"name":`...)
		b = chat.AppendString(b, r.Name)
		b = append(b, `,"response":`...)
		var err error
		if b, err = appendObject(b, r.Response); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendObject appends raw JSON compacted, or {} when it is empty.
func appendObject(b []byte, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, '{', '}'), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
