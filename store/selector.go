package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/view"
)

// Selector bounds. A selector is compiled once and matched against every
// change of its owner, so each part is bounded.
const (
	MaxSelectorBytes  = 16 << 10 // the selector's JSON form, canonical
	MaxConditions     = 16       // context_match entries
	MaxConditionPath  = 1 << 10  // one condition's JSONPath
	MaxConditionValue = 1 << 10  // one condition's value, as canonical JSON
	MaxInValues       = 64       // elements of an "in" condition's array
)

// The sizes are those of the canonical form (internal/canonjson: no
// escapes a string does not need), not of the bytes as sent or stored: a
// JSON writer that escapes "<" as \u003c makes the same selector up to
// six times longer, and a selector accepted once must read back. The
// bytes given are bounded at maxEscaped times the limit before decoding.
const maxEscaped = 6

// Op is a context condition's comparison.
type Op string

// The comparisons of a context condition. A condition's path may select
// several nodes or none: eq, gt, lt, in and contains hold when at least
// one selected node passes; ne is the negation of eq (no selected node
// equals the value, which also holds when the path selects nothing);
// exists holds when the path selects at least one node (with value false:
// when it selects none).
const (
	OpEq       Op = "eq"       // JSON equality; numbers by value (1 = 1.0)
	OpNe       Op = "ne"       // not eq
	OpGt       Op = "gt"       // numbers by value, strings by bytes; other pairs never
	OpLt       Op = "lt"       // as gt
	OpIn       Op = "in"       // value is an array; a node equals one of its elements
	OpExists   Op = "exists"   // value absent or a boolean
	OpContains Op = "contains" // a string node holds the string value, or an array node has an element equal to it
)

// Condition is one test of a breadcrumb's context: Op applied to the nodes
// Path (RFC 9535 JSONPath) selects and Value.
type Condition struct {
	Path  string          `json:"path"`
	Op    Op              `json:"op"`
	Value json.RawMessage `json:"value,omitempty"`

	query *view.Query
	value any
}

// Selector says which changes a subscriber wants: all of its parts must
// hold; a part left empty holds for every change. It is the one language
// of the event stream's filter and of stored subscriptions.
//
// Context conditions are evaluated on the breadcrumb's context at the
// event's version, and only for changes the subscriber may see (the store
// applies visibility first). Deleted and expired events carry no context:
// every condition fails on them (ne and exists too), so a selector with
// conditions passes only created and updated events.
type Selector struct {
	AnyTags []string `json:"any_tags,omitempty"` // at least one of them
	AllTags []string `json:"all_tags,omitempty"` // every one of them
	// SchemaName is a schema name, or a pattern "prefix.*" matching the
	// names that start with "prefix." ("billing.*": "billing.v1",
	// "billing.invoice.v2"; not "billing").
	SchemaName   string      `json:"schema_name,omitempty"`
	Kinds        []EventKind `json:"kinds,omitempty"` // one of them
	ContextMatch []Condition `json:"context_match,omitempty"`

	compiled bool
}

// ParseSelector reads a selector's JSON form strictly (unknown keys, keys
// given twice, wrong types and values past the bounds are refused) and
// compiles it. Errors are *Error with CodeInvalid (CodeTooLarge for a
// selector over MaxSelectorBytes) whose Path names the part at fault
// ("context_match[1].op").
func ParseSelector(data []byte) (*Selector, error) {
	if len(data) > maxEscaped*MaxSelectorBytes {
		return nil, &Error{Code: CodeTooLarge, Path: "", Msg: fmt.Sprintf("selector is %d bytes; the limit is %d", len(data), MaxSelectorBytes)}
	}
	if _, err := strictjson.Decode(data, strictjson.Limits{Depth: 32}); err != nil {
		e := err.(*strictjson.Error)
		return nil, &Error{Code: CodeInvalid, Path: e.Path, Msg: strings.TrimPrefix(e.Error(), e.Path+": "), Err: err}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, invalid("", "a selector is a JSON object")
	}
	ms, err := strictjson.Object(data, "", 8, true)
	if err != nil {
		return nil, &Error{Code: CodeInvalid, Path: err.(*strictjson.Error).Path, Msg: "a selector has at most 5 members", Err: err}
	}
	var s Selector
	for _, m := range ms {
		switch m.Key {
		case "any_tags":
			s.AnyTags, err = stringList(m.Value, m.Key, MaxTags)
		case "all_tags":
			s.AllTags, err = stringList(m.Value, m.Key, MaxTags)
		case "schema_name":
			err = decodeAs(m.Value, m.Key, "a string", &s.SchemaName)
		case "kinds":
			var ks []string
			ks, err = stringList(m.Value, m.Key, 4)
			for _, k := range ks {
				s.Kinds = append(s.Kinds, EventKind(k))
			}
		case "context_match":
			s.ContextMatch, err = conditions(m.Value)
		default:
			err = invalid(m.Key, "unknown member: a selector has any_tags, all_tags, schema_name, kinds and context_match")
		}
		if err != nil {
			return nil, err
		}
	}
	return s.Compile()
}

