package view

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/itchyny/gojq"
)

// A jq step can allocate gigabytes in one builtin call ("x" * 2e9,
// .[1e8] = 1, flatten of a shared structure), before any deadline or
// watchdog can act. So every builtin whose output can be far larger than
// its inputs is priced from its arguments before it runs: a query is
// compiled inside a prelude that redefines those builtins as a call of
// __ctxkit_cost (which charges the evaluation's meter, or refuses) followed
// by the builtin itself, reached through a name bound before the
// redefinition. jq scoping makes the redefinitions reach every call in the
// query, including closures passed to builtins such as sort_by(f), while
// the builtins' own definitions keep the originals. The builtins that
// gojq defines in jq and that call a costly builtin or operator on what
// the query gives them (INDEX's tostring of the key, sub's concatenation
// of each replacement) are redefined too, with the query's closure priced
// before the original definition uses its output.
//
// Operators are not looked up by name in gojq, so the query's +, *, / and
// = are first rewritten into calls of _add, _multiply, _divide and
// _assign, which the prelude then redefines; +=, |= and the other updates
// already call _modify and _add by name.
//
// The meter of the run is passed as the variable $__ctxkit_m. Names with
// the __ctxkit_ prefix are refused in queries, so a query can reach
// neither the meter nor the unpriced originals.

const reservedPrefix = "__ctxkit_"

