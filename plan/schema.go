package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The validator behind Schema is github.com/google/jsonschema-go: it is
// already linked in through the MCP SDK and, unlike validators that compile
// their metaschemas in a package init, costs nothing until a schema is used.
// Its errors name the schema keyword that failed but not the place in the
// plan; locate recovers that place (diffs[0].path) by following the chain
// of schemas the error reports through the plan's JSON.

const (
	// maxSchemaBytes bounds a --schema document; a plan schema is a few
	// hundred bytes, so a megabyte is generous.
	maxSchemaBytes = 1 << 20
	// maxLocateChecks bounds the work spent finding where a failure is:
	// past it the error names the nearest place known for certain.
	maxLocateChecks = 4096
	// maxQuotedRunes bounds a plan value quoted in a message (a unified
	// diff can be megabytes long).
	maxQuotedRunes = 80
	// maxSchemaMsg bounds a message taken from the validator as is.
	maxSchemaMsg = 300
)

// Schema is a compiled JSON Schema (draft 2020-12 or draft-07) a plan must
// satisfy.
type Schema struct {
	res  *jsonschema.Resolved
	refs *refIndex
	// byName finds a subschema by the name the validator's errors give it:
	// "root", its JSON Pointer from the root, or its $id.
	byName map[string]*jsonschema.Schema
	draft  string
}

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless its
// $schema names draft-07). It loads nothing from the network or the file
// system: references must stay inside the document.
func CompileSchema(doc []byte) (*Schema, error) {
	if len(doc) > maxSchemaBytes {
		return nil, &Error{Code: CodeSchema, Msg: fmt.Sprintf("the schema is %d bytes, more than %d", len(doc), maxSchemaBytes)}
	}
	if !json.Valid(doc) {
		return nil, &Error{Code: CodeSchema, Msg: "the schema is not valid JSON"}
	}
	root := new(jsonschema.Schema)
	if err := json.Unmarshal(doc, root); err != nil {
		return nil, &Error{Code: CodeSchema, Msg: "the schema is not a JSON Schema", Err: err}
	}
	switch root.Schema {
	case "", "https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
	default:
		return nil, &Error{Code: CodeSchema, Msg: fmt.Sprintf("$schema %q is not supported: use draft 2020-12 (%q) or draft-07", root.Schema, "https://json-schema.org/draft/2020-12/schema")}
	}
	res, err := root.Resolve(&jsonschema.ResolveOptions{Loader: refuseLoad})
	if err != nil {
		return nil, &Error{Code: CodeSchema, Msg: "the schema does not compile", Err: err}
	}
	refs, err := newRefIndex(root, strings.Contains(root.Schema, "draft-07"))
	if err == nil {
		err = refs.checkLoops(root)
	}
	if err == nil {
		err = refs.checkFanOut(root)
	}
	if err != nil {
		return nil, &Error{Code: CodeSchema, Msg: "the schema does not compile", Err: err}
	}
	s := &Schema{res: res, refs: refs, byName: map[string]*jsonschema.Schema{}, draft: root.Schema}
	for sub, path := range refs.path {
		switch {
		case sub.ID != "":
			s.byName[sub.ID] = sub
		case path == "":
			s.byName["root"] = sub
		default:
			s.byName[path] = sub
		}
	}
	if err := s.checkTypes(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkTypes refuses a "type" the validator would let through unnoticed:
// a misspelt type name would otherwise refuse every plan, or none.
func (s *Schema) checkTypes() error {
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		sub := s.byName[n]
		for _, t := range append([]string{sub.Type}, sub.Types...) {
			switch t {
			case "", "null", "boolean", "object", "array", "number", "integer", "string":
			default:
				return &Error{Code: CodeSchema, Msg: fmt.Sprintf("the schema does not compile: %s: type %q is not one of null, boolean, object, array, number, integer, string", n, t)}
			}
		}
	}
	return nil
}

// refuseLoad refuses every reference to a document outside the schema.
func refuseLoad(u *url.URL) (*jsonschema.Schema, error) {
	return nil, fmt.Errorf("the schema refers to %s: references outside the schema document are not loaded", u)
}

// edge is one subschema of a schema: the keyword holding it and, for
// keywords holding several, its key or index.
type edge struct {
	kw     string
	key    string
	hasKey bool
	index  int
	child  *jsonschema.Schema
}

func edges(s *jsonschema.Schema) []edge {
	var out []edge
	one := func(kw string, c *jsonschema.Schema) {
		if c != nil {
			out = append(out, edge{kw: kw, index: -1, child: c})
		}
	}
	list := func(kw string, cs []*jsonschema.Schema) {
		for i, c := range cs {
			out = append(out, edge{kw: kw, index: i, child: c})
		}
	}
	keyed := func(kw string, m map[string]*jsonschema.Schema) {
		for k, c := range m {
			out = append(out, edge{kw: kw, key: k, hasKey: true, index: -1, child: c})
		}
	}
	keyed("$defs", s.Defs)
	keyed("definitions", s.Definitions)
	keyed("dependencies", s.DependencySchemas)
	list("prefixItems", s.PrefixItems)
	one("items", s.Items)
	list("items", s.ItemsArray)
	one("additionalItems", s.AdditionalItems)
	one("contains", s.Contains)
	one("unevaluatedItems", s.UnevaluatedItems)
	keyed("properties", s.Properties)
	keyed("patternProperties", s.PatternProperties)
	one("additionalProperties", s.AdditionalProperties)
	one("propertyNames", s.PropertyNames)
	one("unevaluatedProperties", s.UnevaluatedProperties)
	list("allOf", s.AllOf)
	list("anyOf", s.AnyOf)
	list("oneOf", s.OneOf)
	one("not", s.Not)
	one("if", s.If)
	one("then", s.Then)
	one("else", s.Else)
	keyed("dependentSchemas", s.DependentSchemas)
	one("contentSchema", s.ContentSchema)
	return out
}

// Validate checks p against s. The error names the plan's field at fault
// ("diffs[0].path: ...") and the schema's complaint.
func Validate(p *Plan, s *Schema) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	var inst any
	if err := json.Unmarshal(data, &inst); err != nil {
		return err
	}
	err = s.res.Validate(inst)
	if err == nil {
		return nil
	}
	field, msg := s.locate(inst, err)
	if field == "" {
		field = "plan"
	}
	return &Error{Code: CodeSchema, Path: field, Msg: "schema: " + msg}
}

