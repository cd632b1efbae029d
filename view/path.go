package view

import (
	"strconv"
	"strings"
)

// A dotted path names a place in a JSON document: "meta.internal_id",
// "items.0.name". A backslash escapes a dot or a backslash inside a key
// ("a\.b" is the single key "a.b"). A segment that is a non-negative integer
// names an object key and also indexes arrays.
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
	end     bool
	next    map[string]*trie
	indexed bool  // some key in next is an array index
	self    nodes // nodes{this node}, kept so walks need not allocate it
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
			if s.index >= 0 {
				n.indexed = true
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
	root.fill()
	return root
}

func (t *trie) fill() {
	t.self = nodes{t}
	for _, c := range t.next {
		c.fill()
	}
}

// nodes is the set of trie nodes that apply at one place of a document:
// where paths pass through arrays, an element is reached both by the paths
// that apply to every element and by those naming its index.
type nodes []*trie

func (ns nodes) end() bool {
	for _, n := range ns {
		if n.end {
			return true
		}
	}
	return false
}

// child returns the nodes that apply under key k.
func (ns nodes) child(k string) nodes {
	if len(ns) == 1 {
		if c := ns[0].next[k]; c != nil {
			return c.self
		}
		return nil
	}
	var out nodes
	for _, n := range ns {
		if c := n.next[k]; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// element returns the nodes that apply to element i of an array.
func (ns nodes) element(i int) nodes {
	out := ns
	for _, n := range ns {
		if n.indexed {
			if c := n.next[strconv.Itoa(i)]; c != nil {
				if len(out) == len(ns) {
					out = append(nodes(nil), ns...)
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// keys calls f once for each key that some node has a child for.
func (ns nodes) keys(f func(string)) {
	if len(ns) == 1 {
		for k := range ns[0].next {
			f(k)
		}
		return
	}
	seen := map[string]bool{}
	for _, n := range ns {
		for k := range n.next {
			if !seen[k] {
				seen[k] = true
				f(k)
			}
		}
	}
}

// include keeps only the values found at the paths. Paths pass through
// arrays: "items.name" keeps the name of every object in items, and
// "items.0" keeps the first item. Containers left with nothing in them are
// dropped; ok reports whether anything was kept. The input is never modified.
func include(v any, ns nodes) (any, bool) {
	if ns.end() {
		return v, true
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		ns.keys(func(k string) {
			if cv, ok := x[k]; ok {
				if r, ok := include(cv, ns.child(k)); ok {
					out[k] = r
				}
			}
		})
		return out, len(out) > 0
	case []any:
		var out []any
		for i, e := range x {
			if r, ok := include(e, ns.element(i)); ok {
				out = append(out, r)
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// exclude removes the values at the paths, passing through arrays like
// include ("items.0" removes the first item). It copies only the containers
// it changes and never modifies the input; changed reports a removal.
func exclude(v any, ns nodes) (out any, changed bool) {
	switch x := v.(type) {
	case map[string]any:
		var m map[string]any
		ns.keys(func(k string) {
			cv, ok := x[k]
			if !ok {
				return
			}
			c := ns.child(k)
			if c.end() {
				if m == nil {
					m = cloneMap(x)
				}
				delete(m, k)
				return
			}
			if nv, ch := exclude(cv, c); ch {
				if m == nil {
					m = cloneMap(x)
				}
				m[k] = nv
			}
		})
		if m == nil {
			return x, false
		}
		return m, true
	case []any:
		var a []any // the copy, begun at the first change
		for i, e := range x {
			en := ns.element(i)
			ne, ch := e, false
			drop := en.end()
			if !drop {
				ne, ch = exclude(e, en)
			}
			if (drop || ch) && a == nil {
				a = append(make([]any, 0, len(x)), x[:i]...)
			}
			if a != nil && !drop {
				a = append(a, ne)
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
