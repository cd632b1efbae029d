// Package view implements llm_hints: a declarative, per-record view of a JSON
// context for language models.
//
// A hints document is compiled once with Compile; the compiled *View is
// immutable, safe for concurrent use, and applies with no further parsing:
//
//	v, err := view.Compile(hints)
//	res := v.Apply(ctx, view.Record{Title: "Users", Context: doc})
//
// Application order: include keeps only the listed dotted paths, exclude then
// drops its paths, and each transform rule produces one key of the result.
// With mode "replace" (the default) the result holds only the transformed
// keys; with "merge" the transformed keys are laid over the filtered context.
//
// Views fail closed: when a rule fails at run time, the result's Status is
// FALLBACK and its Value is the include/exclude-filtered context, never the
// unfiltered one, so an exclude always holds.
package view

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/canonjson"
)

// Mode says how transformed keys combine with the filtered context.
type Mode string

const (
	ModeReplace Mode = "replace" // the view is the transformed keys alone
	ModeMerge   Mode = "merge"   // the transformed keys laid over the filtered context (shallow)
)

// Status says whether a view is what the hints asked for.
type Status string

const (
	StatusOK       Status = "OK"       // every rule ran
	StatusFallback Status = "FALLBACK" // a rule failed; Value is the filtered context
)

// DefaultRuleTimeout is a rule's deadline when Options.RuleTimeout is
// zero. The cost bounds stop expensive queries before they run; the
// deadline is the backstop for the work no price sees, so it is set for
// a busy machine: jq's strptime/mktime, the slowest of jq's own tests,
// takes 0.23–0.31 s as a whole ctxkit view process on a 2-core machine at
// load 24, and fails the 100 ms this was before.
const DefaultRuleTimeout = 2 * time.Second

// Options bound the work a view may do. The zero value gives the defaults.
type Options struct {
	// RuleTimeout is the deadline of each jq and template rule; default
	// DefaultRuleTimeout.
	RuleTimeout           time.Duration
	MaxOutputBytes        int // cap on one rule's output, measured as JSON; default 1 MiB
	MaxTemplateIterations int // cap on {{#each}} iterations in one template run; default 100,000
	MaxHintsBytes         int // cap on the hints document; default 256 KiB
	// MaxMemory is one evaluation's memory budget, in bytes (see Budget
	// for how it is kept): no costly step may allocate more, the view's
	// output together may not hold more, and its costly steps together
	// may allocate 8 times as much. Default 64 MiB.
	MaxMemory int64
	// Budget, when set, bounds the heap of the process while views
	// compiled with these options run: the watchdog stops the costliest
	// evaluation when the heap passes Budget's limit.
	Budget *Budget
}

func (o Options) withDefaults() Options {
	if o.RuleTimeout <= 0 {
		o.RuleTimeout = DefaultRuleTimeout
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = 1 << 20
	}
	if o.MaxTemplateIterations <= 0 {
		o.MaxTemplateIterations = 100_000
	}
	if o.MaxHintsBytes <= 0 {
		o.MaxHintsBytes = 256 << 10
	}
	if o.MaxMemory <= 0 {
		o.MaxMemory = defaultMaxMemory
	}
	return o
}

// Record is what a view applies to: a breadcrumb's context and the record
// fields that templates and format rules may refer to. Context is decoded
// JSON (see DecodeJSON) and is never modified.
type Record struct {
	ID          string
	Title       string
	Description string
	Tags        []string
	SchemaName  string
	Version     int64
	Context     any
}

// Result is the outcome of applying a view. Value shares structure with the
// record's context and with the compiled view: treat it as read-only.
type Result struct {
	Value  any
	Status Status
	Err    *Error // why the view fell back; nil when Status is OK
	// Warnings name what the rules met that is likely a mistake although
	// it is not an error: a template or format path that is not a record
	// field while the context has one of that name (context.users was
	// meant), which renders "" without a word otherwise.
	Warnings []Warning
}

// Warning is one thing a view's rules met that is likely a mistake.
type Warning struct {
	Path    string `json:"path"` // the rule, as in errors: transform.NAME
	Message string `json:"message"`
}

// maxWarnings bounds the warnings of one evaluation.
const maxWarnings = 16

