package view

import (
	"strconv"
	"strings"

	"github.com/theory/jsonpath"
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
	q := &Query{path: p, rootScans: rootScans}
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

// Select returns the nodes q selects from doc, a value decoded by
// DecodeJSON. A query whose filter reads the whole document once per node
// is priced as in an extract rule; past the bound it is a CodeTooCostly
// *Error and nothing is selected.
func (q *Query) Select(doc any) ([]any, error) {
	if q.rootScans > 0 {
		n := countNodes(doc, maxRootScanVisits+1)
		visits := n
		for range q.rootScans {
			if visits = mulCost(visits, n); visits < 0 || visits > maxRootScanVisits {
				return nil, errorf(CodeTooCostly, "", "the query's filter reads the whole document once per node (%d nodes); the limit is %d visits", n, maxRootScanVisits)
			}
		}
	}
	if q.steps != nil {
		return follow(doc, q.steps), nil
	}
	return q.path.Select(doc), nil
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
