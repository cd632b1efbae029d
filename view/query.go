package view

import (
	"strings"

	"github.com/theory/jsonpath"
)

// Query is a compiled RFC 9535 JSONPath query with the cost bounds of an
// extract rule, for callers outside views that select from contexts (the
// store's selectors). Compile once; Select is safe for concurrent use.
type Query struct {
	path      *jsonpath.Path
	rootScans int
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
	return &Query{path: p, rootScans: rootScans}, nil
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
	return q.path.Select(doc), nil
}