// View is a compiled hints document.
type View struct {
	hash    string
	mode    Mode
	include *trie
	exclude *trie
	rules   []namedRule // sorted by name, so failures are reported deterministically
	opts    Options
}

type namedRule struct {
	name string
	rule rule
}

// rule is one transform: template, extract, jq, literal or format.
type rule interface {
	apply(ctx context.Context, e *env) (any, error)
}

// env is what rules see during one application.
type env struct {
	rec      *Record
	meter    *meter
	context  any // the filtered context
	rootMap  map[string]any
	rule     string // the rule running: transform.NAME
	warnings []Warning
}

// missingAtRoot notes that name, looked up at the root by the running
// rule, is no record field, when the context has a field of that name:
// the rule most likely meant context.NAME. Once per rule and name.
func (e *env) missingAtRoot(name string) {
	c, ok := e.context.(map[string]any)
	if !ok || len(e.warnings) >= maxWarnings {
		return
	}
	if _, has := c[name]; !has {
		return
	}
	msg := fmt.Sprintf("%q is not a record field, so it rendered as nothing; the context has one: write context.%s", name, name)
	for _, w := range e.warnings {
		if w.Path == e.rule && w.Message == msg {
			return
		}
	}
	e.warnings = append(e.warnings, Warning{Path: e.rule, Message: msg})
}

// root is the template/format root: the filtered context under "context" and
// the record's own fields beside it. Zero-valued fields are left out.
func (e *env) root() map[string]any {
	if e.rootMap != nil {
		return e.rootMap
	}
	r := e.rec
	m := map[string]any{"context": e.context}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("id", r.ID)
	set("title", r.Title)
	set("description", r.Description)
	set("schema_name", r.SchemaName)
	if r.Tags != nil {
		tags := make([]any, len(r.Tags))
		for i, t := range r.Tags {
			tags[i] = t
		}
		m["tags"] = tags
	}
	if r.Version != 0 {
		m["version"] = r.Version
	}
	e.rootMap = m
	return m
}

// Compile parses and validates a hints document with default Options.
func Compile(hints []byte) (*View, error) {
	return CompileWith(hints, Options{})
}

// CompileWith parses and validates a hints document. Every template, path and
// query is parsed here; errors are *Error values naming the place at fault.
func CompileWith(hints []byte, opts Options) (*View, error) {
	opts = opts.withDefaults()
	if len(hints) > opts.MaxHintsBytes {
		return nil, errorf(CodeTooLarge, "", "hints are %d bytes; the limit is %d", len(hints), opts.MaxHintsBytes)
	}
	doc, err := decodeStrict(hints)
	if err != nil {
		return nil, err
	}
	h, err := hashValue(doc)
	if err != nil {
		return nil, err
	}
	v, err := compileDoc(doc, opts)
	if err != nil {
		return nil, err
	}
	v.hash = h
	return v, nil
}

