package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestJoinIndex(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Join("", "a"), "a"},
		{Join("a", "b"), "a.b"},
		{Join("a", ""), "a."},
		{Index("", 0), "[0]"},
		{Index("messages", 3), "messages[3]"},
		{Join(Index("messages", 3), "content"), "messages[3].content"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestPosition(t *testing.T) {
	data := []byte("ab\n\"é€\" x\n")
	for _, c := range []struct {
		off       int64
		line, col int
	}{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1},
		// "é" and "€" are one column each, though two and three bytes.
		{10, 2, 5}, {11, 2, 6},
		{-5, 1, 1}, {100, 3, 1},
	} {
		line, col := Position(data, c.off)
		if line != c.line || col != c.col {
			t.Errorf("Position(%d) = %d:%d, want %d:%d", c.off, line, col, c.line, c.col)
		}
	}
}

func TestNesting(t *testing.T) {
	for s, want := range map[string]int{
		``: 0, `1`: 0, `[]`: 1, `[[]]`: 2, `{"a":[{}]}`: 3, `["[[[", "\"[["]`: 1, `[[`: 2, `]]`: 0,
	} {
		if got := Nesting([]byte(s)); got != want {
			t.Errorf("Nesting(%s) = %d, want %d", s, got, want)
		}
	}
}

// readCase is an input read under lim and the error it gives: its code,
// path and Error() text (code "": no error).
type readCase struct {
	in   string
	lim  Limits
	code Code
	path string
	text string
}

// readCases reads each case's input with read and checks its error.
func readCases(t *testing.T, read func(in []byte, lim Limits) error, cases []readCase) {
	t.Helper()
	for _, c := range cases {
		err := read([]byte(c.in), c.lim)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.in, err)
			}
			continue
		}
		wantErr(t, err, c.code, c.path, c.text)
	}
}

// wantErr checks that err is an *Error with the given code, path and
// Error() text.
func wantErr(t *testing.T, err error, code Code, path, text string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v, want *Error", err, err)
	}
	if e.Code != code || e.Path != path || e.Error() != text {
		t.Fatalf("error %s %q %q, want %s %q %q", e.Code, e.Path, e.Error(), code, path, text)
	}
}

func TestDecode(t *testing.T) {
	v, err := Decode([]byte(` {"a":[1,2.5e3,"x",true,null],"b":{}} `), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{json.Number("1"), json.Number("2.5e3"), "x", true, nil}, "b": map[string]any{}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v", v)
	}
	readCases(t, func(in []byte, lim Limits) error { _, err := Decode(in, lim); return err }, []readCase{
		{``, Limits{}, CodeEmpty, "", "empty input: expected a JSON value"},
		{"{\"é\": ,}", Limits{}, CodeSyntax, "", "line 1, column 7: invalid character ',' looking for beginning of value"},
		{"[1,\n 2,]", Limits{}, CodeSyntax, "", "line 2, column 4: invalid character ']' looking for beginning of value"},
		{`{"a":[1`, Limits{}, CodeSyntax, "", "line 1, column 8: unexpected end of JSON input"},
		{`{} {}`, Limits{}, CodeTrailing, "", "line 1, column 5: unexpected data after the JSON value"},
		{`{"a":{"b":1,"b":2}}`, Limits{}, CodeDuplicateKey, "a.b", `a.b: key "b" appears twice`},
		{`[[[1]]]`, Limits{Depth: 2}, CodeTooDeep, "[0][0][0]", "[0][0][0]: nested deeper than 2 levels"},
		{`[[[]]]`, Limits{Depth: 2}, "", "", ""},
		{`{"a":[1,2,3]}`, Limits{Members: 2}, CodeTooMany, "a", "a: more than 2 members"},
		{`[1]`, Limits{Bytes: 2}, CodeTooLarge, "", "3 bytes; the limit is 2"},
	})
}

