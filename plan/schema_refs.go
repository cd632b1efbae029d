package plan

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The validator follows $ref without a bound: a schema whose references
// loop back without moving into the plan ({"$defs": {"a": {"anyOf":
// [{"$ref": "#/$defs/a"}]}}}) would recurse until the process dies, an
// error no recover can catch. CompileSchema therefore follows every
// reference the way the validator resolves them and refuses such loops.

// refIndex finds what a schema's references point at.
type refIndex struct {
	draft7 bool
	path   map[*jsonschema.Schema]string // JSON Pointer from the root ("" for it)
	at     map[string]*jsonschema.Schema // the inverse
	base   map[*jsonschema.Schema]*jsonschema.Schema
	uri    map[*jsonschema.Schema]*url.URL // of base schemas
	byURI  map[string]*jsonschema.Schema
	anchor map[*jsonschema.Schema]map[string]anchorAt // per base
}

type anchorAt struct {
	s       *jsonschema.Schema
	dynamic bool
}

func newRefIndex(root *jsonschema.Schema, draft7 bool) (*refIndex, error) {
	x := &refIndex{
		draft7: draft7,
		path:   map[*jsonschema.Schema]string{},
		at:     map[string]*jsonschema.Schema{},
		base:   map[*jsonschema.Schema]*jsonschema.Schema{},
		uri:    map[*jsonschema.Schema]*url.URL{root: {}},
		byURI:  map[string]*jsonschema.Schema{"": root},
		anchor: map[*jsonschema.Schema]map[string]anchorAt{},
	}
	if err := x.walk(root, root, ""); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *refIndex) setAnchor(base *jsonschema.Schema, name string, s *jsonschema.Schema, dynamic bool) {
	if name == "" {
		return
	}
	if x.anchor[base] == nil {
		x.anchor[base] = map[string]anchorAt{}
	}
	x.anchor[base][name] = anchorAt{s, dynamic}
}

func (x *refIndex) walk(s, base *jsonschema.Schema, path string) error {
	x.path[s], x.at[path] = path, s
	if s.ID != "" && !(x.draft7 && s.Ref != "") {
		id, err := url.Parse(s.ID)
		if err != nil {
			return err
		}
		if x.draft7 && id.Fragment != "" && strings.HasPrefix(s.ID, "#") {
			x.setAnchor(base, id.Fragment, s, false)
		} else {
			u := x.uri[base].ResolveReference(id)
			x.uri[s], x.byURI[u.String()] = u, s
			base = s
		}
	}
	x.base[s] = base
	if !x.draft7 {
		x.setAnchor(base, s.Anchor, s, false)
		x.setAnchor(base, s.DynamicAnchor, s, true)
	}
	for _, e := range edges(s) {
		if err := x.walk(e.child, base, path+e.segment()); err != nil {
			return err
		}
	}
	return nil
}

// segment is the JSON Pointer step from a schema to the child e holds.
func (e edge) segment() string {
	seg := "/" + e.kw
	if e.hasKey {
		seg += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(e.key)
	}
	if e.index >= 0 {
		seg += fmt.Sprintf("/%d", e.index)
	}
	return seg
}

// targets are the schemas a $ref or $dynamicRef of s may lead to.
func (x *refIndex) targets(s *jsonschema.Schema, ref string, dynamic bool) ([]*jsonschema.Schema, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	u = x.uri[x.base[s]].ResolveReference(u)
	frag := u.Fragment
	doc := *u
	doc.Fragment, doc.RawFragment = "", ""
	res, ok := x.byURI[doc.String()]
	if !ok {
		return nil, fmt.Errorf("%s names no schema in the document", ref)
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		t, ok := x.at[x.path[res]+frag]
		if !ok {
			return nil, fmt.Errorf("%s names no schema in the document", ref)
		}
		return []*jsonschema.Schema{t}, nil
	}
	a, ok := x.anchor[res][frag]
	if !ok {
		return nil, fmt.Errorf("%s names no anchor in the document", ref)
	}
	out := []*jsonschema.Schema{a.s}
	if dynamic && a.dynamic {
		// Resolved at validation time: any schema with this dynamic
		// anchor may be the one.
		for _, m := range x.anchor {
			if b, ok := m[frag]; ok && b.dynamic && b.s != a.s {
				out = append(out, b.s)
			}
		}
	}
	return out, nil
}