// jqPrelude redefines the builtins whose output can outgrow their inputs.
// Arguments are bound last-first, the order in which gojq evaluates the
// arguments of its internal functions, so outputs come in the same order.
const jqPrelude = `
def __ctxkit_assign(p; $x): p = $x;
def __ctxkit_modify(p; f): p |= f;
def __ctxkit_setpath($p; $v): setpath($p; $v);
def __ctxkit_pick(p): pick(p);
def __ctxkit_fromstream(f): fromstream(f);
def __ctxkit_tojson: tojson;
def __ctxkit_tostring: tostring;
def __ctxkit_tohtml: _tohtml;
def __ctxkit_touri: _touri;
def __ctxkit_tourid: _tourid;
def __ctxkit_tocsv: _tocsv;
def __ctxkit_totsv: _totsv;
def __ctxkit_tosh: _tosh;
def __ctxkit_tobase64: _tobase64;
def __ctxkit_tobase64d: _tobase64d;
def __ctxkit_format($f): format($f);
def __ctxkit_explode: explode;
def __ctxkit_fromjson: fromjson;
def __ctxkit_addall: add;
def __ctxkit_flatten: flatten;
def __ctxkit_flatten($d): flatten($d);
def __ctxkit_transpose: transpose;
def __ctxkit_join($x): join($x);
def __ctxkit_split($x): split($x);
def __ctxkit_indices($x): indices($x);
def __ctxkit_index($x): index($x);
def __ctxkit_rindex($x): rindex($x);
def __ctxkit_strftime($f): strftime($f);
def __ctxkit_strflocaltime($f): strflocaltime($f);
def __ctxkit_match($re): match($re);
def __ctxkit_match($re; $flags): match($re; $flags);
def __ctxkit_capture($re): capture($re);
def __ctxkit_capture($re; $flags): capture($re; $flags);
def __ctxkit_scan($re): scan($re);
def __ctxkit_scan($re; $flags): scan($re; $flags);
def __ctxkit_splits($re): splits($re);
def __ctxkit_splits($re; $flags): splits($re; $flags);
def __ctxkit_split($re; $flags): split($re; $flags);
def __ctxkit_sub($re; str): sub($re; str);
def __ctxkit_sub($re; str; $flags): sub($re; str; $flags);
def __ctxkit_gsub($re; str): gsub($re; str);
def __ctxkit_gsub($re; str; $flags): gsub($re; str; $flags);
def __ctxkit_INDEX(stream; idx_expr): INDEX(stream; idx_expr);
def __ctxkit_contains($x): contains($x);
def __ctxkit_inside($x): inside($x);
def __ctxkit_sort: sort;
def __ctxkit_sort_by(f): sort_by(f);
def __ctxkit_group_by(f): group_by(f);
def __ctxkit_unique: unique;
def __ctxkit_unique_by(f): unique_by(f);
def __ctxkit_reverse: reverse;
def __ctxkit_keys: keys;
def __ctxkit_ascii_downcase: ascii_downcase;
def __ctxkit_ascii_upcase: ascii_upcase;
def __ctxkit_implode: implode;
def __ctxkit_to_entries: to_entries;
def __ctxkit_from_entries: from_entries;
def __ctxkit_with_entries(f): with_entries(f);
def __ctxkit_tostream: tostream;
def __ctxkit_del(f): del(f);
def __ctxkit_delpaths($p): delpaths($p);
def __ctxkit_paths(p; $d): reduce path(p) as $q (.; __ctxkit_cost($__ctxkit_m; "path"; $q; $d));

def _add(l; r): __ctxkit_operands($__ctxkit_m; "add"; l; r) | .[0] + .[1];
def _multiply(l; r): __ctxkit_operands($__ctxkit_m; "multiply"; l; r) | .[0] * .[1];
def _divide(l; r): __ctxkit_operands($__ctxkit_m; "divide"; l; r) | .[0] / .[1];
def _subtract(l; r): __ctxkit_operands($__ctxkit_m; "subtract"; l; r) | .[0] - .[1];
def contains($x): __ctxkit_cost($__ctxkit_m; "contains"; $x) | __ctxkit_contains($x);
def inside($x): __ctxkit_cost($__ctxkit_m; "inside"; $x) | __ctxkit_inside($x);
def _assign(p; $x): __ctxkit_paths(p; $x | __ctxkit_depth) as $_ | __ctxkit_assign(p; $x);
def _modify(p; f): __ctxkit_paths(p; 0) as $_ | __ctxkit_modify(p; f | __ctxkit_cost($__ctxkit_m; "nest"));
def setpath(p; v): v as $v | p as $p | __ctxkit_cost($__ctxkit_m; "setpath"; $p; $v | __ctxkit_depth) | __ctxkit_setpath($p; $v);
def pick(p): __ctxkit_paths(p; 0) as $_ | __ctxkit_pick(p);
def fromstream(f): __ctxkit_fromstream(f | __ctxkit_cost($__ctxkit_m; "stream"));
def tojson: __ctxkit_cost($__ctxkit_m; "tojson") | __ctxkit_tojson;
def tostring: __ctxkit_cost($__ctxkit_m; "tostring") | __ctxkit_tostring;
def _tohtml: __ctxkit_cost($__ctxkit_m; "format"; "html") | __ctxkit_tohtml;
def _touri: __ctxkit_cost($__ctxkit_m; "format"; "uri") | __ctxkit_touri;
def _tourid: __ctxkit_cost($__ctxkit_m; "format"; "urid") | __ctxkit_tourid;
def _tocsv: __ctxkit_cost($__ctxkit_m; "format"; "csv") | __ctxkit_tocsv;
def _totsv: __ctxkit_cost($__ctxkit_m; "format"; "tsv") | __ctxkit_totsv;
def _tosh: __ctxkit_cost($__ctxkit_m; "format"; "sh") | __ctxkit_tosh;
def _tobase64: __ctxkit_cost($__ctxkit_m; "format"; "base64") | __ctxkit_tobase64;
def _tobase64d: __ctxkit_cost($__ctxkit_m; "format"; "base64d") | __ctxkit_tobase64d;
def format($f): __ctxkit_cost($__ctxkit_m; "format"; $f) | __ctxkit_format($f);
def explode: __ctxkit_cost($__ctxkit_m; "explode") | __ctxkit_explode;
def fromjson: __ctxkit_cost($__ctxkit_m; "fromjson") | __ctxkit_fromjson;
def add: __ctxkit_cost($__ctxkit_m; "addall") | __ctxkit_addall;
def add(f): [f] | add;
def flatten: __ctxkit_cost($__ctxkit_m; "flatten"; 1e9) | __ctxkit_flatten;
def flatten($d): __ctxkit_cost($__ctxkit_m; "flatten"; $d) | __ctxkit_flatten($d);
def transpose: __ctxkit_cost($__ctxkit_m; "transpose") | __ctxkit_transpose;
def join($x): __ctxkit_cost($__ctxkit_m; "join"; $x) | __ctxkit_join($x);
def split($x): __ctxkit_cost($__ctxkit_m; "split"; $x) | __ctxkit_split($x);
def indices($x): __ctxkit_cost($__ctxkit_m; "indices"; $x) | __ctxkit_indices($x);
def index($x): __ctxkit_cost($__ctxkit_m; "indices"; $x) | __ctxkit_index($x);
def rindex($x): __ctxkit_cost($__ctxkit_m; "indices"; $x) | __ctxkit_rindex($x);
def strftime($f): __ctxkit_cost($__ctxkit_m; "strftime"; $f) | __ctxkit_strftime($f);
def strflocaltime($f): __ctxkit_cost($__ctxkit_m; "strftime"; $f) | __ctxkit_strflocaltime($f);
def match($re): __ctxkit_cost($__ctxkit_m; "match"; null) | __ctxkit_match($re);
def match($re; $flags): __ctxkit_cost($__ctxkit_m; "match"; $flags) | __ctxkit_match($re; $flags);
def capture($re): __ctxkit_cost($__ctxkit_m; "match"; null) | __ctxkit_capture($re);
def capture($re; $flags): __ctxkit_cost($__ctxkit_m; "match"; $flags) | __ctxkit_capture($re; $flags);
def scan($re): __ctxkit_cost($__ctxkit_m; "match"; "g") | __ctxkit_scan($re);
def scan($re; $flags): __ctxkit_cost($__ctxkit_m; "match"; "g") | __ctxkit_scan($re; $flags);
def splits($re): __ctxkit_cost($__ctxkit_m; "match"; "g") | __ctxkit_splits($re);
def splits($re; $flags): __ctxkit_cost($__ctxkit_m; "match"; "g") | __ctxkit_splits($re; $flags);
def split($re; $flags): __ctxkit_cost($__ctxkit_m; "match"; "g") | __ctxkit_split($re; $flags);
def sub($re; str): __ctxkit_cost($__ctxkit_m; "match"; null) | (if type == "string" then utf8bytelength else 0 end) as $n | __ctxkit_sub($re; str | __ctxkit_cost($__ctxkit_m; "replacement"; $n; null));
def sub($re; str; $flags): __ctxkit_cost($__ctxkit_m; "match"; $flags) | (if type == "string" then utf8bytelength else 0 end) as $n | __ctxkit_sub($re; str | __ctxkit_cost($__ctxkit_m; "replacement"; $n; $flags); $flags);
def gsub($re; str): __ctxkit_cost($__ctxkit_m; "match"; "g") | (if type == "string" then utf8bytelength else 0 end) as $n | __ctxkit_gsub($re; str | __ctxkit_cost($__ctxkit_m; "replacement"; $n; "g"));
def gsub($re; str; $flags): __ctxkit_cost($__ctxkit_m; "match"; "g") | (if type == "string" then utf8bytelength else 0 end) as $n | __ctxkit_gsub($re; str | __ctxkit_cost($__ctxkit_m; "replacement"; $n; "g"); $flags);
def INDEX(stream; idx_expr): __ctxkit_INDEX(stream; idx_expr | __ctxkit_cost($__ctxkit_m; "tostring"));
def INDEX(idx_expr): INDEX(.[]; idx_expr);
def sort: __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_sort;
def sort_by(f): __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_sort_by(f);
def group_by(f): __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_group_by(f);
def unique: __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_unique;
def unique_by(f): __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_unique_by(f);
def reverse: __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_reverse;
def keys: __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_keys;
def ascii_downcase: __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_ascii_downcase;
def ascii_upcase: __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_ascii_upcase;
def implode: __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_implode;
def to_entries: __ctxkit_cost($__ctxkit_m; "copy"; 512) | __ctxkit_to_entries;
def from_entries: __ctxkit_cost($__ctxkit_m; "copy"; 512) | __ctxkit_from_entries;
def with_entries(f): __ctxkit_cost($__ctxkit_m; "copy"; 512) | __ctxkit_with_entries(f);
def tostream: __ctxkit_cost($__ctxkit_m; "copy"; 512) | __ctxkit_tostream;
def del(f): __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_del(f);
def delpaths($p): __ctxkit_cost($__ctxkit_m; "copy") | __ctxkit_delpaths($p);
.`

