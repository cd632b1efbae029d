package view

import (
	"errors"
	"fmt"
)

// Code is a view error's code, one of the constants below.
type Code string

// Error codes are stable and machine-readable: servers put them in API errors
// and scripts match on them. Compile-time codes describe a hints document the
// caller must fix; run-time codes describe why a rule fell back.
const (
	CodeInvalidJSON     Code = "invalid_json"     // the hints (or input) are not valid JSON
	CodeUnknownField    Code = "unknown_field"    // a key the hints language does not define
	CodeDuplicateField  Code = "duplicate_field"  // the same key twice in one object
	CodeInvalidValue    Code = "invalid_value"    // a key with a value of the wrong type or form
	CodeUnknownRule     Code = "unknown_rule"     // a transform rule with an unknown "type"
	CodeInvalidPath     Code = "invalid_path"     // a malformed dotted path (include, exclude, format)
	CodeInvalidTemplate Code = "invalid_template" // a Handlebars template that does not parse or uses a forbidden feature
	CodeInvalidJSONPath Code = "invalid_jsonpath" // an RFC 9535 query that does not parse or is too costly
	CodeInvalidJQ       Code = "invalid_jq"       // a jq query that does not parse or compile
	CodeTooLarge        Code = "too_large"        // the hints document is over the size limit

	CodeRuleFailed   Code = "rule_failed"     // a rule raised an error at run time
	CodeRuleTimeout  Code = "rule_timeout"    // a rule ran past its deadline
	CodeRuleTooLarge Code = "rule_too_large"  // a rule's output passed the size cap
	CodeTooCostly    Code = "view_too_costly" // the view needed more memory than its budget, or the process's
)

// Error is a hints error with the place at fault. Path is a dotted location in
// the hints document, such as "transform.count.query" or "exclude[2]".
type Error struct {
	Code Code   // one of the Code constants
	Path string // where in the hints the fault is; empty for the document as a whole
	Msg  string // what is wrong, in words that say what to fix
	Err  error  // the underlying cause, if any
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports a match on Code, so errors.Is(err, &view.Error{Code: view.CodeRuleTimeout}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != "" && t.Code == e.Code && (t.Path == "" || t.Path == e.Path)
}

func errorf(code Code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func wrapError(code Code, path string, err error) *Error {
	var ve *Error
	if errors.As(err, &ve) {
		if ve.Path == "" {
			c := *ve
			c.Path = path
			return &c
		}
		return ve
	}
	return &Error{Code: code, Path: path, Msg: err.Error(), Err: err}
}