// inPlace are the schemas the validator applies to the same value as s.
func (x *refIndex) inPlace(s *jsonschema.Schema) ([]*jsonschema.Schema, error) {
	var out []*jsonschema.Schema
	if s.Ref != "" {
		t, err := x.targets(s, s.Ref, false)
		if err != nil {
			return nil, fmt.Errorf("$ref %w", err)
		}
		out = append(out, t...)
		if x.draft7 {
			// draft-07 ignores the keywords beside a $ref.
			return out, nil
		}
	}
	if s.DynamicRef != "" {
		t, err := x.targets(s, s.DynamicRef, true)
		if err != nil {
			return nil, fmt.Errorf("$dynamicRef %w", err)
		}
		out = append(out, t...)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, c := range []*jsonschema.Schema{s.Not, s.If, s.Then, s.Else} {
		if c != nil {
			out = append(out, c)
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.DependentSchemas, s.DependencySchemas} {
		for _, k := range sortedSchemaKeys(m) {
			out = append(out, m[k])
		}
	}
	return out, nil
}

// checkLoops refuses references that lead back to a schema already being
// applied to the same value.
func (x *refIndex) checkLoops(root *jsonschema.Schema) error {
	const (
		unseen = iota
		open
		done
	)
	state := map[*jsonschema.Schema]int{}
	var stack []*jsonschema.Schema
	var visit func(s *jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		state[s] = open
		stack = append(stack, s)
		next, err := x.inPlace(s)
		if err != nil {
			return fmt.Errorf("%s: %w", x.name(s), err)
		}
		for _, t := range next {
			switch state[t] {
			case open:
				i := slices.Index(stack, t)
				var names []string
				for _, u := range append(stack[i:], t) {
					names = append(names, x.name(u))
				}
				return fmt.Errorf("the schema applies itself to the same value without end: %s", strings.Join(names, " → "))
			case unseen:
				if err := visit(t); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[s] = done
		return nil
	}
	// Every schema starts a search: a loop may hang off any of them.
	paths := make([]string, 0, len(x.at))
	for p := range x.at {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if s := x.at[p]; state[s] == unseen {
			if err := visit(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxApplied bounds how many schemas the validator may apply along one
// path of a plan: references that fan out ({"allOf": [{"$ref":
// "#/$defs/b"}, {"$ref": "#/$defs/b"}]} with b doing the same, and so on)
// multiply without looping, and forty levels would take years to check a
// plan.
const maxApplied = 10000

// maxPlanDepth is how deep a plan's JSON goes: post.commands[i].args[j].
const maxPlanDepth = 5

// checkFanOut refuses a schema that applies more than maxApplied schemas
// to a plan with one item per array. It runs after checkLoops: the
// in-place graph is acyclic, and moving into a value is bounded by the
// plan's depth.
func (x *refIndex) checkFanOut(root *jsonschema.Schema) error {
	type at struct {
		s     *jsonschema.Schema
		depth int
	}
	cost := map[at]int{}
	var count func(s *jsonschema.Schema, depth int) int
	count = func(s *jsonschema.Schema, depth int) int {
		if depth > maxPlanDepth {
			return 0
		}
		if c, ok := cost[at{s, depth}]; ok {
			return c
		}
		c := 1
		next, _ := x.inPlace(s) // resolved once already by checkLoops
		for _, t := range next {
			c = min(c+count(t, depth), maxApplied+1)
		}
		for _, e := range edges(s) {
			switch e.kw {
			case "$defs", "definitions", "contentSchema", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies":
				// Not applied, or applied in place (counted above).
			default:
				c = min(c+count(e.child, depth+1), maxApplied+1)
			}
		}
		cost[at{s, depth}] = c
		return c
	}
	if c := count(root, 0); c > maxApplied {
		return fmt.Errorf("the schema applies more than %d schemas along one path of a plan through its references: the plan could not be checked in bounded time", maxApplied)
	}
	return nil
}

func (x *refIndex) name(s *jsonschema.Schema) string {
	if p := x.path[s]; p != "" {
		return p
	}
	return "root"
}

func sortedSchemaKeys(m map[string]*jsonschema.Schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