const meterVar = "$" + reservedPrefix + "m"

var (
	preludeOnce sync.Once
	preludeDefs []*gojq.FuncDef
	preludeErr  error
)

// prelude returns the parsed redefinitions (parsed once; the compiler does
// not modify the syntax tree it is given, so they are shared).
func prelude() ([]*gojq.FuncDef, error) {
	preludeOnce.Do(func() {
		q, err := gojq.Parse(jqPrelude)
		if err != nil {
			preludeErr = fmt.Errorf("view: the jq prelude does not parse: %w", err)
			return
		}
		preludeDefs = q.FuncDefs
	})
	return preludeDefs, preludeErr
}

// compilePriced compiles a parsed query inside the prelude, with the meter
// variable and the pricing function.
func compilePriced(q *gojq.Query) (*gojq.Code, error) {
	defs, err := prelude()
	if err != nil {
		return nil, err
	}
	rewriteOperators(reflect.ValueOf(q), !definesOperator(reflect.ValueOf(q)))
	// Imports and module metadata belong at the top, where the compiler
	// looks for them (and, with no module loader, refuses them).
	wrapped := &gojq.Query{Meta: q.Meta, Imports: q.Imports, FuncDefs: defs,
		Term: &gojq.Term{Type: gojq.TermTypeQuery, Query: q}}
	q.Meta, q.Imports = nil, nil
	return gojq.Compile(wrapped,
		gojq.WithVariables([]string{meterVar}),
		gojq.WithFunction(reservedPrefix+"cost", 2, 4, jqCost),
		gojq.WithFunction(reservedPrefix+"operands", 4, 4, jqOperands),
		gojq.WithFunction(reservedPrefix+"depth", 0, 0, func(v any, _ []any) any { return depthOf(v, maxOutputDepth) }))
}

