package view

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mailgun/raymond/v2/ast"
	"github.com/mailgun/raymond/v2/parser"

	"github.com/ctxkit/ctxkit/internal/canonjson"
)

// Templates are Handlebars. They are parsed by mailgun/raymond's parser
// (which also applies Handlebars' whitespace control) and evaluated here, on
// the syntax tree, so that every step of a run is bounded: the rule's
// deadline is checked as the run goes, {{#each}} iterations are counted, and
// output stops at MaxOutputBytes instead of being built first and measured
// after.
//
// The root holds the filtered context under "context" and the record's own
// fields (id, title, description, tags, schema_name, version), so both
// "{{context.items.length}}" and "# {{title}}" work.
//
// Semantics follow handlebars.js (checked against handlebars.js 4.7 on a few
// thousand generated cases), with these choices:
//   - helpers: each (arrays, and objects in key order; @index, @key, @first,
//     @last; "as |item key|"), if, unless, with, lookup (returns the value
//     itself) and json (compact JSON, not escaped);
//   - "x.length" is the length of an array, an object or a string (in
//     characters) unless x has its own "length" key;
//   - an object or array in {{…}} renders as compact JSON;
//   - {{…}} escapes & < > " ' ` = for HTML; {{{…}}} does not;
//   - names are looked up in the current context only (use ../ or @root to
//     reach outward), as in handlebars.js; ../ always steps out one
//     {{#each}} or {{#with}}, even where handlebars.js would skip a block
//     whose context is the same value as its parent's;
//   - whitespace control is raymond's, which differs from handlebars.js in
//     two corners: a tag followed by more text on its line may still count
//     as standalone, and {{~else if …}} does not strip.
//
// Refused at compile time: partials (a self-including partial can only end in
// a stack overflow), mustache sections over a path ({{#items}}…{{/items}};
// write {{#each}}, {{#with}} or {{#if}}), and any other helper.

var (
	blockHelpers  = map[string]int{"each": 2, "if": 0, "unless": 0, "with": 1} // name → most block params
	inlineHelpers = map[string]int{"lookup": 2, "json": 1}                     // name → parameter count
)

const helperNames = "each, if, unless, with, lookup, json"

type templateRule struct {
	prog    *ast.Program
	timeout func(context.Context) (context.Context, context.CancelFunc)
	maxIter int
	maxOut  int
}

func compileTemplate(src, where string, opts Options) (rule, error) {
	prog, err := parser.Parse(normalizeTemplate(src))
	if err != nil {
		return nil, &Error{Code: CodeInvalidTemplate, Path: where, Msg: oneLine(err.Error()), Err: err}
	}
	if err := checkProgram(prog); err != nil {
		return nil, &Error{Code: CodeInvalidTemplate, Path: where, Msg: err.Error()}
	}
	d := opts.RuleTimeout
	return templateRule{
		prog:    prog,
		timeout: func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, d) },
		maxIter: opts.MaxTemplateIterations,
		maxOut:  opts.MaxOutputBytes,
	}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// normalizeTemplate rewrites two spellings that handlebars.js reads as paths
// but raymond's lexer does not, without changing line numbers:
//   - a numeric path segment, "items.0.name", lexes as the number "0." and
//     fails; it becomes "items.[0].name";
//   - a name that starts with "else", "{{elsewhere}}", lexes as {{else}};
//     it becomes "{{[elsewhere]}}".
//
// String literals, number literals and comments are left alone.
func normalizeTemplate(src string) string {
	if !strings.Contains(src, "{{") {
		return src
	}
	var b strings.Builder
	i := 0
	for i < len(src) {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			b.WriteString(src[i:])
			break
		}
		i += j + 2
		k := i
		for k < len(src) && (src[k] == '{' || src[k] == '~') {
			k++
		}
		b.WriteString(src[i-j-2 : k])
		i = k
		if strings.HasPrefix(src[i:], "!") { // a comment: copy through its end
			end := "}}"
			if strings.HasPrefix(src[i:], "!--") {
				end = "--}}"
			}
			e := strings.Index(src[i:], end)
			if e < 0 {
				b.WriteString(src[i:])
				break
			}
			b.WriteString(src[i : i+e+len(end)])
			i += e + len(end)
			continue
		}
		if strings.HasPrefix(src[i:], "else") && i+4 < len(src) && isNameByte(src[i+4]) {
			e := i + 4
			for e < len(src) && isNameByte(src[e]) {
				e++
			}
			b.WriteString("[" + src[i:e] + "]")
			i = e
		}
		i = copyMustache(&b, src, i)
	}
	return b.String()
}