// decodeAs decodes raw into v (a string or a bool), or says at path that
// it must be what.
func decodeAs(raw json.RawMessage, path, what string, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid(path, "must be %s", what)
	}
	return nil
}

// stringList reads an array of at most max strings.
func stringList(raw json.RawMessage, path string, max int) ([]string, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid(path, "must be an array of strings")
	}
	elems, err := strictjson.Array(raw, path, max, true)
	if err != nil {
		return nil, invalid(path, "more than %d entries", max)
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if err := decodeAs(e, strictjson.Index(path, i), "a string", &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// conditions reads context_match.
func conditions(raw json.RawMessage) ([]Condition, error) {
	const path = "context_match"
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid(path, "must be an array of conditions")
	}
	elems, err := strictjson.Array(raw, path, MaxConditions, true)
	if err != nil {
		return nil, invalid(path, "more than %d conditions", MaxConditions)
	}
	out := make([]Condition, len(elems))
	for i, e := range elems {
		at := strictjson.Index(path, i)
		if len(e) == 0 || e[0] != '{' {
			return nil, invalid(at, "must be an object with path, op and value")
		}
		ms, err := strictjson.Object(e, at, 4, true)
		if err != nil {
			return nil, invalid(at, "a condition has path, op and value")
		}
		c := &out[i]
		for _, m := range ms {
			switch m.Key {
			case "path":
				err = decodeAs(m.Value, at+".path", "a string", &c.Path)
			case "op":
				var op string
				err = decodeAs(m.Value, at+".op", "a string", &op)
				c.Op = Op(op)
			case "value":
				c.Value = m.Value
			default:
				err = invalid(at+"."+m.Key, "unknown member: a condition has path, op and value")
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Compile checks a selector built in Go (ParseSelector's rules, bar the
// JSON form) and returns a copy ready to Match; a compiled selector is
// returned as it is. A nil selector compiles to nil, which passes every
// change.
func (s *Selector) Compile() (*Selector, error) {
	if s == nil || s.compiled {
		return s, nil
	}
	c := &Selector{SchemaName: s.SchemaName, compiled: true}
	var err error
	if c.AnyTags, err = tagSet(s.AnyTags, "any_tags"); err != nil {
		return nil, err
	}
	if c.AllTags, err = tagSet(s.AllTags, "all_tags"); err != nil {
		return nil, err
	}
	if err := checkSchemaPattern(s.SchemaName); err != nil {
		return nil, err
	}
	if len(s.Kinds) > 4 {
		return nil, invalid("kinds", "%d kinds; there are 4: created, updated, deleted, expired", len(s.Kinds))
	}
	for i, k := range s.Kinds {
		switch k {
		case Created, Updated, Deleted, Expired:
		default:
			return nil, invalid(fmt.Sprintf("kinds[%d]", i), "%q is not an event kind: use created, updated, deleted or expired", k)
		}
		if !slices.Contains(c.Kinds, k) {
			c.Kinds = append(c.Kinds, k)
		}
	}
	if len(s.ContextMatch) > MaxConditions {
		return nil, invalid("context_match", "%d conditions; the limit is %d", len(s.ContextMatch), MaxConditions)
	}
	for i, cond := range s.ContextMatch {
		cc, err := compileCondition(cond, fmt.Sprintf("context_match[%d]", i))
		if err != nil {
			return nil, err
		}
		c.ContextMatch = append(c.ContextMatch, cc)
	}
	if b, _ := canonjson.Marshal(c); len(b) > MaxSelectorBytes {
		return nil, &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("selector is %d bytes; the limit is %d", len(b), MaxSelectorBytes)}
	}
	return c, nil
}

// tagSet checks a tag list and returns its distinct tags, sorted.
func tagSet(tags []string, path string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, invalid(path, "%d tag filters; the limit is %d", len(tags), MaxTags)
	}
	var out []string
	for i, t := range tags {
		switch {
		case t == "":
			return nil, invalid(fmt.Sprintf("%s[%d]", path, i), "empty tag")
		case len(t) > MaxTagBytes:
			return nil, invalid(fmt.Sprintf("%s[%d]", path, i), "tag of %d bytes; the limit is %d", len(t), MaxTagBytes)
		case !utf8.ValidString(t):
			return nil, invalid(fmt.Sprintf("%s[%d]", path, i), "tag is not valid UTF-8")
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func checkSchemaPattern(p string) error {
	switch {
	case len(p) > MaxSchemaBytes:
		return invalid("schema_name", "%d bytes; the limit is %d", len(p), MaxSchemaBytes)
	case !utf8.ValidString(p):
		return invalid("schema_name", "not valid UTF-8")
	case p == "*" || p == ".*":
		return invalid("schema_name", "%q matches every schema: leave schema_name out instead", p)
	}
	if i := strings.IndexByte(p, '*'); i >= 0 && (i != len(p)-1 || !strings.HasSuffix(p, ".*")) {
		return invalid("schema_name", "%q: a pattern is a prefix followed by .* (billing.*)", p)
	}
	return nil
}

func compileCondition(in Condition, at string) (Condition, error) {
	c := Condition{Path: in.Path, Op: in.Op, Value: in.Value}
	if c.Path == "" {
		return c, invalid(at+".path", "missing: a JSONPath query such as $.status")
	}
	if len(c.Path) > MaxConditionPath {
		return c, invalid(at+".path", "%d bytes; the limit is %d", len(c.Path), MaxConditionPath)
	}
	q, err := view.CompileQuery(c.Path)
	if err != nil {
		return c, &Error{Code: CodeInvalid, Path: at + ".path", Msg: strings.TrimPrefix(err.Error(), ": "), Err: err}
	}
	c.query = q
	if len(c.Value) > maxEscaped*MaxConditionValue {
		return c, invalid(at+".value", "%d bytes; the limit is %d", len(c.Value), MaxConditionValue)
	}
	if len(c.Value) > 0 {
		v, err := view.DecodeJSON(c.Value)
		if err != nil {
			return c, invalid(at+".value", "not JSON: %v", err)
		}
		c.value = v
		// Canonical bytes, so that a stored selector reads back as given.
		if c.Value, err = canonjson.Marshal(v); err != nil {
			return c, invalid(at+".value", "%v", err)
		}
		if len(c.Value) > MaxConditionValue {
			return c, invalid(at+".value", "%d bytes; the limit is %d", len(c.Value), MaxConditionValue)
		}
	}
	has := len(c.Value) > 0
	switch c.Op {
	case OpEq, OpNe, OpGt, OpLt, OpContains:
		if !has {
			return c, invalid(at+".value", "missing: %s compares with a value", c.Op)
		}
		if c.Op == OpGt || c.Op == OpLt {
			switch c.value.(type) {
			case json.Number, string:
			default:
				return c, invalid(at+".value", "%s compares with a number or a string", c.Op)
			}
		}
	case OpIn:
		vs, ok := c.value.([]any)
		switch {
		case !ok:
			return c, invalid(at+".value", "in takes an array of values")
		case len(vs) > MaxInValues:
			return c, invalid(at+".value", "%d values; the limit is %d", len(vs), MaxInValues)
		}
	case OpExists:
		if has {
			if _, ok := c.value.(bool); !ok {
				return c, invalid(at+".value", "exists takes true (the default) or false")
			}
		}
	case "":
		return c, invalid(at+".op", "missing: one of eq, ne, gt, lt, in, exists, contains")
	default:
		return c, invalid(at+".op", "%q is not an operator: use eq, ne, gt, lt, in, exists or contains", c.Op)
	}
	return c, nil
}

// NeedsContext reports whether s has context conditions: matching then
// needs the breadcrumb's context at the event's version.
func (s *Selector) NeedsContext() bool { return s != nil && len(s.ContextMatch) > 0 }

// Match reports whether e passes s. doc is the breadcrumb's context at
// e.Version decoded with view.DecodeJSON, nil when the event carries none
// (deleted and expired events); it is read only when s NeedsContext. A nil
// selector passes every change. s must come from ParseSelector or Compile.
// The conditions' paths share MaxMatchWork per change: a path too costly
// for a record does not match it (ne and exists false included).
func (s *Selector) Match(e *Event, doc any) bool {
	if s == nil {
		return true
	}
	if len(s.Kinds) > 0 && !slices.Contains(s.Kinds, e.Kind) {
		return false
	}
	if p := s.SchemaName; p != "" {
		if strings.HasSuffix(p, ".*") {
			if !strings.HasPrefix(e.SchemaName, p[:len(p)-1]) {
				return false
			}
		} else if e.SchemaName != p {
			return false
		}
	}
	for _, t := range s.AllTags {
		if !slices.Contains(e.Tags, t) {
			return false
		}
	}
	if len(s.AnyTags) > 0 && !slices.ContainsFunc(s.AnyTags, func(t string) bool { return slices.Contains(e.Tags, t) }) {
		return false
	}
	if len(s.ContextMatch) == 0 {
		return true
	}
	if doc == nil || (e.Kind != Created && e.Kind != Updated) {
		return false
	}
	// One budget for all the conditions: the selector's cost per change is
	// bounded, not each condition's.
	b := view.NewQueryBudget(doc, MaxMatchWork)
	for i := range s.ContextMatch {
		if !s.ContextMatch[i].holds(b) {
			return false
		}
	}
	return true
}

// MaxMatchWork bounds a selector's work on one change's context, summed
// over its conditions (view.QueryBudget's units: about one per node a path
// may visit). Selectors are matched for every change of their owner, for
// every stream, so the bound is the view engine's for one query: a path
// too costly for a record does not match it, and its selector does not
// pass the change.
const MaxMatchWork = view.MaxQueryWork

// holds evaluates c on b's document, reading the selected nodes one at a
// time and stopping as soon as the outcome is known.
func (c *Condition) holds(b *view.QueryBudget) bool {
	// found: some node passes (for ne: equals the value; for exists: is
	// there).
	found := false
	err := c.query.Each(b, func(n any) bool {
		found = c.test(n)
		return !found
	})
	if err != nil {
		// Too costly for this record: the condition cannot be shown to
		// hold (ne and exists false included).
		return false
	}
	switch c.Op {
	case OpExists:
		want, _ := c.value.(bool)
		if c.value == nil {
			want = true
		}
		return found == want
	case OpNe:
		return !found
	}
	return found
}

// test reports whether one selected node passes c; for ne, whether it
// equals the value, and for exists, true.
func (c *Condition) test(n any) bool {
	switch c.Op {
	case OpExists:
		return true
	case OpEq, OpNe:
		return jsonEqual(n, c.value)
	case OpGt:
		r, ok := compare(n, c.value)
		return ok && r > 0
	case OpLt:
		r, ok := compare(n, c.value)
		return ok && r < 0
	case OpIn:
		return slices.ContainsFunc(c.value.([]any), func(v any) bool { return jsonEqual(n, v) })
	case OpContains:
		switch x := n.(type) {
		case string:
			v, ok := c.value.(string)
			return ok && strings.Contains(x, v)
		case []any:
			return slices.ContainsFunc(x, func(el any) bool { return jsonEqual(el, c.value) })
		}
	}
	return false
}

// number is a JSON number's value. Numbers compare as float64: a number
// past its range is ±Inf, and integers past 2^53 may compare equal to
// their neighbours.
func number(n json.Number) float64 {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !math.IsInf(f, 0) {
		return math.NaN()
	}
	return f
}

// compare orders two numbers or two strings; ok is false for other pairs.
func compare(a, b any) (r int, ok bool) {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return 0, false
		}
		fx, fy := number(x), number(y)
		switch {
		case fx < fy:
			return -1, true
		case fx > fy:
			return 1, true
		case fx == fy:
			return 0, true
		}
		return 0, false // NaN
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}

// jsonEqual is JSON equality of two decoded values.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		r, ok := compare(x, b)
		return ok && r == 0
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}