func TestValue(t *testing.T) {
	v, err := Value([]byte("{\"a\":1,\"a\":12345678901234567890,\"s\":\"\xff\"}"))
	if err != nil {
		t.Fatal(err)
	}
	// Lenient as encoding/json: the last key wins, invalid UTF-8 is
	// replaced; numbers are kept as written.
	if want := map[string]any{"a": json.Number("12345678901234567890"), "s": "\uFFFD"}; !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v", v)
	}
	for _, c := range []struct {
		in   string
		code Code
		text string
	}{
		{" \n", CodeEmpty, "empty input: expected a JSON value"},
		{"[1,2,]", CodeSyntax, "line 1, column 6: invalid character ']' looking for beginning of value"},
		{"[\"é\",x]", CodeSyntax, "line 1, column 6: invalid character 'x' looking for beginning of value"},
		{"{\"a\":", CodeSyntax, "line 1, column 6: unexpected end of JSON input"},
		{"1 2", CodeTrailing, "line 1, column 4: unexpected data after the JSON value"},
	} {
		_, err := Value([]byte(c.in))
		wantErr(t, err, c.code, "", c.text)
	}
}

func TestDecoderErrs(t *testing.T) {
	d := NewDecoder(nil)
	_, err := d.Token()
	if !errors.Is(err, io.EOF) || CodeOf(err) != CodeEmpty {
		t.Fatalf("empty: %v", err)
	}
	d = NewDecoder([]byte(`[`))
	d.Token()
	_, err = d.Token()
	if !errors.Is(err, io.ErrUnexpectedEOF) || CodeOf(err) != CodeSyntax {
		t.Fatalf("early end: %v", err)
	}
	d = NewDecoder([]byte(`1 x`))
	d.Token()
	if e, ok := d.End().(*Error); !ok || e.Code != CodeTrailing || e.Offset != 2 {
		t.Fatalf("trailing: %#v", d.End())
	}
}

func TestUnmarshal(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type doc struct {
		S string          `json:"s"`
		I inner           `json:"i"`
		L []string        `json:"l"`
		R json.RawMessage `json:"r"`
	}
	var d doc
	if err := Unmarshal([]byte(`{"s":"x","i":{"n":2},"l":["a"],"r":{"k":1}}`), &d, Limits{}); err != nil {
		t.Fatal(err)
	}
	if d.S != "x" || d.I.N != 2 || len(d.L) != 1 || string(d.R) != `{"k":1}` {
		t.Fatalf("got %+v", d)
	}
	readCases(t, func(in []byte, lim Limits) error {
		var d doc
		return Unmarshal(in, &d, lim)
	}, []readCase{
		{"{\"s\":\"\xff\"}", Limits{}, CodeUTF8, "", "not valid UTF-8"},
		{`[[[]]]`, Limits{Depth: 2}, CodeTooDeep, "", "nests 3 levels; the limit is 2"},
		{`{"s":"x"}`, Limits{Bytes: 3}, CodeTooLarge, "", "9 bytes; the limit is 3"},
		{`{"x":1}`, Limits{}, CodeUnknownField, "", `"x"`},
		{`{"i":{"n":"2"}}`, Limits{}, CodeType, "i.n", "i.n: must be int, not a JSON string"},
		{"{\"s\":\n \"é\" 1}", Limits{}, CodeSyntax, "", "line 2, column 6: invalid character '1' after object key:value pair"},
		{`{"s":`, Limits{}, CodeSyntax, "", "unexpected end of JSON input"},
		{`{} {}`, Limits{}, CodeTrailing, "", "line 1, column 5: more than one JSON value"},
	})
}