func compileDoc(doc any, opts Options) (*View, error) {
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, errorf(CodeInvalidValue, "", "hints must be a JSON object, not %s", kindOf(doc))
	}
	v := &View{mode: ModeReplace, opts: opts}
	for _, k := range sortedKeys(top) {
		val := top[k]
		if val == nil {
			continue // an explicit null is the same as leaving the key out
		}
		var err error
		switch k {
		case "include":
			if v.include, err = compilePaths(val, k); err == nil && v.include == nil {
				v.include = &trie{} // an empty include list keeps nothing
				v.include.fill()
			}
		case "exclude":
			v.exclude, err = compilePaths(val, k)
		case "mode":
			s, ok := val.(string)
			switch {
			case !ok:
				err = errorf(CodeInvalidValue, k, "must be a string, not %s", kindOf(val))
			case Mode(s) == ModeReplace || Mode(s) == ModeMerge:
				v.mode = Mode(s)
			default:
				err = errorf(CodeInvalidValue, k, "%q is not a mode: use \"replace\" or \"merge\"", s)
			}
		case "transform":
			v.rules, err = compileRules(val, opts)
		default:
			err = errorf(CodeUnknownField, k, "unknown key: hints take include, exclude, transform and mode")
		}
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

func compilePaths(val any, where string) (*trie, error) {
	list, ok := val.([]any)
	if !ok {
		return nil, errorf(CodeInvalidValue, where, "must be an array of dotted paths, not %s", kindOf(val))
	}
	paths := make([]path, 0, len(list))
	for i, item := range list {
		at := fmt.Sprintf("%s[%d]", where, i)
		s, ok := item.(string)
		if !ok {
			return nil, errorf(CodeInvalidValue, at, "must be a string, not %s", kindOf(item))
		}
		p, err := parsePath(s, at)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return newTrie(paths), nil
}

// maxRules bounds the transform object.
const maxRules = 256

func compileRules(val any, opts Options) ([]namedRule, error) {
	m, ok := val.(map[string]any)
	if !ok {
		return nil, errorf(CodeInvalidValue, "transform", "must be an object of rules, not %s", kindOf(val))
	}
	if len(m) > maxRules {
		return nil, errorf(CodeTooLarge, "transform", "has %d rules; the limit is %d", len(m), maxRules)
	}
	rules := make([]namedRule, 0, len(m))
	for _, name := range sortedKeys(m) {
		where := "transform." + name
		if name == "" {
			return nil, errorf(CodeInvalidValue, "transform", "a rule needs a non-empty name")
		}
		r, err := compileRule(m[name], where, opts)
		if err != nil {
			return nil, err
		}
		rules = append(rules, namedRule{name: name, rule: r})
	}
	return rules, nil
}

// ruleFields lists, per rule type, the one field that holds its body.
var ruleFields = map[string]string{
	"template": "template",
	"extract":  "value",
	"jq":       "query",
	"literal":  "literal",
	"format":   "format",
}

func compileRule(val any, where string, opts Options) (rule, error) {
	m, ok := val.(map[string]any)
	if !ok {
		return nil, errorf(CodeInvalidValue, where, "a rule must be an object with a \"type\", not %s", kindOf(val))
	}
	typ, ok := m["type"].(string)
	if !ok {
		if _, present := m["type"]; present {
			return nil, errorf(CodeInvalidValue, where+".type", "must be a string")
		}
		return nil, errorf(CodeInvalidValue, where+".type", "missing: use one of template, extract, jq, literal, format")
	}
	field, known := ruleFields[typ]
	if !known {
		return nil, errorf(CodeUnknownRule, where+".type", "unknown rule type %q: use one of template, extract, jq, literal, format", typ)
	}
	for _, k := range sortedKeys(m) {
		if k != "type" && k != field {
			return nil, errorf(CodeUnknownField, where+"."+k, "unknown key for a %s rule: it takes \"type\" and %q", typ, field)
		}
	}
	body, present := m[field]
	at := where + "." + field
	if !present {
		return nil, errorf(CodeInvalidValue, at, "missing: a %s rule needs %q", typ, field)
	}
	if typ == "literal" {
		return literalRule{value: body}, nil
	}
	src, ok := body.(string)
	if !ok {
		return nil, errorf(CodeInvalidValue, at, "must be a string, not %s", kindOf(body))
	}
	switch typ {
	case "template":
		return compileTemplate(src, at, opts)
	case "extract":
		return compileExtract(src, at, opts)
	case "jq":
		return compileJQ(src, at, opts)
	default: // format
		return compileFormat(src, at, opts)
	}
}

// Hash is the identity of the hints: the hash of their canonical JSON, so
// documents that differ only in spacing or key order share one hash.
func (v *View) Hash() string { return v.hash }

// Mode reports the compiled mode.
func (v *View) Mode() Mode { return v.mode }

// Hash returns the identity of a hints document without compiling it.
func Hash(hints []byte) (string, error) {
	doc, err := decodeStrict(hints)
	if err != nil {
		return "", err
	}
	return hashValue(doc)
}

func hashValue(doc any) (string, error) {
	canon, err := canonjson.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Filter applies include and exclude alone. It is what a view falls back to.
func (v *View) Filter(c any) any {
	if v.include != nil {
		kept, _ := include(c, v.include.self)
		if kept == nil {
			if _, isArr := c.([]any); isArr {
				kept = []any{}
			} else {
				kept = map[string]any{}
			}
		}
		c = kept
	}
	if v.exclude != nil {
		c, _ = exclude(c, v.exclude.self)
	}
	return c
}

// Apply computes the view of rec. It never returns the unfiltered context: on
// a rule failure the result falls back to the filtered context. A view that
// needs more memory than Options.MaxMemory, or that is the costliest running
// when the heap passes Options.Budget's limit, falls back with
// CodeTooCostly.
func (v *View) Apply(ctx context.Context, rec Record) Result {
	m := v.start(ctx)
	defer v.end(m)
	return v.apply(m, rec)
}

// start opens an evaluation: its meter, registered with the Budget.
func (v *View) start(ctx context.Context) *meter {
	m := newMeter(ctx, v.opts.MaxMemory)
	if v.opts.Budget != nil {
		v.opts.Budget.enter(m)
	}
	return m
}

func (v *View) end(m *meter) {
	if v.opts.Budget != nil {
		v.opts.Budget.leave(m)
	}
	m.done()
}

func (v *View) apply(m *meter, rec Record) Result {
	ctx := m.ctx
	filtered := v.Filter(rec.Context)
	if len(v.rules) == 0 {
		return Result{Value: filtered, Status: StatusOK}
	}
	var e *env
	fallback := func(err *Error) Result {
		res := Result{Value: filtered, Status: StatusFallback, Err: err}
		if e != nil {
			res.Warnings = e.warnings
		}
		return res
	}
	var base map[string]any
	if v.mode == ModeMerge {
		m, ok := filtered.(map[string]any)
		if !ok {
			return fallback(errorf(CodeRuleFailed, "mode", "merge needs an object context, not %s", kindOf(filtered)))
		}
		base = m
	}
	e = &env{rec: &rec, context: filtered, meter: m}
	out := make(map[string]any, len(v.rules)+len(base))
	for k, val := range base {
		out[k] = val
	}
	for _, r := range v.rules {
		if err := ctx.Err(); err != nil {
			if e := stopped(ctx); e != nil {
				return fallback(wrapError(CodeTooCostly, "transform."+r.name, e))
			}
			return fallback(&Error{Code: CodeRuleTimeout, Path: "transform." + r.name, Msg: "not run: " + err.Error(), Err: err})
		}
		e.rule = "transform." + r.name
		val, err := safeApply(ctx, r.rule, e)
		if err != nil {
			return fallback(wrapError(CodeRuleFailed, "transform."+r.name, err))
		}
		out[r.name] = val
	}
	return Result{Value: out, Status: StatusOK, Warnings: e.warnings}
}

// safeApply runs one rule, turning a panic inside an engine into a rule
// failure: one bad record must not take a server down.
func safeApply(ctx context.Context, r rule, e *env) (val any, err error) {
	defer func() {
		if p := recover(); p != nil {
			val, err = nil, errorf(CodeRuleFailed, "", "engine failure: %v", p)
		}
	}()
	return r.apply(ctx, e)
}

// ApplyJSON decodes a JSON context, applies the view and encodes the result.
// A context that is not valid JSON is an error; a rule failure is not (see
// Result.Status), and the returned bytes are then the filtered context.
func (v *View) ApplyJSON(ctx context.Context, contextJSON []byte, rec Record) ([]byte, Result, error) {
	c, err := DecodeJSON(contextJSON)
	if err != nil {
		return nil, Result{}, err
	}
	rec.Context = c
	m := v.start(ctx)
	defer v.end(m)
	res := v.apply(m, rec)
	if res.Status == StatusOK {
		// The encoded view is held beside the view itself until the
		// caller is done with it.
		size, _ := measure(res.Value, int(min(v.opts.MaxMemory, 1<<40)))
		if err := m.hold(int64(size), "the encoded view"); err != nil {
			res = Result{Value: v.Filter(c), Status: StatusFallback, Err: err}
		}
	}
	out, err := canonjson.Marshal(res.Value)
	if err != nil {
		return nil, res, err
	}
	return out, res, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// kindOf names a JSON value's type for error messages.
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number, float64, int, int64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return strings.TrimPrefix(fmt.Sprintf("%T", x), "*")
	}
}
