package view

import (
	"strconv"
	"strings"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"
)

// Query is a compiled RFC 9535 JSONPath query with the cost bounds of an
// extract rule, for callers outside views that select from contexts (the
// store's selectors). Compile once; Select is safe for concurrent use.
type Query struct {
	path      *jsonpath.Path
	rootScans int
	// steps are a singular query's names (string) and indexes (int), which
	// Select follows without the general evaluator; nil otherwise.
	steps []any
	// perNode is the most nodes the query may produce per node of a
	// document (queryPerNode).
	perNode int64
}

// CompileQuery parses src as an extract rule's query would be: at most
// 4 KiB, at most one descendant segment. Errors are *Error with
// CodeInvalidJSONPath or CodeTooLarge and an empty Path (the caller
// names the field).
func CompileQuery(src string) (*Query, error) {
	if len(src) > maxQueryBytes {
		return nil, errorf(CodeTooLarge, "", "query is %d bytes; the limit is %d", len(src), maxQueryBytes)
	}
	p, err := jsonpath.Parse(src)
	if err != nil {
		return nil, &Error{Code: CodeInvalidJSONPath, Msg: strings.TrimPrefix(err.Error(), "jsonpath: "), Err: err}
	}
	descendants, rootScans := scanJSONPath(p.String())
	if descendants > 1 {
		return nil, errorf(CodeInvalidJSONPath, "", "%d descendant segments (..): a query may use at most one", descendants)
	}
	q := &Query{path: p, rootScans: rootScans, perNode: queryPerNode(p.Query())}
	if p.Query().Singular() != nil {
		q.steps, _ = singularSteps(p.String())
	}
	return q, nil
}

// singularSteps reads a singular query's normalized form ($, then ["name"]
// written by strconv.Quote, or [index]); ok is false for any other form.
func singularSteps(q string) (steps []any, ok bool) {
	if !strings.HasPrefix(q, "$") {
		return nil, false
	}
	steps = []any{}
	for i := 1; i < len(q); {
		if q[i] != '[' || i+1 >= len(q) {
			return nil, false
		}
		j := i + 1
		if q[j] == '"' {
			end := skipQuoted(q, j)
			if end >= len(q) {
				return nil, false
			}
			name, err := strconv.Unquote(q[j : end+1])
			if err != nil {
				return nil, false
			}
			steps = append(steps, name)
			j = end + 1
		} else {
			k := j
			if q[k] == '-' {
				k++
			}
			for k < len(q) && q[k] >= '0' && q[k] <= '9' {
				k++
			}
			n, err := strconv.Atoi(q[j:k])
			if err != nil {
				return nil, false
			}
			steps = append(steps, n)
			j = k
		}
		if j >= len(q) || q[j] != ']' {
			return nil, false
		}
		i = j + 1
	}
	return steps, true
}

// String is the query in its normalized form.
func (q *Query) String() string { return q.path.String() }

// MaxQueryWork bounds the work of selecting from one document, summed over
// the queries that share a QueryBudget: the view engine's bound for a filter
// that scans the document (maxRootScanVisits). A few million node visits
// take tens of milliseconds, and a query's nodes are produced one at a time,
// so the bound is on time, not on memory.
const MaxQueryWork = maxRootScanVisits

// QueryBudget is the selection work left for one document. A caller that
// evaluates several queries on one document per event (a selector's
// conditions) shares one QueryBudget among them, so that their sum is bounded.
// A QueryBudget is not safe for concurrent use.
type QueryBudget struct {
	doc   any
	nodes int64 // the document's nodes, counted on first use; -1 until then
	left  int64
}

// NewQueryBudget allows work units of selection from doc (a value decoded by
// DecodeJSON).
func NewQueryBudget(doc any, work int64) *QueryBudget {
	return &QueryBudget{doc: doc, nodes: -1, left: max(work, 0)}
}

// charge takes the work of a non-singular query priced at perNode units per
// node of the document, or says why it is too costly (and takes nothing).
func (b *QueryBudget) charge(q *Query) error {
	if b.nodes < 0 {
		b.nodes = countUpTo(b.doc, b.left+1)
	}
	n := b.nodes
	cost := mulCost(n, q.perNode)
	for range q.rootScans {
		// The filter reads the whole document once per node.
		if cost >= 0 {
			cost = mulCost(cost, n)
		}
	}
	if cost < 0 || cost > b.left {
		if q.rootScans > 0 {
			return errorf(CodeTooCostly, "", "the query's filter reads the whole document once per node (%d nodes); the limit is %d visits", n, b.left)
		}
		return errorf(CodeTooCostly, "", "the query may visit %d nodes per node of the document (%d nodes); %d visits are left of %d", q.perNode, n, b.left, MaxQueryWork)
	}
	b.left -= cost
	return nil
}

