package chat

import (
	"encoding/json"
	"maps"
)

// Clone is a deep copy of r: a converter may change the copy freely.
// Strings are shared (Go strings are immutable); raw JSON is copied.
func (r Request) Clone() Request {
	out := r
	if r.System != nil {
		c := r.System.Clone()
		out.System = &c
	}
	out.Messages = make([]Message, len(r.Messages))
	for i, m := range r.Messages {
		out.Messages[i] = m.Clone()
	}
	if r.Tools != nil {
		out.Tools = make([]Tool, len(r.Tools))
		for i, t := range r.Tools {
			t.InputSchema = CloneRaw(t.InputSchema)
			t.CacheControl = CloneRaw(t.CacheControl)
			t.Extra = cloneExtra(t.Extra)
			out.Tools[i] = t
		}
	}
	if r.ToolChoice != nil {
		tc := *r.ToolChoice
		if tc.DisableParallelToolUse != nil {
			v := *tc.DisableParallelToolUse
			tc.DisableParallelToolUse = &v
		}
		out.ToolChoice = &tc
	}
	if r.Temperature != nil {
		v := *r.Temperature
		out.Temperature = &v
	}
	if r.TopP != nil {
		v := *r.TopP
		out.TopP = &v
	}
	out.StopSequences = append([]string(nil), r.StopSequences...)
	if r.Thinking != nil {
		t := *r.Thinking
		out.Thinking = &t
	}
	if r.Format != nil {
		f := *r.Format
		f.Schema = CloneRaw(f.Schema)
		if f.Strict != nil {
			v := *f.Strict
			f.Strict = &v
		}
		out.Format = &f
	}
	out.Metadata = CloneRaw(r.Metadata)
	out.Extra = cloneExtra(r.Extra)
	return out
}

// Clone is a deep copy of m.
func (m Message) Clone() Message {
	out := m
	out.Content = m.Content.Clone()
	out.ReasoningDetails = CloneRaw(m.ReasoningDetails)
	out.Extra = cloneExtra(m.Extra)
	return out
}

// Clone is a deep copy of c.
func (c Content) Clone() Content {
	out := c
	if c.Blocks != nil {
		out.Blocks = make([]Block, len(c.Blocks))
		for i := range c.Blocks {
			out.Blocks[i] = c.Blocks[i].Clone()
		}
	}
	return out
}

// Clone is a deep copy of b.
func (b Block) Clone() Block {
	out := b
	if b.Source != nil {
		s := *b.Source
		s.Extra = cloneExtra(s.Extra)
		out.Source = &s
	}
	out.Input = CloneRaw(b.Input)
	if b.Content != nil {
		c := b.Content.Clone()
		out.Content = &c
	}
	out.CacheControl = CloneRaw(b.CacheControl)
	out.Citations = CloneRaw(b.Citations)
	out.Extra = cloneExtra(b.Extra)
	return out
}

// CloneRaw is a copy of v that shares no bytes with it (nil when v is
// empty).
func CloneRaw(v json.RawMessage) json.RawMessage { return append(json.RawMessage(nil), v...) }

func cloneExtra(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = CloneRaw(v)
	}
	return out
}
