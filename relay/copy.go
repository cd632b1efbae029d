package relay

import (
	"encoding/json"
	"maps"
)

// ClonePrompts is a deep copy of prompts, made by type (no JSON round
// trip, no reflection): integers in metadata stay integers. Strings are
// shared, as Go strings cannot change. The prompts' metadata must hold
// JSON-compatible values only (CheckPrompts says so).
//
// Nothing in the copy is shared with prompts, and no two prompts of the
// copy share anything that can change. Small slices (examples, conditions,
// metadata lists) are cut from a few blocks allocated for the whole copy,
// each with its capacity cut to its length, so an append to one of them
// moves it out of its block instead of writing over its neighbour.
func ClonePrompts(prompts []Prompt) []Prompt {
	if prompts == nil {
		return nil
	}
	var c cloner
	out := make([]Prompt, len(prompts))
	for i := range prompts {
		out[i] = c.prompt(&prompts[i])
	}
	return out
}

// Clone is a deep copy of p.
func (p *Prompt) Clone() Prompt {
	var c cloner
	return c.prompt(p)
}

// cloneMap is a deep copy of a map of JSON-compatible values.
func cloneMap(m map[string]any) map[string]any {
	var c cloner
	return c.object(m)
}

// cloner makes deep copies, handing out small slices from arrays it
// allocates in bulk (one allocation serves many prompts).
type cloner struct {
	anys  block[any]
	exs   block[Example]
	conds block[Condition]
	strs  block[string]
	bools block[bool]
}

// block hands out slices of T cut from shared arrays, each slice with its
// capacity cut to its length. Each new array is twice as large as the
// last (up to 512 elements), so a short copy pays for a small one.
type block[T any] struct {
	free []T
	size int // of the last array
}

// take is a new slice of n zero elements (n > 0).
func (b *block[T]) take(n int) []T {
	if n > len(b.free) {
		b.size = max(n, min(2*b.size+8, 512))
		b.free = make([]T, b.size)
	}
	s := b.free[:n:n]
	b.free = b.free[n:]
	return s
}

func (c *cloner) prompt(p *Prompt) Prompt {
	out := *p
	out.Variables = maps.Clone(p.Variables)
	if n := len(p.Conditions); n == 0 && p.Conditions != nil {
		out.Conditions = []Condition{}
	} else if n > 0 {
		out.Conditions = c.conds.take(n)
		for i, cd := range p.Conditions {
			if cd.Equals != nil {
				v := &c.strs.take(1)[0]
				*v = *cd.Equals
				cd.Equals = v
			}
			if cd.NotEquals != nil {
				v := &c.strs.take(1)[0]
				*v = *cd.NotEquals
				cd.NotEquals = v
			}
			if cd.Exists != nil {
				v := &c.bools.take(1)[0]
				*v = *cd.Exists
				cd.Exists = v
			}
			out.Conditions[i] = cd
		}
	}
	if n := len(p.Examples); n == 0 && p.Examples != nil {
		out.Examples = []Example{}
	} else if n > 0 {
		out.Examples = c.exs.take(n)
		copy(out.Examples, p.Examples)
	}
	out.Metadata = c.object(p.Metadata)
	return out
}

// object copies a JSON object in one pass: scalars are stored as they
// are, containers copied.
func (c *cloner) object(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = c.value(v)
	}
	return out
}

func (c *cloner) value(v any) any {
	switch x := v.(type) {
	case nil, string, float64, int, bool, int64, json.Number:
		// The common scalars first: they cannot be changed through a copy.
		return v
	case map[string]any:
		return c.object(x)
	case []any:
		if x == nil {
			return x
		}
		if len(x) == 0 {
			return []any{} // not x: an append to it could reach x's array
		}
		out := c.anys.take(len(x))
		for i, e := range x {
			out[i] = c.value(e)
		}
		return out
	case []string:
		if x == nil {
			return x
		}
		out := make([]string, len(x))
		copy(out, x)
		return out
	case map[string]string:
		return maps.Clone(x)
	case json.RawMessage:
		if x == nil {
			return x
		}
		return append(json.RawMessage(make([]byte, 0, len(x))), x...)
	}
	// The other scalars (float32, sized integers) cannot be changed
	// through a copy either.
	return v
}

// EqualPrompts reports whether a and b are deeply equal, metadata included
// (a number equals only a number of the same Go type and value). A nil and
// an empty list or map are equal, except the metadata itself: a prompt
// with no metadata differs from one with an empty object.
func EqualPrompts(a, b *Prompt) bool {
	// The cheap fields first; strings shared by a copy compare by pointer.
	if a.ID != b.ID || a.Content != b.Content || a.Position != b.Position || a.Priority != b.Priority ||
		a.Name != b.Name || a.Description != b.Description ||
		len(a.Variables) != len(b.Variables) || len(a.Examples) != len(b.Examples) ||
		len(a.Conditions) != len(b.Conditions) || len(a.Metadata) != len(b.Metadata) ||
		(a.Metadata == nil) != (b.Metadata == nil) {
		return false
	}
	for i := range a.Examples {
		if a.Examples[i] != b.Examples[i] {
			return false
		}
	}
	for i := range a.Conditions {
		if !equalCondition(a.Conditions[i], b.Conditions[i]) {
			return false
		}
	}
	return maps.Equal(a.Variables, b.Variables) && equalObject(a.Metadata, b.Metadata)
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

// equalObject reports whether two JSON objects are deeply equal.
func equalObject(x, y map[string]any) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		w, ok := y[k]
		if !ok || !equalValue(v, w) {
			return false
		}
	}
	return true
}

func equalValue(a, b any) bool {
	switch x := a.(type) {
	// The common scalars first, each compared without the generic
	// interface comparison.
	case string:
		y, ok := b.(string)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case int:
		y, ok := b.(int)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && equalObject(x, y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case []string:
		y, ok := b.([]string)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
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