// operatorFuncs maps the operators that gojq compiles to direct calls onto
// the names the prelude redefines.
var operatorFuncs = map[gojq.Operator]string{
	gojq.OpAdd:    "_add",
	gojq.OpMul:    "_multiply",
	gojq.OpDiv:    "_divide",
	gojq.OpSub:    "_subtract",
	gojq.OpAssign: "_assign",
}

// rewriteOperators turns every l OP r in the syntax tree below v, for the
// operators of operatorFuncs, into the call name(l; r), but with skipCheap
// leaves the cheap operations (cheapOperation) to gojq. It walks the tree
// by reflection so that no kind of node (string interpolations, object
// keys, patterns, reduce and foreach clauses, …) is missed.
func rewriteOperators(v reflect.Value, skipCheap bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		rewriteOperators(v.Elem(), skipCheap)
		if q, ok := v.Interface().(*gojq.Query); ok && q.Term == nil && !(skipCheap && cheapOperation(q)) {
			if name, ok := operatorFuncs[q.Op]; ok {
				q.Term = &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: []*gojq.Query{q.Left, q.Right}}}
				q.Left, q.Right, q.Op = nil, nil, 0
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				rewriteOperators(v.Field(i), skipCheap)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			rewriteOperators(v.Index(i), skipCheap)
		}
	}
}

