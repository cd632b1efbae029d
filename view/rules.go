package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/theory/jsonpath"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// literalRule yields its value as given.
type literalRule struct{ value any }

func (r literalRule) apply(context.Context, *env) (any, error) { return r.value, nil }

// extractRule runs an RFC 9535 JSONPath query against the filtered context.
// A singular query (names and indexes only) yields its value or null; any
// other query yields an array, even of zero or one nodes.
type extractRule struct {
	path      *jsonpath.Path
	singular  bool
	maxOut    int
	rootScans int // absolute queries in filters that are not singular
}

// maxRootScanVisits bounds the node visits of a query whose filter holds
// an absolute query that is not singular: that query reads the document
// once per candidate node, n×n visits in all, and a JSONPath selection
// cannot be interrupted. A few million visits take well under the rule
// deadline; past that, the query is refused as too costly for the record
// (a jq rule, which the deadline interrupts, can do the same work).
const maxRootScanVisits = 4 << 20

// maxQueryBytes bounds a JSONPath query: filter functions such as match()
// may compile their pattern once per node.
const maxQueryBytes = 4 << 10

func compileExtract(src, where string, opts Options) (rule, error) {
	if len(src) > maxQueryBytes {
		return nil, errorf(CodeTooLarge, where, "query is %d bytes; the limit is %d", len(src), maxQueryBytes)
	}
	p, err := jsonpath.Parse(src)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "jsonpath: ")
		return nil, &Error{Code: CodeInvalidJSONPath, Path: where, Msg: msg, Err: err}
	}
	// Bound the work a query can do, since Select cannot be interrupted: a
	// descendant segment visits every node below it. An absolute query
	// inside a filter costs one lookup per candidate node when it is
	// singular (names and indexes only, all RFC 9535 allows in a
	// comparison); one that is not walks the document once per candidate,
	// which apply bounds by the record's size.
	descendants, rootScans := scanJSONPath(p.String())
	if descendants > 1 {
		return nil, errorf(CodeInvalidJSONPath, where, "%d descendant segments (..): a query may use at most one; use a jq rule for deeper searches", descendants)
	}
	return extractRule{path: p, singular: p.Query().Singular() != nil, maxOut: opts.MaxOutputBytes, rootScans: rootScans}, nil
}

// scanJSONPath reads a query in its normalized form (segments written
// ["name"], [0], [*], [a:b], [?…], ..) and counts descendant segments
// ("..") and the absolute queries after the leading $ that are not
// singular, skipping string literals.
func scanJSONPath(q string) (descendants, rootScans int) {
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '\'', '"':
			i = skipQuoted(q, i)
		case '.':
			if i+1 < len(q) && q[i+1] == '.' {
				descendants++
				i++
			}
		case '$':
			if i > 0 && !singularAt(q, i+1) {
				rootScans++
			}
		}
	}
	return descendants, rootScans
}

// skipQuoted returns the index of the quote closing the string literal
// that opens at q[i].
func skipQuoted(q string, i int) int {
	quote := q[i]
	for i++; i < len(q) && q[i] != quote; i++ {
		if q[i] == '\\' {
			i++
		}
	}
	return i
}

// singularAt reports whether the segments of the normalized query from
// q[i] on, up to the end of the query they belong to, are a singular
// query's: each one name (["x"]) or one index ([0]).
func singularAt(q string, i int) bool {
	for i < len(q) {
		switch {
		case strings.HasPrefix(q[i:], ".."):
			return false
		case q[i] != '[':
			return true
		}
		j := i + 1
		switch {
		case j < len(q) && (q[j] == '"' || q[j] == '\''):
			j = skipQuoted(q, j) + 1
		default:
			k := j
			if k < len(q) && q[k] == '-' {
				k++
			}
			for k < len(q) && q[k] >= '0' && q[k] <= '9' {
				k++
			}
			if k == j || (k == j+1 && q[j] == '-') {
				return false // a wildcard, slice or filter
			}
			j = k
		}
		if j >= len(q) || q[j] != ']' {
			return false // several selectors, or a slice
		}
		i = j + 1
	}
	return true
}