// countUpTo counts the JSON values in v (v itself included), stopping past
// limit. It recurses (DecodeJSON bounds the nesting) rather than stacking
// an array's elements, so counting allocates nothing.
func countUpTo(v any, limit int64) int64 {
	n := int64(1)
	switch c := v.(type) {
	case map[string]any:
		for _, m := range c {
			if n > limit {
				break
			}
			n += countUpTo(m, limit-n)
		}
	case []any:
		for _, m := range c {
			if n > limit {
				break
			}
			n += countUpTo(m, limit-n)
		}
	}
	return n
}

// Select returns the nodes q selects from doc, a value decoded by
// DecodeJSON, within MaxQueryWork. A path too costly for the document is a
// CodeTooCostly *Error and nothing is selected.
func (q *Query) Select(doc any) ([]any, error) {
	if q.steps != nil && q.rootScans == 0 {
		return follow(doc, q.steps), nil
	}
	var out []any
	err := q.Each(NewQueryBudget(doc, MaxQueryWork), func(n any) bool {
		out = append(out, n)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Each calls yield with each node q selects from b's document, in Select's
// order, until yield returns false. A non-singular query is priced before
// it runs, by the document's nodes times the nodes the query may produce
// per node (the product of its segments' selector counts, summed over the
// segments); when that exceeds what b has left, Each yields nothing and
// returns a CodeTooCostly *Error, so that a path too costly for a record
// never matches it, whatever the order of the record's members. Nodes are
// produced one at a time: nothing is materialised.
func (q *Query) Each(b *QueryBudget, yield func(node any) bool) error {
	if q.steps != nil && q.rootScans == 0 {
		for _, n := range follow(b.doc, q.steps) {
			yield(n)
		}
		return nil
	}
	if err := b.charge(q); err != nil {
		return err
	}
	w := walker{segs: q.path.Query().Segments(), root: b.doc, yield: yield}
	w.from(0, b.doc)
	return nil
}

// queryPerNode prices a query: the most nodes it may produce per node of a
// document, summed over its segments. A segment of k selectors produces at
// most k nodes per child of its input nodes, and a node is a child of one
// parent, so after segments of k1..ki selectors a node appears at most
// k1×…×ki times. A filter weighs one selector plus the price of each
// query in it: a relative query reads at most its candidate's subtree
// that many times over, and the candidates' subtrees are disjoint (an
// absolute query is priced once more by rootScans). The sum is capped
// past MaxQueryWork.
func queryPerNode(q *spec.PathQuery) int64 {
	var sum, prod int64 = 0, 1
	for _, s := range q.Segments() {
		k := int64(0)
		for _, sel := range s.Selectors() {
			w := int64(1)
			if f, ok := sel.(*spec.FilterSelector); ok {
				w = filterWeight(f.String())
			}
			if k += w; k > MaxQueryWork {
				return MaxQueryWork + 1
			}
		}
		prod = mulCost(prod, max(k, 1))
		if prod < 0 || prod > MaxQueryWork {
			return MaxQueryWork + 1
		}
		if sum += prod; sum > MaxQueryWork {
			return MaxQueryWork + 1
		}
	}
	return max(sum, 1)
}

// filterWeight prices a filter selector in its normalized form (?…): one,
// plus queryPerNode of each query in it (@ or $ and the segments that
// follow; queries nested in those are priced by the recursion). A query
// that does not parse on its own is priced past MaxQueryWork: refused
// rather than guessed.
func filterWeight(f string) int64 {
	w := int64(1)
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '"', '\'':
			i = skipQuoted(f, i)
		case '@', '$':
			end := segmentsEnd(f, i+1)
			sub, err := jsonpath.Parse("$" + f[i+1:end])
			if err != nil {
				return MaxQueryWork + 1
			}
			if w += queryPerNode(sub.Query()); w > MaxQueryWork {
				return MaxQueryWork + 1
			}
			i = end - 1
		}
	}
	return w
}

// segmentsEnd returns the end of the normalized segments ([…] or ..[…])
// that start at q[i].
func segmentsEnd(q string, i int) int {
	for i < len(q) {
		j := i
		if strings.HasPrefix(q[j:], "..") {
			j += 2
		}
		if j >= len(q) || q[j] != '[' {
			return i
		}
		depth := 0
	scan:
		for ; j < len(q); j++ {
			switch q[j] {
			case '"', '\'':
				j = skipQuoted(q, j)
			case '[':
				depth++
			case ']':
				if depth--; depth == 0 {
					break scan
				}
			}
		}
		if j >= len(q) {
			return len(q)
		}
		i = j + 1
	}
	return i
}

// walker evaluates a query's segments depth first: a segment's results are
// passed on one at a time to the next segment, which yields them in the
// order the breadth-first evaluation of RFC 9535 (and theory/jsonpath)
// gives, since each node's results are contiguous in it.
type walker struct {
	segs  []*spec.Segment
	root  any
	yield func(any) bool
	done  bool
}

// from applies segments i… to node v.
func (w *walker) from(i int, v any) {
	if w.done {
		return
	}
	if i == len(w.segs) {
		if !w.yield(v) {
			w.done = true
		}
		return
	}
	w.segment(i, v)
}

// segment applies segment i to v (and, for a descendant segment, to v's
// descendants, v first, children in order), passing each result on.
func (w *walker) segment(i int, v any) {
	s := w.segs[i]
	for _, sel := range s.Selectors() {
		if w.done {
			return
		}
		w.selector(i, sel, v)
	}
	if !s.IsDescendant() {
		return
	}
	switch c := v.(type) {
	case []any:
		for _, x := range c {
			if w.done {
				return
			}
			w.segment(i, x)
		}
	case map[string]any:
		for _, x := range c {
			if w.done {
				return
			}
			w.segment(i, x)
		}
	}
}

// selector applies one selector of segment i to v.
func (w *walker) selector(i int, sel spec.Selector, v any) {
	next := i + 1
	switch sel := sel.(type) {
	case spec.Name:
		if m, ok := v.(map[string]any); ok {
			if x, ok := m[string(sel)]; ok {
				w.from(next, x)
			}
		}
	case spec.Index:
		if a, ok := v.([]any); ok {
			j := int(sel)
			if j < 0 {
				j += len(a)
			}
			if j >= 0 && j < len(a) {
				w.from(next, a[j])
			}
		}
	case spec.WildcardSelector:
		w.children(next, v, nil)
	case *spec.FilterSelector:
		w.children(next, v, func(x any) bool { return sel.Eval(x, w.root) })
	case spec.SliceSelector:
		a, ok := v.([]any)
		if !ok {
			return
		}
		lower, upper := sel.Bounds(len(a))
		switch step := sel.Step(); {
		case step > 0:
			for j := lower; j < upper && !w.done; j += step {
				w.from(next, a[j])
			}
		case step < 0:
			for j := upper; lower < j && !w.done; j += step {
				w.from(next, a[j])
			}
		}
	default:
		// A selector this walker does not know: theory/jsonpath's own
		// evaluation, materialising this one node's results.
		for _, x := range sel.Select(v, w.root) {
			if w.done {
				return
			}
			w.from(next, x)
		}
	}
}

// children passes on v's children that keep accepts (all when nil).
func (w *walker) children(next int, v any, keep func(any) bool) {
	switch c := v.(type) {
	case []any:
		for _, x := range c {
			if w.done {
				return
			}
			if keep == nil || keep(x) {
				w.from(next, x)
			}
		}
	case map[string]any:
		for _, x := range c {
			if w.done {
				return
			}
			if keep == nil || keep(x) {
				w.from(next, x)
			}
		}
	}
}

// follow selects the node a singular query's steps lead to from doc: at
// most one, as RFC 9535 says (a negative index counts from the end).
func follow(doc any, steps []any) []any {
	cur := doc
	for _, s := range steps {
		switch s := s.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			if cur, ok = m[s]; !ok {
				return nil
			}
		case int:
			a, ok := cur.([]any)
			if !ok {
				return nil
			}
			i := s
			if i < 0 {
				i += len(a)
			}
			if i < 0 || i >= len(a) {
				return nil
			}
			cur = a[i]
		}
	}
	return []any{cur}
}
