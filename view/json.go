package view

import (
	"errors"
	"fmt"
	"io"

	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// maxDepth bounds the nesting of hints documents; encoding/json bounds inputs.
const maxDepth = 128

// DecodeJSON decodes one JSON value the way views expect their input:
// numbers stay json.Number, so large integers and exact decimals pass through
// a view unchanged. Trailing data after the value is an error. Errors carry
// the line and column at fault.
func DecodeJSON(data []byte) (any, error) {
	v, err := strictjson.Value(data)
	if err == nil {
		return v, nil
	}
	e := err.(*strictjson.Error)
	switch {
	case e.Code == strictjson.CodeEmpty, e.Code == strictjson.CodeTrailing:
		return nil, errors.New(e.Error())
	case e.Err == io.ErrUnexpectedEOF:
		return nil, fmt.Errorf("line %d, column %d: %w", e.Line, e.Column, errors.New(e.Msg))
	}
	// The cause stays in the chain: a caller may look for its
	// *json.SyntaxError.
	return nil, fmt.Errorf("line %d, column %d: %w", e.Line, e.Column, e.Err)
}

// decodeStrict decodes a hints document: like DecodeJSON, but it also
// rejects duplicate keys and nesting deeper than maxDepth, naming the path.
func decodeStrict(data []byte) (any, error) {
	v, err := strictjson.Decode(data, strictjson.Limits{Depth: maxDepth})
	if err == nil {
		return v, nil
	}
	e := err.(*strictjson.Error)
	switch e.Code {
	case strictjson.CodeTooDeep:
		return nil, errorf(CodeInvalidValue, e.Path, "%s", e.Msg)
	case strictjson.CodeDuplicateKey:
		return nil, errorf(CodeDuplicateField, e.Path, "%s", e.Msg)
	case strictjson.CodeTrailing:
		return nil, errorf(CodeInvalidJSON, "", "%s", e.Error())
	}
	return nil, &Error{Code: CodeInvalidJSON, Msg: e.Error(), Err: e.Err}
}
