package view

import (
	"bytes"
	"encoding/json"
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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, positioned(data, err, dec.InputOffset())
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := strictjson.Position(data, dec.InputOffset())
		return nil, fmt.Errorf("line %d, column %d: unexpected data after the JSON value", line, col)
	}
	return v, nil
}

// positioned rewrites an error of Decode to name the line and column. A
// SyntaxError's offset is one byte past the bad character after Decode.
func positioned(data []byte, err error, fallback int64) error {
	if err == io.EOF {
		return errors.New("empty input: expected a JSON value")
	}
	off := fallback
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset - 1
	}
	if err == io.ErrUnexpectedEOF {
		off = int64(len(data))
		err = errors.New("unexpected end of JSON input")
	}
	line, col := strictjson.Position(data, off)
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
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