// definesOperator reports whether the query defines a function of an
// operator's name, which then takes every rewritten operation: no
// operation is left to gojq then, so that all of them keep one meaning.
func definesOperator(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return false
		}
		if d, ok := v.Interface().(*gojq.FuncDef); ok && len(d.Args) == 2 && slices.Contains(slices.Collect(maps.Values(operatorFuncs)), d.Name) {
			return true
		}
		return definesOperator(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && definesOperator(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if definesOperator(v.Index(i)) {
				return true
			}
		}
	}
	return false
}

// cheapOperation reports an operation that cannot cost more than its
// operands whatever they are, so that it need not be priced: a number
// literal added to, subtracted from or dividing anything (a number with a
// string, array or object is an error, and with null the number), or a
// product of two number literals. The most common arithmetic of views
// (.n + 1, length - 1, . / 100) then runs as plain gojq.
func cheapOperation(q *gojq.Query) bool {
	l, r := isNumberLiteral(q.Left), isNumberLiteral(q.Right)
	switch q.Op {
	case gojq.OpAdd, gojq.OpSub, gojq.OpDiv:
		return l || r
	case gojq.OpMul:
		return l && r
	}
	return false
}

func isNumberLiteral(q *gojq.Query) bool {
	return q != nil && q.Term != nil && q.Term.Type == gojq.TermTypeNumber && len(q.Term.SuffixList) == 0 && q.Op == 0
}

// jqOperands is __ctxkit_operands($meter; op; l; r): it prices the
// operator op on l and r and returns [l, r] for the operator itself. As a
// function of gojq's own kind it evaluates l and r in the order gojq
// evaluates an operator's operands, so outputs keep their order.
func jqOperands(_ any, args []any) any {
	if err, isErr := jqCost(nil, args).(error); isErr {
		return err
	}
	return []any{args[2], args[3]}
}