func (r extractRule) apply(_ context.Context, e *env) (any, error) {
	if r.rootScans > 0 {
		// Each such query reads up to every node once per candidate node.
		// k such queries may nest (each in the other's filter), so the
		// work is priced as n^(k+1): exact for nested ones, an
		// overestimate for queries side by side.
		n := countNodes(e.context, maxRootScanVisits+1)
		visits := n
		for range r.rootScans {
			if visits = mulCost(visits, n); visits < 0 || visits > maxRootScanVisits {
				break
			}
		}
		if visits < 0 || visits > maxRootScanVisits {
			return nil, errorf(CodeTooCostly, "", "the query's filter reads the whole document once per node (%d nodes: about %d visits; the limit is %d): use a singular query ($.a.b) or a jq rule",
				n, max(visits, n), maxRootScanVisits)
		}
	}
	nodes := r.path.Select(e.context)
	if err := e.meter.spend(mulCost(int64(len(nodes)), 16), "the JSONPath selection"); err != nil {
		return nil, err
	}
	var out any
	if r.singular {
		if len(nodes) > 0 {
			out = nodes[0]
		}
	} else {
		out = []any(nodes)
		if nodes == nil {
			out = []any{}
		}
	}
	size, _ := measure(out, r.maxOut)
	if size > r.maxOut {
		return nil, tooLarge(r.maxOut)
	}
	if err := e.meter.hold(int64(size), "the JSONPath output"); err != nil {
		return nil, err
	}
	return out, nil
}

// jqRule runs a compiled gojq query with a deadline and an output cap.
type jqRule struct {
	code    *gojq.Code
	timeout func(context.Context) (context.Context, context.CancelFunc)
	maxOut  int
}

func compileJQ(src, where string, opts Options) (rule, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		msg := err.Error()
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			// Offset counts the bytes read through the bad token.
			line, col := strictjson.Position([]byte(src), int64(pe.Offset-len(pe.Token)))
			msg = fmt.Sprintf("line %d, column %d: %s", line, col, msg)
		}
		return nil, &Error{Code: CodeInvalidJQ, Path: where, Msg: msg, Err: err}
	}
	if strings.Contains(src, reservedPrefix) {
		return nil, errorf(CodeInvalidJQ, where, "names starting with %s are reserved", reservedPrefix)
	}
	// No module loader, environment loader or input iterator: modules,
	// $ENV/env and input/inputs stay disabled.
	code, err := compilePriced(q)
	if err != nil {
		return nil, &Error{Code: CodeInvalidJQ, Path: where, Msg: err.Error(), Err: err}
	}
	d := opts.RuleTimeout
	return jqRule{
		code:    code,
		timeout: func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, d) },
		maxOut:  opts.MaxOutputBytes,
	}, nil
}

func (r jqRule) apply(ctx context.Context, e *env) (any, error) {
	rctx, cancel := r.timeout(ctx)
	defer cancel()
	iter := r.code.RunWithContext(rctx, e.context, e.meter)
	var (
		outs  []any
		total int
	)
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil && halt.ExitCode() == 0 {
				break // "halt": stop without error
			}
			if rctx.Err() != nil {
				if e := stopped(rctx); e != nil {
					return nil, e
				}
				if ctx.Err() == nil {
					return nil, &Error{Code: CodeRuleTimeout, Msg: "jq query ran past its deadline", Err: rctx.Err()}
				}
				return nil, &Error{Code: CodeRuleTimeout, Msg: "jq query stopped: " + ctx.Err().Error(), Err: ctx.Err()}
			}
			return nil, &Error{Code: CodeRuleFailed, Msg: "jq: " + jqErrorText(err), Err: err}
		}
		size, nonFinite := measure(v, r.maxOut-total)
		total += size
		if total > r.maxOut {
			return nil, tooLarge(r.maxOut)
		}
		if err := e.meter.hold(int64(size), "the jq output"); err != nil {
			return nil, err
		}
		if nonFinite {
			v = finite(v)
		}
		outs = append(outs, v)
	}
	switch len(outs) {
	case 0:
		return nil, nil
	case 1:
		return outs[0], nil
	}
	return outs, nil
}

// maxErrorValue bounds the value of a jq error that is quoted in the
// error's message: gojq encodes the whole value, which a query may make as
// large as its budget allows, and the message goes into responses.
const maxErrorValue = 1 << 10

func jqErrorText(err error) string {
	var ve gojq.ValueError
	if errors.As(err, &ve) {
		if s, isStr := ve.Value().(string); isStr && len(s) > maxErrorValue {
			return "error: " + strings.ToValidUTF8(s[:maxErrorValue], "") + "…"
		}
		if size, _ := measure(ve.Value(), maxErrorValue); size > maxErrorValue {
			return fmt.Sprintf("error: %s of more than %d bytes", kindOf(ve.Value()), maxErrorValue)
		}
	}
	return err.Error()
}

func tooLarge(limit int) *Error {
	return errorf(CodeRuleTooLarge, "", "output is larger than %d bytes", limit)
}