// step is one move from a value to a part of it: a property or an item.
type step struct {
	key   string
	index int // -1 for a property
}

// locator follows a validation error's chain of schemas through a plan.
type locator struct {
	s      *Schema
	frames []*jsonschema.Schema
	leaf   string
	checks int
	name   string // the property name propertyNames refused
	probes map[*jsonschema.Schema]*jsonschema.Resolved
	wholes map[*jsonschema.Schema]*jsonschema.Resolved
}

// locate says where in inst the failure err reports lies and what is
// wrong there. When a step cannot be decided it names the nearest place
// known for certain and passes the validator's own message on.
func (s *Schema) locate(inst any, err error) (string, string) {
	names, leaf := unchain(err)
	l := &locator{s: s, leaf: leaf, probes: map[*jsonschema.Schema]*jsonschema.Resolved{}, wholes: map[*jsonschema.Schema]*jsonschema.Resolved{}}
	for _, n := range names {
		f, ok := s.byName[n]
		if !ok {
			return "", oneLine(leaf)
		}
		l.frames = append(l.frames, f)
	}
	if len(l.frames) == 0 {
		return "", oneLine(leaf)
	}
	path, v, ok := l.search(0, inst, nil)
	if !ok {
		return l.certain(inst), oneLine(leaf)
	}
	msg := l.message(l.frames[len(l.frames)-1], v)
	if l.name != "" {
		msg = "property name " + quote(l.name) + ": " + msg
	}
	return render(path), msg
}

// unchain splits the validator's error, "validating A: validating B: X",
// into the names of the schemas it passed through and the final complaint.
func unchain(err error) ([]string, string) {
	var names []string
	for e := err; ; {
		inner := errors.Unwrap(e)
		msg := e.Error()
		if inner == nil {
			return names, msg
		}
		rest := ": " + inner.Error()
		name, ok := strings.CutPrefix(strings.TrimSuffix(msg, rest), "validating ")
		if !ok || !strings.HasSuffix(msg, rest) {
			return names, msg
		}
		names = append(names, name)
		e = inner
	}
}

// move is how the value changes from one schema of the chain to the next.
type move int

const (
	moveSame     move = iota // an in-place applicator or a $ref: same value
	moveKey                  // a named property
	moveIndex                // a given item
	moveAnyItem              // one of the items from an index on
	moveAnyKey               // one of the properties a filter admits
	moveNameOnly             // propertyNames: the value becomes a key
)

type transition struct {
	m     move
	key   string
	index int
	keyOK func(string) bool
	// cond, when set, says whether a value reaches the next schema at all
	// (then, else and dependentSchemas apply only under a condition).
	cond func(any) bool
}

