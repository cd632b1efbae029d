package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

func sortMembers(ms Members) {
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
}

// Decoder reads a document token by token, numbers as json.Number, for a
// caller that walks a known shape and names each field at fault itself.
// Its errors are *Error, placed.
type Decoder struct {
	dec    *json.Decoder
	data   []byte
	tokens int
}

// NewDecoder is a Decoder at the start of data.
func NewDecoder(data []byte) *Decoder {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &Decoder{dec: dec, data: data}
}

// Token is the next token (see json.Decoder.Token). A document that stops
// part-way is a CodeSyntax error with Err io.ErrUnexpectedEOF; one with
// no token at all, CodeEmpty with Err io.EOF.
func (d *Decoder) Token() (json.Token, error) {
	tok, err := d.dec.Token()
	if err != nil {
		if err == io.EOF {
			if d.tokens == 0 {
				return nil, &Error{Code: CodeEmpty, Offset: -1, Msg: "empty input: expected a JSON value", Err: err}
			}
			err = io.ErrUnexpectedEOF
		}
		return nil, syntaxError(d.data, err, d.dec.InputOffset(), false)
	}
	d.tokens++
	return tok, nil
}

// More reports whether the array or object being read has another element.
func (d *Decoder) More() bool { return d.dec.More() }

// End checks that only white space follows the value read: anything else
// is a CodeTrailing error placed where the decoder stopped.
func (d *Decoder) End() error {
	if _, err := d.dec.Token(); err == io.EOF {
		return nil
	}
	off := d.dec.InputOffset()
	line, col := Position(d.data, off)
	return &Error{Code: CodeTrailing, Line: line, Column: col, Offset: off, Msg: "unexpected data after the JSON value"}
}

// Decode decodes one JSON value into maps, slices, strings, json.Number,
// bools and nils, strictly: a key given twice (CodeDuplicateKey, at its
// path), a value deeper than lim.Depth or MaxDepth (CodeTooDeep, at its path), an
// object or array of more than lim.Members (CodeTooMany), a document of
// more than lim.Bytes (CodeTooLarge) and data after the value
// (CodeTrailing) are errors.
func Decode(data []byte, lim Limits) (any, error) {
	if lim.Bytes > 0 && len(data) > lim.Bytes {
		return nil, &Error{Code: CodeTooLarge, Offset: -1, Msg: fmt.Sprintf("%d bytes; the limit is %d", len(data), lim.Bytes)}
	}
	if lim.Depth <= 0 || lim.Depth > MaxDepth {
		lim.Depth = MaxDepth
	}
	d := treeDecoder{Decoder: NewDecoder(data), lim: lim}
	v, err := d.value("", 0)
	if err != nil {
		return nil, err
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return v, nil
}

type treeDecoder struct {
	*Decoder
	lim Limits
}

func (d *treeDecoder) tooMany(path string, n int) error {
	return &Error{Code: CodeTooMany, Path: path, Offset: -1, Msg: fmt.Sprintf("more than %d members", n)}
}

func (d *treeDecoder) value(path string, depth int) (any, error) {
	if depth > d.lim.Depth {
		return nil, &Error{Code: CodeTooDeep, Path: path, Offset: -1, Msg: fmt.Sprintf("nested deeper than %d levels", d.lim.Depth)}
	}
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch delim {
	case '{':
		m := map[string]any{}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			kp := Join(path, k)
			if _, dup := m[k]; dup {
				return nil, &Error{Code: CodeDuplicateKey, Path: kp, Offset: -1, Msg: fmt.Sprintf("key %q appears twice", k)}
			}
			if d.lim.Members > 0 && len(m) == d.lim.Members {
				return nil, d.tooMany(path, d.lim.Members)
			}
			v, err := d.value(kp, depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		a := []any{}
		for i := 0; d.More(); i++ {
			if d.lim.Members > 0 && i == d.lim.Members {
				return nil, d.tooMany(path, d.lim.Members)
			}
			v, err := d.value(Index(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		return a, nil
	}
	return tok, nil
}

// Value decodes one JSON value as encoding/json does into an any, numbers
// as json.Number (so large integers and exact decimals are kept), and
// checks that nothing follows it. It is lenient where Decode is strict:
// a key given twice keeps its last value and invalid UTF-8 becomes
// U+FFFD, as in encoding/json. Errors are CodeEmpty, CodeSyntax (placed)
// and CodeTrailing.
func Value(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, &Error{Code: CodeEmpty, Offset: -1, Msg: "empty input: expected a JSON value", Err: err}
		}
		// After Decode the offset is just past the byte at fault.
		return nil, syntaxError(data, err, dec.InputOffset(), true)
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		line, col := Position(data, off)
		return nil, &Error{Code: CodeTrailing, Line: line, Column: col, Offset: off, Msg: "unexpected data after the JSON value"}
	}
	return v, nil
}

// Unmarshal decodes one JSON value into v as encoding/json does, numbers
// as json.Number, strictly: a document of more than lim.Bytes
// (CodeTooLarge), invalid UTF-8 (CodeUTF8), nesting past lim.Depth
// (CodeTooDeep, counted by Nesting before decoding: "[]" nests 1), a
// field v does not define (CodeUnknownField, Msg the quoted name), a
// value v cannot hold (CodeType, Path the field, Err the
// *json.UnmarshalTypeError) and data after the value (CodeTrailing) are
// errors. Keys given twice are not refused: the last one wins, as in
// encoding/json.
func Unmarshal(data []byte, v any, lim Limits) error {
	if lim.Bytes > 0 && len(data) > lim.Bytes {
		return &Error{Code: CodeTooLarge, Offset: -1, Msg: fmt.Sprintf("%d bytes; the limit is %d", len(data), lim.Bytes)}
	}
	if !utf8.Valid(data) {
		return &Error{Code: CodeUTF8, Offset: -1, Msg: "not valid UTF-8"}
	}
	if lim.Depth > 0 {
		if n := Nesting(data); n > lim.Depth {
			return &Error{Code: CodeTooDeep, Offset: -1, Msg: fmt.Sprintf("nests %d levels; the limit is %d", n, lim.Depth)}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var (
			se *json.SyntaxError
			te *json.UnmarshalTypeError
		)
		switch {
		case errors.As(err, &se):
			// After Decode the offset is just past the byte at fault.
			return syntaxError(data, err, dec.InputOffset(), true)
		case errors.As(err, &te):
			return &Error{Code: CodeType, Path: te.Field, Offset: te.Offset, Msg: fmt.Sprintf("must be %s, not a JSON %s", te.Type, te.Value), Err: err}
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return &Error{Code: CodeSyntax, Offset: int64(len(data)), Msg: "unexpected end of JSON input", Err: err}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return &Error{Code: CodeUnknownField, Offset: -1, Msg: strings.TrimPrefix(err.Error(), "json: unknown field "), Err: err}
		}
		return &Error{Code: CodeSyntax, Offset: -1, Msg: strings.TrimPrefix(err.Error(), "json: "), Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		line, col := Position(data, off)
		return &Error{Code: CodeTrailing, Line: line, Column: col, Offset: off, Msg: "more than one JSON value"}
	}
	return nil
}