func TestObjectArray(t *testing.T) {
	for _, valid := range []bool{true, false} {
		ms, err := Object([]byte(`{"b":[1],"a":"x"}`), "p", 2, valid)
		if err != nil || len(ms) != 2 || ms[0].Key != "a" || string(ms[1].Value) != "[1]" {
			t.Fatalf("valid %v: %v %v", valid, ms, err)
		}
		_, err = Object([]byte(`{"a":1,"b":2,"a":3}`), "p", 5, valid)
		wantErr(t, err, CodeDuplicateKey, "p.a", "p.a: given twice")
		_, err = Object([]byte(`{"a":1,"a":2,"a":3}`), "p", 2, valid)
		if CodeOf(err) != CodeTooMany {
			t.Fatalf("valid %v: too many before twice: %v", valid, err)
		}
		a, err := Array([]byte(`[1, {"a":[]} ,"]"]`), "p", 3, valid)
		if err != nil || len(a) != 3 || string(a[1]) != `{"a":[]}` {
			t.Fatalf("valid %v: %q %v", valid, a, err)
		}
		if _, err := Array([]byte(`[1,2,3]`), "p", 2, valid); CodeOf(err) != CodeTooMany {
			t.Fatalf("valid %v: %v", valid, err)
		}
	}
	_, err := Object([]byte(`{"a":1} 2`), "p", 5, false)
	wantErr(t, err, CodeTrailing, "p", "p: line 1, column 10: more than one JSON value")
	_, err = Object([]byte(`{"a":}`), "p", 5, false)
	if CodeOf(err) != CodeSyntax || !strings.Contains(err.Error(), "invalid character '}'") {
		t.Fatalf("syntax: %v", err)
	}
}

// FuzzDecode: Decode accepts only valid JSON, and what it accepts it
// reads as encoding/json does (numbers as json.Number); every error is
// an *Error, placed in the text when it is a syntax error. On valid JSON
// the one-pass and the token splitting of Object and Array agree.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2.5e3,"x",true,null],"b":{}}`, `{"a":1,"a":2}`, "{\"é\": ,}", `[[[[]]]]`, `{} {}`, ``, `"\ud800"`,
		"{\"k\":\"\xff\"}", `[1,]`, `{"\u0061":1,"a":2}`, ` [ "]" , {"[":"{"} ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data, Limits{Depth: 3, Members: 4})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v, want *Error", err, err)
			}
			if e.Code == CodeSyntax && e.Line < 1 {
				t.Fatalf("syntax error without a place: %#v", e)
			}
		} else {
			if !json.Valid(data) {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var want any
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, want) {
				t.Fatalf("got %#v, encoding/json %#v", v, want)
			}
		}
		trimmed := bytes.TrimSpace(data)
		if !json.Valid(trimmed) || len(trimmed) == 0 {
			return
		}
		switch trimmed[0] {
		case '{':
			fast, ferr := Object(trimmed, "p", 4, true)
			slow, serr := Object(trimmed, "p", 4, false)
			if CodeOf(ferr) != CodeOf(serr) || (ferr != nil && ferr.(*Error).Path != serr.(*Error).Path) {
				t.Fatalf("errors differ: %v, %v", ferr, serr)
			}
			if ferr == nil && len(fast)+len(slow) > 0 && !reflect.DeepEqual(fast, slow) {
				t.Fatalf("members differ: %q, %q", fast, slow)
			}
		case '[':
			fast, ferr := Array(trimmed, "p", math.MaxInt, true)
			slow, serr := Array(trimmed, "p", math.MaxInt, false)
			if (ferr == nil) != (serr == nil) || len(fast) != len(slow) {
				t.Fatalf("arrays differ: %q %v, %q %v", fast, ferr, slow, serr)
			}
			for i := range fast {
				if !bytes.Equal(fast[i], slow[i]) {
					t.Fatalf("element %d: %s, %s", i, fast[i], slow[i])
				}
			}
		}
	})
}

// TestDecodeNeverUnbounded: with no depth of the caller's, Decode still
// stops at MaxDepth, at once and with the path of the value too deep,
// instead of recursing (and building paths) as deep as the input goes.
func TestDecodeNeverUnbounded(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)
	for _, lim := range []Limits{{}, {Depth: MaxDepth * 2}} {
		_, err := Decode([]byte(deep), lim)
		if CodeOf(err) != CodeTooDeep {
			t.Errorf("%+v: %v, want %s", lim, err, CodeTooDeep)
		}
	}
	ok := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, err := Decode([]byte(ok), Limits{}); err != nil {
		t.Errorf("%d levels: %v", MaxDepth+1, err)
	}
}