// maxOutputDepth bounds the nesting of rule output, so encoding it cannot
// exhaust the stack.
const maxOutputDepth = 10_000

// measure estimates the JSON size of v, stopping once it passes limit, and
// reports whether v holds a NaN or infinite float (which JSON cannot carry).
// Output nested deeper than maxOutputDepth counts as too large.
func measure(v any, limit int) (size int, nonFinite bool) {
	depth := 0
	var walk func(any)
	walk = func(v any) {
		if size > limit {
			return
		}
		depth++
		defer func() { depth-- }()
		if depth > maxOutputDepth {
			size = limit + 1
			return
		}
		switch x := v.(type) {
		case nil:
			size += 4
		case bool:
			size += 5
		case string:
			size += quotedLen(x)
		case json.Number:
			size += len(x)
		case int:
			size += 20
		case float64:
			size += 24
			if math.IsNaN(x) || math.IsInf(x, 0) {
				nonFinite = true
			}
		case *big.Int:
			size += x.BitLen()/3 + 2
		case []any:
			size += 2
			for _, e := range x {
				size++
				walk(e)
			}
		case map[string]any:
			size += 2
			for k, e := range x {
				size += len(k) + 4
				walk(e)
			}
		default:
			size += 24
		}
	}
	walk(v)
	return size, nonFinite
}

// quotedLen is the length of s as a JSON string: quotes, and escapes for
// quotes, backslashes and control characters.
func quotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// finite copies v with NaN as null and infinities as the largest finite
// floats, as jq prints them.
func finite(v any) any {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return nil
		case math.IsInf(x, 1):
			return math.MaxFloat64
		case math.IsInf(x, -1):
			return -math.MaxFloat64
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = finite(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = finite(e)
		}
		return out
	}
	return v
}

// formatRule replaces each {dotted.path} with the value at that path of the
// template root: strings as they are, other values as compact JSON, missing
// values as the empty string. "{{" and "}}" stand for literal braces.
type formatRule struct {
	parts  []formatPart
	maxOut int
}

type formatPart struct {
	text string
	path path // nil for literal text
}

func compileFormat(src, where string, opts Options) (rule, error) {
	var (
		parts []formatPart
		lit   strings.Builder
	)
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '{' && i+1 < len(src) && src[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(src) && src[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '}':
			return nil, errorf(CodeInvalidValue, where, "unmatched '}' at offset %d: write '}}' for a literal brace", i)
		case c == '{':
			end := strings.IndexByte(src[i+1:], '}')
			if end < 0 {
				return nil, errorf(CodeInvalidValue, where, "unclosed '{' at offset %d: write '{{' for a literal brace", i)
			}
			name := src[i+1 : i+1+end]
			p, err := parsePath(name, where)
			if err != nil {
				return nil, errorf(CodeInvalidPath, where, "placeholder at offset %d: %s", i, err.(*Error).Msg)
			}
			if lit.Len() > 0 {
				parts = append(parts, formatPart{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, formatPart{path: p})
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, formatPart{text: lit.String()})
	}
	return formatRule{parts: parts, maxOut: opts.MaxOutputBytes}, nil
}

func (r formatRule) apply(_ context.Context, e *env) (any, error) {
	var b strings.Builder
	root := e.root()
	for _, p := range r.parts {
		if p.path == nil {
			b.WriteString(p.text)
		} else if v, ok := lookup(root, p.path); !ok {
			if _, has := root[p.path[0].key]; !has && p.path[0].index < 0 {
				e.missingAtRoot(p.path[0].key)
			}
		} else {
			if s, isStr := v.(string); isStr {
				b.WriteString(s)
			} else {
				if size, _ := measure(v, r.maxOut); size > r.maxOut {
					return nil, tooLarge(r.maxOut)
				}
				enc, err := canonjson.Marshal(v)
				if err != nil {
					return nil, err
				}
				b.Write(enc)
			}
		}
		if b.Len() > r.maxOut {
			return nil, tooLarge(r.maxOut)
		}
	}
	if err := e.meter.hold(int64(b.Len()), "the format output"); err != nil {
		return nil, err
	}
	return b.String(), nil
}

// countNodes counts the JSON values in v (v itself included), stopping at
// limit.
func countNodes(v any, limit int64) int64 {
	n := int64(0)
	stack := []any{v}
	for len(stack) > 0 && n < limit {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		switch c := x.(type) {
		case map[string]any:
			for _, m := range c {
				stack = append(stack, m)
			}
		case []any:
			stack = append(stack, c...)
		}
	}
	return n
}
