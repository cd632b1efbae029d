package view

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mailgun/raymond/v2"
	"github.com/mailgun/raymond/v2/ast"
	"github.com/mailgun/raymond/v2/parser"
)

// Templates are Handlebars (mailgun/raymond v2) with a fixed set of helpers.
// The root holds the filtered context under "context" and the record's own
// fields (id, title, description, tags, schema_name, version), so both
// "{{context.items.length}}" and "# {{title}}" work.
//
// What is refused at compile time, and why:
//   - partials: a self-including partial overflows the Go stack, which no
//     recover can catch;
//   - mustache sections over a path ({{#items}}…{{/items}}): they loop
//     outside any helper, so no budget could bound them; write {{#each}},
//     {{#with}} or {{#if}};
//   - helpers other than each, if, unless, with, lookup and json, and a second
//     block parameter (as |item key|): use @index and @key instead.
//
// Every {{#each}} iteration counts against MaxTemplateIterations and checks
// the rule's deadline, and the output is capped at MaxOutputBytes.

// budgetKey names the per-run budget in the template's private data. It holds
// a space, which no template identifier can, so templates cannot reach it.
const budgetKey = "ctxkit budget"

var (
	blockHelpers   = map[string]bool{"each": true, "if": true, "unless": true, "with": true}
	inlineHelpers  = map[string]bool{"lookup": true, "json": true}
	helperNames    = "each, if, unless, with, lookup, json"
	refusedHelpers = map[string]bool{ // raymond's global helpers that log or are not offered
		"log": true, "equal": true, "ifGt": true, "ifLt": true, "ifEq": true,
		"ifMatchesRegexStr": true, "pluralize": true,
	}
)

type templateRule struct {
	tpl     *raymond.Template
	timeout time.Duration
	maxIter int
	maxOut  int
}