// jqCost is __ctxkit_cost($meter; op; args…): it prices the step op would
// take on its input and arguments, and passes its input through, or
// returns the meter's refusal (which also ends the run).
func jqCost(v any, args []any) any {
	m, ok := args[0].(*meter)
	if !ok {
		return fmt.Errorf("%scost: not a meter", reservedPrefix)
	}
	op, _ := args[1].(string)
	arg := func(i int) any {
		if i+2 < len(args) {
			return args[i+2]
		}
		return nil
	}
	var (
		n    int64
		what = op
	)
	switch op {
	case "add":
		n, what = addCost(arg(0), arg(1)), "+"
	case "multiply":
		n, what = multiplyCost(arg(0), arg(1), m.limit), "*"
	case "divide":
		n, what = splitCost(arg(0), arg(1)), "/"
	case "subtract":
		n, what = compareCost(arg(0), arg(1), m.limit), "-"
	case "contains":
		n = compareCost(v, arg(0), m.limit)
	case "inside":
		n, what = compareCost(arg(0), v, m.limit), "contains"
	case "path", "setpath":
		depth, _ := arg(1).(int)
		if err := pathCost(m, v, arg(0), depth, true); err != nil {
			return err
		}
		return v
	case "stream":
		if ev, ok := v.([]any); ok && len(ev) > 0 {
			depth := 0
			if len(ev) > 1 {
				depth = depthOf(ev[1], maxOutputDepth)
			}
			if err := pathCost(m, nil, ev[0], depth, false); err != nil {
				return err
			}
		}
		return v
	case "nest":
		// An update's new value goes below a path of at most
		// maxOutputDepth steps, so the result nests at most twice that.
		if d := depthOf(v, maxOutputDepth); d > maxOutputDepth {
			return m.refuse(fmt.Sprintf("an update's value nests more than %d levels deep; a view's values may nest at most %d", maxOutputDepth, maxOutputDepth))
		}
		return v
	case "tojson":
		n = textSize(v, m.limit)
	case "replacement":
		// sub and gsub append each replacement to their result with
		// gojq's own +, which the query's pricing does not reach, and
		// which copies the result so far: up to the input's length, plus
		// the replacements before, of which a global one makes at most
		// one per character and the empty match.
		if s, ok := v.(string); ok {
			in, _ := arg(0).(int)
			flags, _ := arg(1).(string)
			before := int64(1)
			if strings.Contains(flags, "g") {
				before = int64(in) + 1
			}
			n, what = mulCost(int64(len(s)), before)+int64(in), "a replacement"
		}
	case "copy":
		// Builtins that copy their input, or make a value per element
		// (sorting, reversing, keys, case conversion, entries), in one
		// step: without a price, a loop of such steps over a value near
		// the budget grows the heap by a budget per step.
		n, what = copyCost(v), "a copy of the input"
		if per, ok := gojq.ToInt(arg(0)); ok { // an object per element
			n = mulCost(lengthOf(v)+int64(len(asMap(v))), int64(per))
		}
	case "tostring":
		if _, isStr := v.(string); !isStr {
			n = textSize(v, m.limit)
		}
	case "format":
		f, _ := arg(0).(string)
		n, what = formatCost(v, f, m.limit), "@"+f
	case "explode":
		if s, ok := v.(string); ok {
			n = mulCost(int64(len(s)), 24)
		}
	case "fromjson":
		if s, ok := v.(string); ok {
			n = mulCost(int64(len(s)), 32)
		}
	case "addall":
		n, what = addAllCost(v), "add"
	case "flatten":
		depth, _ := gojq.ToInt(arg(0))
		n = mulCost(leafCount(v, depth, m.limit/16+1), 16)
	case "transpose":
		n = transposeCost(v)
	case "join":
		n = joinCost(v, arg(0))
	case "split":
		n = splitCost(v, arg(0))
	case "indices":
		n = mulCost(lengthOf(v)+1, 24)
		// gojq finds a sub-array by comparing it at every offset, a run
		// of n×m comparisons in one step that no deadline interrupts; each
		// comparison is priced as an element.
		if x, ok := arg(0).([]any); ok {
			n = max(n, mulCost(mulCost(lengthOf(v), int64(len(x))), 16))
			what = "a sub-array search"
		}
	case "strftime":
		if f, ok := arg(0).(string); ok {
			n = mulCost(int64(len(f)), 16)
		}
	case "match":
		flags, _ := arg(0).(string)
		n, what = 256, "a regular-expression match"
		if s, ok := v.(string); ok && strings.Contains(flags, "g") {
			n = mulCost(int64(len(s))+1, 256)
		}
	}
	if err := m.spend(n, what); err != nil {
		return err
	}
	return v
}

// Sizes are estimates of what Go allocates, in bytes: an element of an
// array or a value in an interface is 16, an object entry about 64.

func addCost(l, r any) int64 {
	switch x := l.(type) {
	case string:
		if y, ok := r.(string); ok {
			return int64(len(x) + len(y))
		}
	case []any:
		if y, ok := r.([]any); ok {
			return mulCost(int64(len(x)+len(y)), 16)
		}
	case map[string]any:
		if y, ok := r.(map[string]any); ok {
			return mulCost(int64(len(x)+len(y)), 64)
		}
	case *big.Int:
		if y, ok := r.(*big.Int); ok {
			return int64(max(x.BitLen(), y.BitLen())/8 + 16)
		}
	}
	return 0
}

func multiplyCost(l, r any, limit int64) int64 {
	if s, ok := r.(string); ok {
		l, r = r, l
	} else if _, ok := l.(string); !ok {
		if x, ok := l.(*big.Int); ok {
			if y, ok := r.(*big.Int); ok {
				return int64((x.BitLen()+y.BitLen())/8 + 16)
			}
		}
		lm, lok := l.(map[string]any)
		rm, rok := r.(map[string]any)
		if lok && rok { // a deep merge copies at most both sides
			a, _ := measure(lm, int(min(limit, 1<<40)))
			b, _ := measure(rm, int(min(limit, 1<<40)))
			return int64(a + b)
		}
		_ = s
		return 0
	}
	s := l.(string)
	f, ok := gojq.ToFloat64(r)
	if !ok || !(f > 0) {
		return 0
	}
	if f >= 1<<62 {
		return -1
	}
	return mulCost(int64(len(s)), int64(f)+1)
}

