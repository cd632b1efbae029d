// Package strictjson is ctxkit's one strict JSON reader: the decoding that
// views, relay contexts and pipelines, canonical and OpenAI requests,
// plans and the server's request bodies share. It reads a document within
// stated Limits, refuses what encoding/json lets pass where its caller
// asks (a key given twice, data after the value, invalid UTF-8, a field
// the destination does not define) and reports every fault as an *Error
// that names its place: the path in the document (messages[3].content[1],
// joined by Join and Index, the one spelling of a path) and, for a
// syntax fault, the line and column.
//
// Columns count characters (runes), as editors do, not bytes: "é" is one
// column. Offsets, where a caller reports them, stay byte offsets.
//
// Each caller keeps its own error codes and messages: it maps an *Error's
// Code to its own error type. The package builds on internal/jsonscan,
// the one-pass reader of valid documents, for splitting objects and
// arrays.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// MaxDepth is the nesting Decode never goes past, whatever its Limits say.
// It carries each value's path down as it recurses, so its cost grows with
// the square of the depth; a thousand levels is past any document a person
// or a model writes. (Unmarshal and Value stop where encoding/json does, at
// 10000.)
const MaxDepth = 1000

// Limits bound a document. A zero field is no bound (but see Depth).
type Limits struct {
	// Bytes bounds the size of the document.
	Bytes int
	// Depth bounds how many arrays and objects a value may sit inside: a
	// document's top value is at depth 0, the values in it at depth 1.
	// Zero is no bound of the caller's, but never unbounded: Decode stops
	// at MaxDepth.
	Depth int
	// Members bounds the members of one object or the elements of one
	// array.
	Members int
}

// Code is what kind of fault an Error is.
type Code string

// The kinds of fault.
const (
	CodeSyntax       Code = "syntax"        // not JSON, or it stops part-way
	CodeEmpty        Code = "empty"         // no value at all
	CodeTrailing     Code = "trailing"      // data after the value
	CodeUTF8         Code = "invalid_utf8"  // bytes that are not UTF-8
	CodeDuplicateKey Code = "duplicate_key" // one key twice in an object
	CodeUnknownField Code = "unknown_field" // a key the destination does not define
	CodeType         Code = "type"          // a value of a kind the destination cannot hold
	CodeTooLarge     Code = "too_large"     // past Limits.Bytes
	CodeTooDeep      Code = "too_deep"      // past Limits.Depth
	CodeTooMany      Code = "too_many"      // past Limits.Members
)

// Error is a fault in a document and its place.
type Error struct {
	Code Code
	// Path is where in the document the fault is, in the style
	// messages[3].content[1].source ("" = the whole document). For
	// CodeDuplicateKey it names the key given twice; for CodeUnknownField
	// and CodeType, the field.
	Path string
	// Line and Column are the 1-based place of a syntax fault, the column
	// in characters; 0 when the fault has no place in the text.
	Line, Column int
	// Offset is the byte offset of the fault in the text, -1 when it has
	// none.
	Offset int64
	// Msg says what is wrong, without the place.
	Msg string
	// Err is encoding/json's or jsonscan's error, when one of them found
	// the fault; callers whose messages quote it read it here.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(", column ")
		b.WriteString(strconv.Itoa(e.Column))
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf is the Code of err when it is an *Error, "" otherwise.
func CodeOf(err error) Code {
	if e, ok := err.(*Error); ok {
		return e.Code
	}
	return ""
}

// Join is the path of member key of the value at path: "a.b", or "b" at
// the top. A key is appended as it is, even an empty one ("a.").
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index is the path of element i of the array at path: "a[2]".
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Position is the 1-based line and column of the byte at offset off in
// data (clamped to data). The column counts characters: the runes from
// the start of the line to the byte.
func Position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}

// Nesting is the deepest nesting of arrays and objects in data ("[]" is 1,
// "[[]]" 2), counted in one pass without decoding: a bound on it can be
// checked before a decoder recurses. Brackets inside strings do not count;
// data need not be valid JSON.
func Nesting(data []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// syntaxError is the Error for err, met by encoding/json while reading
// data. A *json.SyntaxError places itself (Offset just past the byte at
// fault when pastFault); any other error is placed at fallback, and an
// early end at the end of data.
func syntaxError(data []byte, err error, fallback int64, pastFault bool) *Error {
	e := &Error{Code: CodeSyntax, Offset: fallback, Msg: err.Error(), Err: err}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		e.Offset = se.Offset
		if pastFault {
			e.Offset--
		}
	}
	if err == io.ErrUnexpectedEOF {
		e.Offset = int64(len(data))
		e.Msg = "unexpected end of JSON input"
	}
	e.Line, e.Column = Position(data, e.Offset)
	return e
}