// copyMustache copies one mustache's inside, from i up to its closing
// braces, bracketing numeric path segments; it returns where it stopped.
func copyMustache(b *strings.Builder, src string, i int) int {
	var quote byte
	number, tokenStart := false, true
	for i < len(src) {
		c := src[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '}' && strings.HasPrefix(src[i:], "}}"):
			return i
		case c == '"' || c == '\'':
			quote = c
			tokenStart = false
		case strings.IndexByte(" \t\r\n()=|", c) >= 0:
			tokenStart, number = true, false
		case tokenStart:
			number = c == '-' || (c >= '0' && c <= '9')
			tokenStart = false
		}
		if c == '.' && quote == 0 && !number && i > 0 && isNameByte(src[i-1]) && i+1 < len(src) && isDigit(src[i+1]) {
			e := i + 1
			for e < len(src) && isDigit(src[e]) {
				e++
			}
			if e == len(src) || strings.IndexByte(".}~) \t\r\n", src[e]) >= 0 {
				b.WriteString(".[" + src[i+1:e] + "]")
				i = e
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isNameByte(c byte) bool {
	return c == '_' || c == ']' || c == '$' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') || c >= 0x80
}

// checkProgram refuses, with the line, what templates may not use.
func checkProgram(p *ast.Program) error {
	if p == nil {
		return nil
	}
	for _, n := range p.Body {
		switch x := n.(type) {
		case *ast.MustacheStatement:
			name := x.Expression.HelperName()
			if _, ok := blockHelpers[name]; ok {
				return fmt.Errorf("line %d: %s is a block helper: write {{#%s …}}…{{/%s}}", x.Line, name, name, name)
			}
			if err := checkExpr(x.Expression, x.Line); err != nil {
				return err
			}
		case *ast.BlockStatement:
			if err := checkBlock(x); err != nil {
				return err
			}
		case *ast.PartialStatement:
			return fmt.Errorf("line %d: partials ({{> …}}) are not supported", x.Line)
		}
	}
	return nil
}

func checkBlock(b *ast.BlockStatement) error {
	name := b.Expression.HelperName()
	maxParams, isHelper := blockHelpers[name]
	switch {
	case isHelper:
		if len(b.Expression.Params) != 1 {
			return fmt.Errorf("line %d: {{#%s}} takes one value, as in {{#%s context.items}}", b.Line, name, name)
		}
		if err := checkParam(b.Expression.Params[0], b.Line); err != nil {
			return err
		}
		if err := checkBlockHash(b, name); err != nil {
			return err
		}
	case b.Program != nil:
		return fmt.Errorf("line %d: section {{#%s}}: open blocks with a helper: {{#each …}}, {{#with …}}, {{#if …}} or {{#unless …}}", b.Line, b.Expression.Canonical())
	default: // an inverted section, {{^path}}…{{/path}}
		if err := checkExpr(b.Expression, b.Line); err != nil {
			return err
		}
	}
	if b.Program != nil {
		if n := len(b.Program.BlockParams); n > maxParams {
			return fmt.Errorf("line %d: {{#%s}} takes at most %d block parameters, not %d", b.Line, name, maxParams, n)
		}
		if err := checkProgram(b.Program); err != nil {
			return err
		}
	}
	return checkProgram(b.Inverse)
}

// checkBlockHash allows the one hash argument of handlebars.js's block
// helpers that ctxkit supports: includeZero on {{#if}} and {{#unless}},
// which makes 0 count as a value.
func checkBlockHash(b *ast.BlockStatement, name string) error {
	h := b.Expression.Hash
	if h == nil {
		return nil
	}
	for _, pair := range h.Pairs {
		if pair.Key != "includeZero" || (name != "if" && name != "unless") {
			return fmt.Errorf("line %d: {{#%s}} takes no hash argument %q (only {{#if}} and {{#unless}} take includeZero=true)", b.Line, name, pair.Key)
		}
		if err := checkParam(pair.Val, b.Line); err != nil {
			return err
		}
	}
	return nil
}

func checkExpr(e *ast.Expression, line int) error {
	name := e.HelperName()
	if want, ok := inlineHelpers[name]; ok {
		if len(e.Params) != want || e.Hash != nil {
			return fmt.Errorf("line %d: %s takes %d parameters, not %d", line, name, want, len(e.Params))
		}
	} else if len(e.Params) > 0 || e.Hash != nil {
		return fmt.Errorf("line %d: unknown helper %q; the helpers are %s", line, e.Canonical(), helperNames)
	}
	for _, p := range e.Params {
		if err := checkParam(p, line); err != nil {
			return err
		}
	}
	return nil
}

func checkParam(n ast.Node, line int) error {
	if sub, ok := n.(*ast.SubExpression); ok {
		if _, ok := inlineHelpers[sub.Expression.HelperName()]; !ok {
			return fmt.Errorf("line %d: unknown helper %q in a subexpression; use lookup or json", line, sub.Expression.Canonical())
		}
		return checkExpr(sub.Expression, line)
	}
	return nil
}

func (r templateRule) apply(ctx context.Context, e *env) (any, error) {
	rctx, cancel := r.timeout(ctx)
	defer cancel()
	run := &tplRun{ctx: rctx, meter: e.meter, maxIter: r.maxIter, maxOut: r.maxOut, scopes: []any{e.root()}, frames: []frame{{}}, env: e}
	if err := run.program(r.prog); err != nil {
		return nil, err
	}
	if err := e.meter.hold(int64(run.out.Len()), "the template output"); err != nil {
		return nil, err
	}
	return run.out.String(), nil
}

// tplRun is the state of one template run.
type tplRun struct {
	ctx     context.Context
	meter   *meter
	out     strings.Builder
	maxOut  int
	iter    int
	maxIter int
	steps   int
	scopes  []any            // context stack: [0] is the root, the last is "this"
	frames  []frame          // @data frames: one per {{#each}} iteration
	params  []map[string]any // block parameters, innermost last
	env     *env             // where warnings go
}

type frame struct {
	index       any
	key         any
	first, last any
}

// safeString is output that is not HTML-escaped (what the json helper returns).
type safeString string

func (r *tplRun) step() error {
	r.steps++
	if r.steps&255 == 0 {
		if err := r.ctx.Err(); err != nil {
			return deadlineError(r.ctx, err)
		}
	}
	return nil
}

func (r *tplRun) write(s string) error {
	if r.out.Len()+len(s) > r.maxOut {
		return tooLarge(r.maxOut)
	}
	if n := int64(r.out.Len() + len(s)); n > r.meter.limit {
		return r.meter.hold(n, "the template output") // refused: more than a view may hold
	}
	r.out.WriteString(s)
	return nil
}

func (r *tplRun) program(p *ast.Program) error {
	if p == nil {
		return nil
	}
	for _, n := range p.Body {
		if err := r.step(); err != nil {
			return err
		}
		var err error
		switch x := n.(type) {
		case *ast.ContentStatement:
			err = r.write(x.Value)
		case *ast.MustacheStatement:
			var v any
			if v, err = r.expr(x.Expression); err == nil {
				var s string
				s, err = r.render(v, !x.Unescaped)
				if err == nil {
					err = r.write(s)
				}
			}
		case *ast.BlockStatement:
			err = r.block(x)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// render turns a value into template output.
func (r *tplRun) render(v any, escape bool) (string, error) {
	var s string
	switch x := v.(type) {
	case nil:
		return "", nil
	case safeString:
		return string(x), nil
	case string:
		s = x
	case json.Number:
		s = string(x)
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	default:
		enc, err := r.encode(v)
		if err != nil {
			return "", err
		}
		s = enc
	}
	if escape {
		s = escapeHTML(s)
	}
	return s, nil
}

// encode writes v as compact JSON, refusing values larger than the output cap
// before spending the work.
func (r *tplRun) encode(v any) (string, error) {
	if err := r.ctx.Err(); err != nil {
		return "", deadlineError(r.ctx, err)
	}
	size, _ := measure(v, r.maxOut)
	if size > r.maxOut {
		return "", tooLarge(r.maxOut)
	}
	if err := r.meter.spend(int64(size), "the json helper"); err != nil {
		return "", err
	}
	out, err := canonjson.Marshal(v)
	if err != nil {
		return "", &Error{Code: CodeRuleFailed, Msg: "template: " + err.Error(), Err: err}
	}
	return string(out), nil
}

// deadlineError says why a template run stopped: its memory, or its deadline.
func deadlineError(ctx context.Context, err error) *Error {
	if e := stopped(ctx); e != nil {
		return e
	}
	return &Error{Code: CodeRuleTimeout, Msg: "template ran past its deadline", Err: err}
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;", "`", "&#x60;", "=", "&#x3D;")

func escapeHTML(s string) string {
	if !strings.ContainsAny(s, "&<>\"'`=") {
		return s
	}
	return htmlEscaper.Replace(s)
}

// expr evaluates a mustache's or a subexpression's expression.
func (r *tplRun) expr(e *ast.Expression) (any, error) {
	switch e.HelperName() {
	case "lookup":
		obj, err := r.value(e.Params[0])
		if err != nil {
			return nil, err
		}
		key, err := r.value(e.Params[1])
		if err != nil {
			return nil, err
		}
		if falsy(obj) {
			return obj, nil // as handlebars.js: lookup of 0, false or "" is itself
		}
		k, err := r.render(key, false)
		if err != nil {
			return nil, err
		}
		return field(obj, k), nil
	case "json":
		v, err := r.value(e.Params[0])
		if err != nil {
			return nil, err
		}
		s, err := r.encode(v)
		return safeString(s), err
	}
	this := r.scopes[len(r.scopes)-1]
	switch p := e.Path.(type) {
	case *ast.PathExpression:
		return r.path(p), nil
	case *ast.StringLiteral: // {{"a key"}} names a field, as in handlebars.js; {{""}} is this
		if p.Value == "" {
			return this, nil
		}
		return field(this, p.Value), nil
	case *ast.NumberLiteral: // {{1}} names a field too
		return field(this, p.Original), nil
	case *ast.BooleanLiteral:
		return field(this, p.Original), nil
	}
	return nil, nil
}

// value evaluates a helper parameter.
func (r *tplRun) value(n ast.Node) (any, error) {
	switch x := n.(type) {
	case *ast.PathExpression:
		return r.path(x), nil
	case *ast.StringLiteral:
		return x.Value, nil
	case *ast.NumberLiteral:
		return x.Number(), nil
	case *ast.BooleanLiteral:
		return x.Value, nil
	case *ast.SubExpression:
		if err := r.step(); err != nil {
			return nil, err
		}
		return r.expr(x.Expression)
	}
	return nil, nil
}

// path resolves a path: @data, a block parameter, or the context at a depth.
func (r *tplRun) path(p *ast.PathExpression) any {
	parts := p.Parts
	var v any
	switch {
	case p.Data:
		if len(parts) == 0 {
			return nil
		}
		if parts[0] == "root" {
			v = r.scopes[0]
		} else {
			i := len(r.frames) - 1 - p.Depth
			if i < 0 {
				return nil
			}
			f := r.frames[i]
			switch parts[0] {
			case "index":
				v = f.index
			case "key":
				v = f.key
			case "first":
				v = f.first
			case "last":
				v = f.last
			}
		}
		parts = parts[1:]
	case !p.Scoped && p.Depth == 0 && len(parts) > 0 && r.hasParam(parts[0]):
		v = r.param(parts[0])
		parts = parts[1:]
	default:
		i := len(r.scopes) - 1 - p.Depth
		if i < 0 {
			return nil
		}
		v = r.scopes[i]
		if i == 0 && len(parts) > 0 && r.env != nil && field(v, parts[0]) == nil {
			r.env.missingAtRoot(parts[0])
		}
	}
	for _, part := range parts {
		if len(part) >= 2 && part[0] == '[' && part[len(part)-1] == ']' {
			part = part[1 : len(part)-1]
		}
		if v = field(v, part); v == nil {
			return nil
		}
	}
	return v
}

func (r *tplRun) hasParam(name string) bool {
	for i := len(r.params) - 1; i >= 0; i-- {
		if _, ok := r.params[i][name]; ok {
			return true
		}
	}
	return false
}

// param finds a block parameter by name, innermost first.
func (r *tplRun) param(name string) any {
	for i := len(r.params) - 1; i >= 0; i-- {
		if v, ok := r.params[i][name]; ok {
			return v
		}
	}
	return nil
}

// field is one step of a path: an object key, an array index, or "length".
func field(v any, name string) any {
	switch x := v.(type) {
	case map[string]any:
		if f, ok := x[name]; ok {
			return f
		}
		if name == "length" {
			return len(x)
		}
	case []any:
		if n, ok := arrayIndex(name); ok && n < len(x) {
			return x[n]
		}
		if name == "length" {
			return len(x)
		}
	case string:
		if name == "length" {
			return utf8.RuneCountInString(x)
		}
		if n, ok := arrayIndex(name); ok {
			for _, c := range x { // the n-th character
				if n == 0 {
					return string(c)
				}
				n--
			}
		}
	}
	return nil
}

// arrayIndex accepts only canonical decimal indexes: "1", not "01" or "+1".
func arrayIndex(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == s
}

func (r *tplRun) block(b *ast.BlockStatement) error {
	name := b.Expression.HelperName()
	if _, ok := blockHelpers[name]; !ok {
		// An inverted section, {{^path}}…{{/path}}: as in handlebars.js it
		// runs for false, null and [] only.
		v, err := r.expr(b.Expression)
		if err != nil || !(v == nil || v == false || isEmptyArray(v)) {
			return err
		}
		return r.program(b.Inverse)
	}
	v, err := r.value(b.Expression.Params[0])
	if err != nil {
		return err
	}
	switch name {
	case "if", "unless":
		yes := truthy(v)
		if !yes && isZero(v) {
			if yes, err = r.includeZero(b.Expression.Hash); err != nil {
				return err
			}
		}
		if yes == (name == "if") {
			return r.program(b.Program)
		}
		return r.program(b.Inverse)
	}
	switch name {
	case "with": // as in handlebars.js, 0 is a value here, not "empty"
		if v == nil || v == false || v == "" || isEmptyArray(v) {
			return r.program(b.Inverse)
		}
		return r.scoped(b.Program, v, nil, v, nil)
	}
	return r.each(b, v)
}

// scoped runs p with v as "this", an optional @data frame, and the block
// parameters bound to p1 and p2.
func (r *tplRun) scoped(p *ast.Program, v any, f *frame, p1, p2 any) error {
	if p == nil {
		return nil
	}
	r.scopes = append(r.scopes, v)
	if f != nil {
		r.frames = append(r.frames, *f)
	}
	if bp := p.BlockParams; len(bp) > 0 {
		m := map[string]any{bp[0]: p1}
		if len(bp) > 1 {
			m[bp[1]] = p2
		}
		r.params = append(r.params, m)
	}
	err := r.program(p)
	r.scopes = r.scopes[:len(r.scopes)-1]
	if f != nil {
		r.frames = r.frames[:len(r.frames)-1]
	}
	if len(p.BlockParams) > 0 {
		r.params = r.params[:len(r.params)-1]
	}
	return err
}

func (r *tplRun) each(b *ast.BlockStatement, v any) error {
	iterate := func(elem any, i int, key any, last bool) error {
		r.iter++
		if r.iter > r.maxIter {
			return errorf(CodeRuleTooLarge, "", "template ran more than %d {{#each}} iterations", r.maxIter)
		}
		if r.iter&63 == 0 {
			if err := r.ctx.Err(); err != nil {
				return deadlineError(r.ctx, err)
			}
		}
		return r.scoped(b.Program, elem, &frame{index: i, key: key, first: i == 0, last: last}, elem, key)
	}
	n := 0
	switch x := v.(type) {
	case []any:
		for i, elem := range x {
			if err := iterate(elem, i, i, i == len(x)-1); err != nil {
				return err
			}
		}
		n = len(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // a stable order; Go maps carry none
		for i, k := range keys {
			if err := iterate(x[k], i, k, i == len(keys)-1); err != nil {
				return err
			}
		}
		n = len(x)
	}
	if n == 0 {
		return r.program(b.Inverse)
	}
	return nil
}

// includeZero is the value of {{#if}}'s includeZero argument, as
// handlebars.js reads it: any truthy value turns it on.
func (r *tplRun) includeZero(h *ast.Hash) (bool, error) {
	if h == nil {
		return false, nil
	}
	for _, pair := range h.Pairs {
		if pair.Key == "includeZero" {
			v, err := r.value(pair.Val)
			return truthy(v), err
		}
	}
	return false, nil
}

// isZero reports whether v is the number 0, the one falsy value
// includeZero turns into a value.
func isZero(v any) bool {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case float64:
		return x == 0
	case int:
		return x == 0
	case int64:
		return x == 0
	}
	return false
}

func isEmptyArray(v any) bool {
	a, ok := v.([]any)
	return ok && len(a) == 0
}

// falsy is JavaScript's falsiness for JSON values: null, false, "" and 0.
func falsy(v any) bool { return !truthy(v) && !isEmptyArray(v) }

// truthy is what {{#if}}, {{#unless}} and {{#each}}'s else see, as in
// handlebars.js: false, null, "", 0 and [] are false; objects, even empty
// ones, are true. JSON numbers compare by value ("0.0" is false).
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	case float64:
		return x != 0
	case int:
		return x != 0
	case int64:
		return x != 0
	case []any:
		return len(x) > 0
	}
	return true
}