// relate says how the chain moves from schema a to schema b.
func (l *locator) relate(a, b *jsonschema.Schema) transition {
	// A $ref (or $dynamicRef) that names b by its pointer is a jump, even
	// when b happens to sit under a.
	for _, ref := range []struct {
		s       string
		dynamic bool
	}{{a.Ref, false}, {a.DynamicRef, true}} {
		if ref.s == "" {
			continue
		}
		if t, err := l.s.refs.targets(a, ref.s, ref.dynamic); err == nil && slices.Contains(t, b) {
			return transition{m: moveSame}
		}
	}
	for name, c := range a.Properties {
		if c == b {
			return transition{m: moveKey, key: name}
		}
	}
	if i := slices.Index(a.PrefixItems, b); i >= 0 {
		return transition{m: moveIndex, index: i}
	}
	if i := slices.Index(a.ItemsArray, b); i >= 0 {
		return transition{m: moveIndex, index: i}
	}
	switch b {
	case a.Items:
		if l.s.draft == "" || strings.Contains(l.s.draft, "2020-12") {
			return transition{m: moveAnyItem, index: len(a.PrefixItems)}
		}
		return transition{m: moveAnyItem}
	case a.AdditionalItems:
		return transition{m: moveAnyItem, index: len(a.ItemsArray)}
	case a.UnevaluatedItems:
		// Items its own prefixItems evaluated are not among them (those
		// an in-place applicator evaluated are not told apart).
		return transition{m: moveAnyItem, index: len(a.PrefixItems)}
	case a.AdditionalProperties, a.UnevaluatedProperties:
		// The names a's own properties and patternProperties evaluate are
		// not among them.
		return transition{m: moveAnyKey, keyOK: func(k string) bool {
			if _, ok := a.Properties[k]; ok {
				return false
			}
			for re := range a.PatternProperties {
				if m, err := regexp.MatchString(re, k); err == nil && m {
					return false
				}
			}
			return true
		}}
	case a.PropertyNames:
		return transition{m: moveNameOnly}
	}
	switch b {
	case a.Then:
		return transition{m: moveSame, cond: func(v any) bool { return l.passes(a.If, v) }}
	case a.Else:
		return transition{m: moveSame, cond: func(v any) bool { return a.If != nil && !l.passes(a.If, v) && l.judgeable(a.If) }}
	}
	for _, m := range []map[string]*jsonschema.Schema{a.DependentSchemas, a.DependencySchemas} {
		for name, c := range m {
			if c == b {
				return transition{m: moveSame, cond: func(v any) bool {
					obj, ok := v.(map[string]any)
					_, has := obj[name]
					return ok && has
				}}
			}
		}
	}
	for re, c := range a.PatternProperties {
		if c == b {
			return transition{m: moveAnyKey, keyOK: func(k string) bool {
				m, err := regexp.MatchString(re, k)
				return err == nil && m
			}}
		}
	}
	return transition{m: moveSame}
}

// search follows the chain from frame k with value v at path; it returns
// the path and value where the last frame's complaint holds.
func (l *locator) search(k int, v any, path []step) ([]step, any, bool) {
	if k == len(l.frames)-1 {
		return path, v, l.leafHolds(l.frames[k], v)
	}
	t := l.relate(l.frames[k], l.frames[k+1])
	switch t.m {
	case moveSame:
		if t.cond != nil && !t.cond(v) {
			return nil, nil, false
		}
		return l.search(k+1, v, path)
	case moveKey:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		c, ok := obj[t.key]
		if !ok {
			return nil, nil, false
		}
		return l.search(k+1, c, append(path, step{key: t.key, index: -1}))
	case moveIndex:
		arr, ok := v.([]any)
		if !ok || t.index >= len(arr) {
			return nil, nil, false
		}
		return l.search(k+1, arr[t.index], append(path, step{index: t.index}))
	case moveAnyItem:
		arr, ok := v.([]any)
		if !ok {
			return nil, nil, false
		}
		// The validator reports the first item that fails.
		for i := t.index; i < len(arr) && l.checks < maxLocateChecks; i++ {
			if p, w, ok := l.search(k+1, arr[i], append(slices.Clip(path), step{index: i})); ok {
				return p, w, true
			}
		}
		return nil, nil, false
	case moveAnyKey:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		for _, key := range sortedKeys(obj) {
			if l.checks >= maxLocateChecks {
				break
			}
			if !t.keyOK(key) {
				continue
			}
			if p, w, ok := l.search(k+1, obj[key], append(slices.Clip(path), step{key: key, index: -1})); ok {
				return p, w, true
			}
		}
		return nil, nil, false
	case moveNameOnly:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		// A property's name is no place in the plan: the object is, and
		// the message names the property.
		for _, key := range sortedKeys(obj) {
			if _, w, ok := l.search(k+1, key, path); ok {
				l.name = key
				return path, w, true
			}
		}
		return nil, nil, false
	}
	return nil, nil, false
}