// Members are an object's members sorted by key, each key once (see
// jsonscan.Members).
type Members = jsonscan.Members

// Member is one member of an object: its key, decoded, and its value as
// written.
type Member = jsonscan.Member

// Object returns the members of the JSON object data (which starts with
// its '{'), sorted by key. A key given twice is a CodeDuplicateKey error
// whose Path is Join(path, key), for the first key in the text that
// repeats one; an object of more than max members is CodeTooMany (at
// path), found before a key given twice.
//
// valid promises that data is valid JSON (its caller checked the whole
// document with json.Valid): the object is then split in one pass
// without decoding its values. Without the promise it is read by
// encoding/json's tokens, whose error (Err) names what is wrong.
func Object(data []byte, path string, max int, valid bool) (Members, error) {
	if valid {
		ms, err := jsonscan.SplitObject(data, max)
		if err == nil {
			return ms, nil
		}
		if err == jsonscan.ErrTooMany {
			return nil, &Error{Code: CodeTooMany, Path: path, Offset: -1, Msg: err.Error(), Err: err}
		}
		if dup, ok := err.(*jsonscan.DuplicateKeyError); ok {
			return nil, &Error{Code: CodeDuplicateKey, Path: Join(path, dup.Key), Offset: -1, Msg: "given twice", Err: err}
		}
		return nil, &Error{Code: CodeSyntax, Path: path, Offset: -1, Msg: err.Error(), Err: err}
	}
	return readObject(data, path, max)
}

// readObject is Object without the promise of valid JSON.
func readObject(data []byte, path string, max int) (Members, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	fail := func(err error) error {
		e := syntaxError(data, err, dec.InputOffset(), false)
		e.Path = path
		return e
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(err)
	}
	var fields Members
	seen := map[string]bool{}
	dup, hasDup := "", false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fail(err)
		}
		if seen[k] && !hasDup {
			dup, hasDup = k, true
		}
		seen[k] = true
		fields = append(fields, Member{Key: k, Value: v})
		// As in the one-pass split, too many members are refused before a
		// key given twice.
		if len(fields) > max {
			return nil, &Error{Code: CodeTooMany, Path: path, Offset: -1, Msg: jsonscan.ErrTooMany.Error(), Err: jsonscan.ErrTooMany}
		}
	}
	if hasDup {
		return nil, &Error{Code: CodeDuplicateKey, Path: Join(path, dup), Offset: -1, Msg: "given twice"}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(err)
	}
	if _, err := dec.Token(); err == nil {
		off := dec.InputOffset()
		line, col := Position(data, off)
		return nil, &Error{Code: CodeTrailing, Path: path, Line: line, Column: col, Offset: off, Msg: "more than one JSON value"}
	}
	sortMembers(fields)
	return fields, nil
}

// Array returns the elements of the JSON array data (which starts with
// its '['), each its own bytes, or a CodeTooMany error (at path) when it
// has more than max: with valid (the promise of Object), found at the
// element past max, before the rest is read. Without the promise the
// array is decoded by encoding/json, whose error (Err) names what is
// wrong.
func Array(data []byte, path string, max int, valid bool) ([]json.RawMessage, error) {
	if valid {
		out, err := jsonscan.SplitArray(data, max)
		switch {
		case err == nil:
			return out, nil
		case err == jsonscan.ErrTooMany:
			return nil, &Error{Code: CodeTooMany, Path: path, Offset: -1, Msg: err.Error(), Err: err}
		}
		return nil, &Error{Code: CodeSyntax, Path: path, Offset: -1, Msg: err.Error(), Err: err}
	}
	var out []json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &Error{Code: CodeSyntax, Path: path, Offset: -1, Msg: err.Error(), Err: err}
	}
	if len(out) > max {
		return nil, &Error{Code: CodeTooMany, Path: path, Offset: -1, Msg: jsonscan.ErrTooMany.Error(), Err: jsonscan.ErrTooMany}
	}
	return out, nil
}
