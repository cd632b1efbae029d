package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
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
		return nil, positioned(data, err, dec.InputOffset(), 1)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return nil, fmt.Errorf("line %d, column %d: unexpected data after the JSON value", line, col)
	}
	return v, nil
}

// positioned rewrites a decoding error to name the line and column. A
// SyntaxError's offset is back bytes past the bad character: 1 after Decode,
// 0 after Token.
func positioned(data []byte, err error, fallback, back int64) error {
	if err == io.EOF {
		return errors.New("empty input: expected a JSON value")
	}
	off := fallback
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset - back
	}
	if err == io.ErrUnexpectedEOF {
		off = int64(len(data))
		err = errors.New("unexpected end of JSON input")
	}
	line, col := position(data, off)
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// position turns a byte offset into a 1-based line and column; the column
// counts characters, as editors do.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}

// decodeStrict decodes a hints document: like DecodeJSON, but it also
// rejects duplicate keys and nesting deeper than maxDepth, naming the path.
func decodeStrict(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	d := strictDecoder{dec: dec, data: data}
	v, err := d.value("", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return nil, errorf(CodeInvalidJSON, "", "line %d, column %d: unexpected data after the JSON value", line, col)
	}
	return v, nil
}

type strictDecoder struct {
	dec    *json.Decoder
	data   []byte
	tokens int
}

func (d *strictDecoder) fail(err error) error {
	if err == io.EOF && d.tokens > 0 {
		err = io.ErrUnexpectedEOF // the document stopped part-way
	}
	return &Error{Code: CodeInvalidJSON, Msg: positioned(d.data, err, d.dec.InputOffset(), 0).Error(), Err: err}
}

func (d *strictDecoder) value(path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errorf(CodeInvalidValue, path, "nested deeper than %d levels", maxDepth)
	}
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.fail(err)
	}
	d.tokens++
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for d.dec.More() {
				kt, err := d.dec.Token()
				if err != nil {
					return nil, d.fail(err)
				}
				d.tokens++
				k := kt.(string)
				kp := joinPath(path, k)
				if _, dup := m[k]; dup {
					return nil, errorf(CodeDuplicateField, kp, "key %q appears twice", k)
				}
				v, err := d.value(kp, depth+1)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := d.dec.Token(); err != nil {
				return nil, d.fail(err)
			}
			return m, nil
		case '[':
			a := []any{}
			for i := 0; d.dec.More(); i++ {
				v, err := d.value(path+"["+strconv.Itoa(i)+"]", depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := d.dec.Token(); err != nil {
				return nil, d.fail(err)
			}
			return a, nil
		}
	}
	return tok, nil
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
