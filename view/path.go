package view

import (
	"strconv"
	"strings"
)

// A dotted path names a place in a JSON document: "meta.internal_id",
// "items.0.name". A backslash escapes a dot or a backslash inside a key
// ("a\.b" is the single key "a.b"). A segment that is a non-negative integer
// also indexes arrays.
type path []segment

type segment struct {
	key   string
	index int // >= 0 when key is a decimal array index, else -1
}

func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(s.key))
	}
	return b.String()
}

// parsePath parses a dotted path; where names the place in the hints for errors.
func parsePath(src, where string) (path, error) {
	if src == "" {
		return nil, errorf(CodeInvalidPath, where, "empty path")
	}
	var (
		p   path
		cur strings.Builder
	)
	flush := func(at int) error {
		if cur.Len() == 0 {
			return errorf(CodeInvalidPath, where, "empty segment at offset %d in %q", at, src)
		}
		k := cur.String()
		idx := -1
		if n, err := strconv.Atoi(k); err == nil && n >= 0 && strconv.Itoa(n) == k {
			idx = n
		}
		p = append(p, segment{key: k, index: idx})
		cur.Reset()
		return nil
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\\':
			if i+1 >= len(src) || (src[i+1] != '.' && src[i+1] != '\\') {
				return nil, errorf(CodeInvalidPath, where, `stray backslash at offset %d in %q: only "\." and "\\" are escapes`, i, src)
			}
			i++
			cur.WriteByte(src[i])
		case '.':
			if err := flush(i); err != nil {
				return nil, err
			}
		default:
			cur.WriteByte(c)
		}
	}
	if err := flush(len(src)); err != nil {
		return nil, err
	}
	return p, nil
}

// lookup follows p from v; ok is false when some step does not exist.
func lookup(v any, p path) (any, bool) {
	for _, s := range p {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[s.key]; !ok {
				return nil, false
			}
		case []any:
			if s.index < 0 || s.index >= len(x) {
				return nil, false
			}
			v = x[s.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// trie is a set of paths sharing prefixes; end marks a complete path.
type trie struct {
	end  bool
	next map[string]*trie
}

func newTrie(paths []path) *trie {
	if len(paths) == 0 {
		return nil
	}
	root := &trie{}
	for _, p := range paths {
		n := root
		for _, s := range p {
			if n.next == nil {
				n.next = map[string]*trie{}
			}
			c := n.next[s.key]
			if c == nil {
				c = &trie{}
				n.next[s.key] = c
			}
			n = c
		}
		n.end = true
	}
	return root
}

// include keeps only the values found at the trie's paths. Paths pass through
// arrays: "items.name" keeps the name of every object in items. Containers
// left with nothing in them are dropped; ok reports whether anything was kept.
// The input is never modified.
func include(v any, t *trie) (any, bool) {
	if t.end {
		return v, true
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t.next))
		for k, child := range t.next {
			if cv, ok := x[k]; ok {
				if r, ok := include(cv, child); ok {
					out[k] = r
				}
			}
		}
		return out, len(out) > 0
	case []any:
		var out []any
		for _, e := range x {
			if r, ok := include(e, t); ok {
				out = append(out, r)
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// exclude removes the values at the trie's paths, passing through arrays like
// include. It copies only the containers it changes and never modifies the
// input; changed reports whether anything was removed.
func exclude(v any, t *trie) (out any, changed bool) {
	switch x := v.(type) {
	case map[string]any:
		var m map[string]any
		for k, child := range t.next {
			cv, ok := x[k]
			if !ok {
				continue
			}
			if child.end {
				if m == nil {
					m = cloneMap(x)
				}
				delete(m, k)
				continue
			}
			if nv, ch := exclude(cv, child); ch {
				if m == nil {
					m = cloneMap(x)
				}
				m[k] = nv
			}
		}
		if m == nil {
			return x, false
		}
		return m, true
	case []any:
		var a []any
		for i, e := range x {
			if ne, ch := exclude(e, t); ch {
				if a == nil {
					a = append([]any(nil), x...)
				}
				a[i] = ne
			}
		}
		if a == nil {
			return x, false
		}
		return a, true
	}
	return v, false
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}