// certain is the path up to the first step that needs a search: the
// nearest place the failure is known to lie in.
func (l *locator) certain(inst any) string {
	var path []step
	v := inst
	for k := 0; k+1 < len(l.frames); k++ {
		t := l.relate(l.frames[k], l.frames[k+1])
		switch t.m {
		case moveSame:
			continue
		case moveKey:
			obj, ok := v.(map[string]any)
			if !ok {
				return render(path)
			}
			if v, ok = obj[t.key]; !ok {
				return render(path)
			}
			path = append(path, step{key: t.key, index: -1})
		case moveIndex:
			arr, ok := v.([]any)
			if !ok || t.index >= len(arr) {
				return render(path)
			}
			v = arr[t.index]
			path = append(path, step{index: t.index})
		default:
			return render(path)
		}
	}
	return render(path)
}

// leafHolds reports whether v fails schema s the way the validator said
// the plan does. It checks v against s alone: its assertions, or all of
// it when the complaint came from an applicator (anyOf, not, ...) and s
// stands without references.
func (l *locator) leafHolds(s *jsonschema.Schema, v any) bool {
	l.checks++
	probe, ok := l.probes[s]
	if !ok {
		probe = l.probe(s)
		l.probes[s] = probe
	}
	if probe == nil {
		return false
	}
	err := probe.Validate(v)
	if err == nil {
		return false
	}
	// The same keyword failing on v is enough: items are tried in the
	// validator's order, and any property refused this way is at fault.
	_, got := unchain(err)
	return got == l.leaf || keyword(got) != "" && keyword(got) == keyword(l.leaf)
}

const additionalKeyword = "unexpected additional properties"

// passes reports whether v satisfies s judged alone; false when s cannot
// be judged alone (it holds references).
func (l *locator) passes(s *jsonschema.Schema, v any) bool {
	if s == nil {
		return true
	}
	r := l.whole(s)
	return r != nil && r.Validate(v) == nil
}

// judgeable reports whether s can be judged alone.
func (l *locator) judgeable(s *jsonschema.Schema) bool { return l.whole(s) != nil }

// whole resolves a copy of s on its own, nil when s holds references.
func (l *locator) whole(s *jsonschema.Schema) *jsonschema.Resolved {
	if r, ok := l.wholes[s]; ok {
		return r
	}
	var r *jsonschema.Resolved
	if s.Ref == "" && s.DynamicRef == "" {
		p := s.CloneSchemas()
		p.ID, p.Schema = "", l.s.draft
		r, _ = p.Resolve(&jsonschema.ResolveOptions{Loader: refuseLoad})
	}
	l.wholes[s] = r
	return r
}

func (l *locator) probe(s *jsonschema.Schema) *jsonschema.Resolved {
	var p *jsonschema.Schema
	switch keyword(l.leaf) {
	case "anyOf", "oneOf", "not", "contains", "minContains", "maxContains":
		p = s.CloneSchemas()
		p.ID, p.Ref, p.DynamicRef = "", "", ""
	default:
		p = assertions(s)
	}
	p.Schema = l.s.draft
	r, err := p.Resolve(&jsonschema.ResolveOptions{Loader: refuseLoad})
	if err != nil {
		return nil
	}
	return r
}

// assertions copies the keywords of s that judge a value on their own.
func assertions(s *jsonschema.Schema) *jsonschema.Schema {
	p := &jsonschema.Schema{
		Type: s.Type, Types: s.Types, Enum: s.Enum, Const: s.Const,
		MultipleOf: s.MultipleOf, Minimum: s.Minimum, Maximum: s.Maximum,
		ExclusiveMinimum: s.ExclusiveMinimum, ExclusiveMaximum: s.ExclusiveMaximum,
		MinLength: s.MinLength, MaxLength: s.MaxLength, Pattern: s.Pattern,
		MinItems: s.MinItems, MaxItems: s.MaxItems, UniqueItems: s.UniqueItems,
		MinProperties: s.MinProperties, MaxProperties: s.MaxProperties,
		Required: s.Required, DependentRequired: s.DependentRequired, DependencyStrings: s.DependencyStrings,
	}
	// "additionalProperties": false judges names only; keep what it
	// needs to know which names are declared.
	if a := s.AdditionalProperties; a != nil && a.Not != nil && isEmpty(a.Not) {
		p.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
		if len(s.Properties) > 0 {
			p.Properties = map[string]*jsonschema.Schema{}
			for k := range s.Properties {
				p.Properties[k] = &jsonschema.Schema{}
			}
		}
		if len(s.PatternProperties) > 0 {
			p.PatternProperties = map[string]*jsonschema.Schema{}
			for k := range s.PatternProperties {
				p.PatternProperties[k] = &jsonschema.Schema{}
			}
		}
	}
	return p
}

