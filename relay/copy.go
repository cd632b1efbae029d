package relay

import (
	"encoding/json"
	"maps"
	"slices"
)

// ClonePrompts is a deep copy of prompts, made by type (no JSON round
// trip): integers in metadata stay integers. Strings are shared, as Go
// strings cannot change. The prompts' metadata must hold JSON-compatible
// values only (CheckPrompts says so).
func ClonePrompts(prompts []Prompt) []Prompt {
	if prompts == nil {
		return nil
	}
	out := make([]Prompt, len(prompts))
	for i := range prompts {
		out[i] = prompts[i].Clone()
	}
	return out
}

// Clone is a deep copy of p.
func (p *Prompt) Clone() Prompt {
	out := *p
	out.Variables = maps.Clone(p.Variables)
	if p.Conditions != nil {
		out.Conditions = make([]Condition, len(p.Conditions))
		for i, c := range p.Conditions {
			if c.Equals != nil {
				v := *c.Equals
				c.Equals = &v
			}
			if c.NotEquals != nil {
				v := *c.NotEquals
				c.NotEquals = &v
			}
			if c.Exists != nil {
				v := *c.Exists
				c.Exists = &v
			}
			out.Conditions[i] = c
		}
	}
	out.Examples = slices.Clone(p.Examples)
	out.Metadata = CloneMap(p.Metadata)
	return out
}

// CloneMap is a deep copy of a map of JSON-compatible values.
func CloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	// maps.Clone copies the map's storage in bulk; only the values that
	// are containers need copying again.
	out := maps.Clone(m)
	for k, v := range m {
		switch v.(type) {
		case map[string]any, []any, []string, map[string]string, json.RawMessage:
			out[k] = cloneValue(v)
		}
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CloneMap(x)
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []string:
		return slices.Clone(x)
	case map[string]string:
		return maps.Clone(x)
	case json.RawMessage:
		return slices.Clone(x)
	}
	// nil, bool, string and numbers cannot be changed through a copy.
	return v
}

// EqualPrompts reports whether a and b are deeply equal, metadata included
// (a number equals only a number of the same Go type and value).
func EqualPrompts(a, b *Prompt) bool {
	if a.ID != b.ID || a.Name != b.Name || a.Description != b.Description || a.Position != b.Position ||
		a.Content != b.Content || a.Priority != b.Priority ||
		!maps.Equal(a.Variables, b.Variables) || !slices.Equal(a.Examples, b.Examples) ||
		!slices.EqualFunc(a.Conditions, b.Conditions, equalCondition) ||
		len(a.Metadata) != len(b.Metadata) || (a.Metadata == nil) != (b.Metadata == nil) {
		return false
	}
	for k, v := range a.Metadata {
		w, ok := b.Metadata[k]
		if !ok || !equalValue(v, w) {
			return false
		}
	}
	return true
}

func equalCondition(a, b Condition) bool {
	return a.Variable == b.Variable && equalPtr(a.Equals, b.Equals) && equalPtr(a.NotEquals, b.NotEquals) && equalPtr(a.Exists, b.Exists)
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equalValue)
	case []string:
		y, ok := b.([]string)
		return ok && slices.Equal(x, y)
	case map[string]string:
		y, ok := b.(map[string]string)
		return ok && maps.Equal(x, y)
	case json.RawMessage:
		y, ok := b.(json.RawMessage)
		return ok && string(x) == string(y)
	}
	if !comparableJSON(a) || !comparableJSON(b) {
		return false
	}
	return a == b
}

// comparableJSON reports whether v is a JSON scalar of a comparable type.
func comparableJSON(v any) bool {
	switch v.(type) {
	case nil, bool, string, json.Number, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}