func compileTemplate(src, where string, opts Options) (rule, error) {
	prog, err := parser.Parse(src)
	if err != nil {
		return nil, &Error{Code: CodeInvalidTemplate, Path: where, Msg: oneLine(err.Error()), Err: err}
	}
	if err := checkNode(prog); err != nil {
		return nil, &Error{Code: CodeInvalidTemplate, Path: where, Msg: err.Error()}
	}
	tpl, err := raymond.Parse(src)
	if err != nil {
		return nil, &Error{Code: CodeInvalidTemplate, Path: where, Msg: oneLine(err.Error()), Err: err}
	}
	tpl.RegisterHelpers(map[string]any{
		"each":   eachHelper,
		"if":     ifHelper,
		"unless": unlessHelper,
		"with":   withHelper,
		"json":   jsonHelper,
	})
	return templateRule{tpl: tpl, timeout: opts.RuleTimeout, maxIter: opts.MaxTemplateIterations, maxOut: opts.MaxOutputBytes}, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// checkNode walks the template's syntax tree and refuses what templates may
// not use (see the comment at the top of this file).
func checkNode(n ast.Node) error {
	switch x := n.(type) {
	case *ast.Program:
		if x == nil {
			return nil
		}
		if len(x.BlockParams) > 1 {
			return fmt.Errorf("block parameters %v: only one (as |item|) is supported; use @index or @key for the position", x.BlockParams)
		}
		for _, s := range x.Body {
			if err := checkNode(s); err != nil {
				return err
			}
		}
	case *ast.MustacheStatement:
		return checkExpr(x.Expression, x.Line)
	case *ast.BlockStatement:
		name := x.Expression.HelperName()
		if x.Program != nil && !blockHelpers[name] {
			return fmt.Errorf("line %d: section {{#%s}}: open blocks with a helper: {{#each …}}, {{#with …}}, {{#if …}} or {{#unless …}}", x.Line, x.Expression.Canonical())
		}
		if err := checkExpr(x.Expression, x.Line); err != nil {
			return err
		}
		if x.Program != nil {
			if err := checkNode(x.Program); err != nil {
				return err
			}
		}
		if x.Inverse != nil {
			return checkNode(x.Inverse)
		}
	case *ast.PartialStatement:
		return fmt.Errorf("line %d: partials ({{> …}}) are not supported", x.Line)
	}
	return nil
}

func checkExpr(e *ast.Expression, line int) error {
	if e == nil {
		return nil
	}
	if err := checkPath(e.Path, line); err != nil {
		return err
	}
	name := e.HelperName()
	if refusedHelpers[name] {
		return fmt.Errorf("line %d: helper %q is not available; the helpers are %s", line, name, helperNames)
	}
	if (len(e.Params) > 0 || e.Hash != nil) && !blockHelpers[name] && !inlineHelpers[name] {
		return fmt.Errorf("line %d: unknown helper %q; the helpers are %s", line, e.Canonical(), helperNames)
	}
	for _, p := range e.Params {
		if err := checkParam(p, line); err != nil {
			return err
		}
	}
	if e.Hash != nil {
		for _, pair := range e.Hash.Pairs {
			if err := checkParam(pair.Val, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPath refuses data variables templates may not name (the run budget).
func checkPath(n ast.Node, line int) error {
	if p, ok := n.(*ast.PathExpression); ok && p.Data && len(p.Parts) > 0 && strings.Contains(p.Parts[0], " ") {
		return fmt.Errorf("line %d: @%s is not a template variable", line, p.Parts[0])
	}
	return nil
}

func checkParam(n ast.Node, line int) error {
	switch x := n.(type) {
	case *ast.PathExpression:
		return checkPath(x, line)
	case *ast.SubExpression:
		return checkExpr(x.Expression, line)
	case *ast.Expression:
		return checkExpr(x, line)
	}
	return nil
}

// budget bounds one template run.
type budget struct {
	ctx     context.Context
	iter    int
	maxIter int
	maxOut  int
}

func (b *budget) step() {
	b.iter++
	if b.iter > b.maxIter {
		panic(errorf(CodeRuleTooLarge, "", "template ran more than %d {{#each}} iterations", b.maxIter))
	}
	if b.iter%64 == 0 {
		b.checkDeadline()
	}
}

func (b *budget) checkDeadline() {
	if err := b.ctx.Err(); err != nil {
		panic(&Error{Code: CodeRuleTimeout, Msg: "template ran past its deadline", Err: err})
	}
}

func (b *budget) output(n int) {
	if n > b.maxOut {
		panic(tooLarge(b.maxOut))
	}
}

func budgetOf(opts *raymond.Options) *budget {
	b, _ := opts.DataFrame().Get(budgetKey).(*budget)
	if b == nil {
		// Only reachable if a template ran outside templateRule.apply.
		panic(errorf(CodeRuleFailed, "", "template run without a budget"))
	}
	return b
}

func (r templateRule) apply(ctx context.Context, e *env) (any, error) {
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	b := &budget{ctx: rctx, maxIter: r.maxIter, maxOut: r.maxOut}
	frame := raymond.NewDataFrame()
	frame.Set(budgetKey, b)
	out, err := r.tpl.ExecWith(e.root(), frame)
	if err != nil {
		if _, ok := err.(*Error); ok {
			return nil, err
		}
		return nil, &Error{Code: CodeRuleFailed, Msg: "template: " + oneLine(err.Error()), Err: err}
	}
	if len(out) > r.maxOut {
		return nil, tooLarge(r.maxOut)
	}
	return out, nil
}

// truthy follows Handlebars: false, null, "", 0 and [] are false; objects,
// even empty ones, are true. JSON numbers compare by value ("0.0" is false).
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

func eachHelper(v any, opts *raymond.Options) any {
	b := budgetOf(opts)
	var sb strings.Builder
	n := 0
	iterate := func(elem any, index int, key any, last bool) {
		b.step()
		frame := opts.NewDataFrame()
		frame.Set("index", index)
		frame.Set("key", key)
		frame.Set("first", index == 0)
		frame.Set("last", last)
		sb.WriteString(opts.FnCtxData(elem, frame))
		b.output(sb.Len())
		n++
	}
	switch x := v.(type) {
	case []any:
		for i, elem := range x {
			iterate(elem, i, i, i == len(x)-1)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // a stable order; JSON objects in Go carry none
		for i, k := range keys {
			iterate(x[k], i, k, i == len(keys)-1)
		}
	}
	if n == 0 {
		return opts.Inverse()
	}
	b.checkDeadline()
	return sb.String()
}

func ifHelper(v any, opts *raymond.Options) any {
	if truthy(v) {
		return opts.Fn()
	}
	return opts.Inverse()
}

func unlessHelper(v any, opts *raymond.Options) any {
	if truthy(v) {
		return opts.Inverse()
	}
	return opts.Fn()
}

func withHelper(v any, opts *raymond.Options) any {
	if truthy(v) {
		return opts.FnWith(v)
	}
	return opts.Inverse()
}

// jsonHelper renders a value as compact JSON, unescaped: {{json context.tools}}.
func jsonHelper(v any) raymond.SafeString {
	out, err := Encode(v)
	if err != nil {
		panic(&Error{Code: CodeRuleFailed, Msg: "json helper: " + err.Error(), Err: err})
	}
	return raymond.SafeString(out)
}