func isEmpty(s *jsonschema.Schema) bool {
	return reflect.ValueOf(*s).IsZero()
}

// keyword is the schema keyword a validator message starts with.
func keyword(msg string) string {
	if strings.HasPrefix(msg, additionalKeyword) {
		return additionalKeyword
	}
	k, _, ok := strings.Cut(msg, ":")
	if !ok || strings.ContainsAny(k, " \n") {
		return ""
	}
	if i := strings.IndexByte(k, '['); i > 0 {
		k = k[:i]
	}
	return k
}

// message says what is wrong with v under schema s, in ctxkit's words
// where the keyword is a common one and the validator's otherwise.
func (l *locator) message(s *jsonschema.Schema, v any) string {
	switch kw := keyword(l.leaf); kw {
	case "type":
		want := s.Type
		if want == "" {
			want = strings.Join(s.Types, " or ")
		}
		return fmt.Sprintf("got %s, want %s", typeOf(v), want)
	case "enum":
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = quoteJSON(e)
		}
		return "value must be one of " + strings.Join(vals, ", ")
	case "const":
		if s.Const != nil {
			return "value must be " + quoteJSON(*s.Const)
		}
	case "pattern":
		if str, ok := v.(string); ok {
			return fmt.Sprintf("%s does not match pattern %s", quote(str), quote(s.Pattern))
		}
	case "minLength", "maxLength":
		if str, ok := v.(string); ok {
			return fmt.Sprintf("%s: got %d, want %d", kw, utf8.RuneCountInString(str), bound(kw, s))
		}
	case "minItems", "maxItems":
		if arr, ok := v.([]any); ok {
			return fmt.Sprintf("%s: got %d, want %d", kw, len(arr), bound(kw, s))
		}
	case "minProperties", "maxProperties":
		if obj, ok := v.(map[string]any); ok {
			return fmt.Sprintf("%s: got %d, want %d", kw, len(obj), bound(kw, s))
		}
	case "required":
		if obj, ok := v.(map[string]any); ok {
			var missing []string
			for _, r := range s.Required {
				if _, ok := obj[r]; !ok {
					missing = append(missing, quote(r))
				}
			}
			if len(missing) == 1 {
				return "missing property " + missing[0]
			}
			if len(missing) > 1 {
				return "missing properties " + strings.Join(missing, ", ")
			}
		}
	case additionalKeyword:
		if obj, ok := v.(map[string]any); ok {
			keyOK := l.relateExtra(s)
			var extra []string
			for _, k := range sortedKeys(obj) {
				if keyOK(k) {
					extra = append(extra, quote(k))
				}
			}
			if len(extra) > 0 {
				return "additional properties " + strings.Join(extra, ", ") + " not allowed"
			}
		}
	}
	return oneLine(l.leaf)
}

// relateExtra admits the property names s does not declare.
func (l *locator) relateExtra(s *jsonschema.Schema) func(string) bool {
	return l.relate(s, s.AdditionalProperties).keyOK
}

func bound(kw string, s *jsonschema.Schema) int {
	var p *int
	switch kw {
	case "minLength":
		p = s.MinLength
	case "maxLength":
		p = s.MaxLength
	case "minItems":
		p = s.MinItems
	case "maxItems":
		p = s.MaxItems
	case "minProperties":
		p = s.MinProperties
	case "maxProperties":
		p = s.MaxProperties
	}
	if p == nil {
		return 0
	}
	return *p
}

func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// quote writes a string in single quotes, cut to maxQuotedRunes.
func quote(s string) string {
	if utf8.RuneCountInString(s) > maxQuotedRunes {
		r := []rune(s)
		s = string(r[:maxQuotedRunes]) + "…"
	}
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
	return "'" + strings.ReplaceAll(q, "'", `\'`) + "'"
}

func quoteJSON(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return oneLine(string(b))
}

// oneLine keeps a message to one bounded line: ctxkit apply reports an
// error on one line of stderr.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > maxSchemaMsg {
		cut := maxSchemaMsg
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// render writes a path as diffs[0].path.
func render(path []step) string {
	var b strings.Builder
	for _, s := range path {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}