// splitCost prices cutting a string into pieces by a separator: one string
// header per piece.
func splitCost(s, sep any) int64 {
	x, ok := s.(string)
	y, ok2 := sep.(string)
	if !ok || !ok2 {
		return 0
	}
	pieces := int64(len(x))/int64(max(len(y), 1)) + 1
	return mulCost(pieces, 32)
}

// pathCost checks a path before a path update: an array index past the
// end of the array makes the update fill the gap with nulls. With a root,
// the growth over what exists is spent; without one (fromstream), only
// indexes too large for the budget are refused.
//
// An update also nests its value below the path in one step, and gojq
// walks paths and compares, copies and deletes values by recursion on the
// goroutine's stack, which no heap limit sees and whose overflow ends the
// process. So the path's length plus the depth of the value placed at its
// end (depth) may not pass maxOutputDepth: one step nests a value at most
// that deep, and only a jq step per level builds deeper ones.
func pathCost(m *meter, root, path any, depth int, spend bool) *Error {
	p, ok := path.([]any)
	if !ok {
		return nil
	}
	if len(p)+depth > maxOutputDepth {
		return m.refuse(fmt.Sprintf("a path update would nest a value %d levels deep; a view's values may nest at most %d", len(p)+depth, maxOutputDepth))
	}
	var growth int64
	cur, known := root, spend
	for _, step := range p {
		n, isIndex := indexOf(step)
		if !isIndex {
			if known {
				if obj, ok := cur.(map[string]any); ok {
					k, _ := step.(string)
					if c, ok := obj[k]; ok {
						cur = c
						continue
					}
				}
			}
			growth += 64
			known = false
			continue
		}
		if n < 0 {
			known = false
			continue
		}
		have := int64(0)
		if known {
			if arr, ok := cur.([]any); ok {
				have = int64(len(arr))
				if n < have {
					cur = arr[n]
					continue
				}
			}
		}
		grow := mulCost(n+1-have, 16)
		if grow < 0 || grow > m.limit {
			return m.refuse(fmt.Sprintf("a path update at index %d would allocate about %s; a step may take at most %s", n, byteCount(grow), byteCount(m.limit)))
		}
		growth += grow
		known = false
	}
	if !spend {
		return nil
	}
	return m.spend(growth, "a path update")
}

// indexOf reads an array index of a path: a number, or a slice's start.
func indexOf(step any) (int64, bool) {
	if s, ok := step.(map[string]any); ok {
		for _, k := range []string{"end", "start"} {
			if v, ok := s[k]; ok && v != nil {
				return indexOf(v)
			}
		}
		return 0, false
	}
	f, ok := gojq.ToFloat64(step)
	if !ok {
		return 0, false
	}
	if f >= 1<<62 {
		return 1 << 62, true
	}
	return int64(f), true
}

// formatFactors bound how much an @format can grow its text.
var formatFactors = map[string]int64{
	"text": 1, "json": 1, "html": 6, "uri": 3, "urid": 1, "csv": 2, "tsv": 2,
	"sh": 4, "base64": 2, "base64d": 1, "base32": 2, "base32d": 1,
}

func formatCost(v any, f string, limit int64) int64 {
	factor, ok := formatFactors[f]
	if !ok {
		factor = 6
	}
	return mulCost(textSize(v, limit), factor)
}

// textSize is the size of v as JSON text, escapes included, or a little
// more than limit once it passes limit.
func textSize(v any, limit int64) int64 {
	n, _ := measure(v, int(min(limit, 1<<40)))
	return int64(n)
}

func addAllCost(v any) int64 {
	arr, ok := v.([]any)
	if !ok {
		return 0
	}
	var n int64
	for _, e := range arr {
		switch x := e.(type) {
		case string:
			n += int64(len(x))
		case []any:
			n += int64(len(x)) * 16
		case map[string]any:
			n += int64(len(x)) * 64
		}
		if n < 0 {
			return -1
		}
	}
	return n
}

// leafCount counts what flatten to depth would produce, stopping past
// limit; shared sub-arrays are counted each time they occur, as flatten
// copies them.
func leafCount(v any, depth int, limit int64) int64 {
	var n int64
	var walk func(any, int)
	walk = func(v any, d int) {
		arr, ok := v.([]any)
		if !ok || d < 0 {
			n++
			return
		}
		for _, e := range arr {
			if n > limit {
				return
			}
			if _, sub := e.([]any); sub && d > 0 {
				walk(e, d-1)
			} else {
				n++
			}
		}
	}
	walk(v, depth)
	return n
}

func transposeCost(v any) int64 {
	rows, ok := v.([]any)
	if !ok {
		return 0
	}
	longest := 0
	for _, r := range rows {
		if a, ok := r.([]any); ok {
			longest = max(longest, len(a))
		}
	}
	return mulCost(mulCost(int64(len(rows)), int64(longest)), 16)
}

func joinCost(v, sep any) int64 {
	arr, ok := v.([]any)
	if !ok {
		return 0
	}
	s, _ := sep.(string)
	n := mulCost(int64(len(arr)), int64(len(s)))
	for _, e := range arr {
		switch x := e.(type) {
		case string:
			n += int64(len(x))
		case json.Number:
			n += int64(len(x))
		default:
			n += 24
		}
		if n < 0 {
			return -1
		}
	}
	return n
}

// depthOf is the nesting depth of v (0 for a scalar, 1 for [] or [1]),
// or limit+1 once it passes limit.
func depthOf(v any, limit int) int {
	var walk func(any, int) int
	walk = func(v any, d int) int {
		if d > limit {
			return d
		}
		deepest := d
		switch x := v.(type) {
		case []any:
			deepest = d + 1
			for _, e := range x {
				if deepest = max(deepest, walk(e, d+1)); deepest > limit {
					break
				}
			}
		case map[string]any:
			deepest = d + 1
			for _, e := range x {
				if deepest = max(deepest, walk(e, d+1)); deepest > limit {
					break
				}
			}
		}
		return deepest
	}
	return min(walk(v, 0), limit+1)
}

// copyCost is what a builtin that copies v, making an element of about
// 64 bytes per entry, allocates; the sort of a sort_by also holds one key
// array per element.
func copyCost(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []any:
		return mulCost(int64(len(x)), 64)
	case map[string]any:
		return mulCost(int64(len(x)), 128)
	}
	return 0
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// compareCost prices what gojq compares, in one step, to subtract array r
// from array l (each element of l with each of r) or to find whether l
// contains r (each element of r with each of l, at every level): the
// product of the sides' sizes, less for arrays on both sides, as an
// element's comparison stops at its own size. Comparisons use no memory,
// but they take time that no deadline interrupts, so they are priced in
// the same units, a comparison of one byte for a byte.
func compareCost(l, r any, limit int64) int64 {
	_, ls := l.(string)
	_, rs := r.(string)
	if ls || rs || !isContainer(l) || !isContainer(r) { // a string search is linear
		return 0
	}
	a, b := textSize(l, limit), textSize(r, limit)
	n := mulCost(a, b)
	if la, ok := l.([]any); ok {
		if ra, ok := r.([]any); ok {
			n = min(mulCost(a, int64(len(ra))), mulCost(int64(len(la)), b))
		}
	}
	return n
}

func isContainer(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return true
	}
	return false
}

func lengthOf(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []any:
		return int64(len(x))
	}
	return 0
}
