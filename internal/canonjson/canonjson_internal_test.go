package canonjson

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// reflective is the canonical form as encoding/json writes it, the
// reference the direct encoder must match byte for byte.
func reflective(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// direct is v through the direct encoder alone; it fails the test when
// the value is left to encoding/json.
func direct(t *testing.T, v any) []byte {
	t.Helper()
	got, ok := appendValue(nil, v, 0)
	if !ok {
		t.Fatalf("%#v left to encoding/json", v)
	}
	return got
}

// FuzzAppend: whatever JSON is decoded (numbers as json.Number, as
// strictjson decodes them, or as float64, as encoding/json does), and
// whatever bytes a string holds, the direct encoder writes what
// encoding/json writes.
func FuzzAppend(f *testing.F) {
	for _, seed := range []string{
		`{"b":[1,2.50,-0,1e-7,1E+300],"a":null,"":true,"é":false}`, `"\u0000\b\f\n\r\t\u001f\"\\/<>&\u2028\u2029\u007f"`,
		"\"\xff\xfe a \xe2\x80\xa8 \xed\xa0\x80\"", `[[],{},"",0]`, `{"z":{"y":{"x":[{"w":"v"}]}}}`, `12345678901234567890123`,
		`[1e21,1e20,0.000001,0.0000001,5e-324,1.7976931348623157e308,-1e-7,123456789e-15]`, `{"b":1,"a":2,"a\u0000":3,"\ud800":4,"A":5}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		values := []any{string(data)} // strings of any bytes, as a redacted body's text is
		if v, err := strictjson.Value(data); err == nil {
			values = append(values, v)
		}
		var floats any
		if json.Unmarshal(data, &floats) == nil {
			values = append(values, floats)
		}
		for _, v := range values {
			want, err := reflective(v)
			if err != nil {
				t.Fatalf("%q: encoding/json: %v", data, err)
			}
			if got := direct(t, v); !bytes.Equal(got, want) {
				t.Fatalf("%q:\n got %s\nwant %s", data, got, want)
			}
			if got, err := Append([]byte("x"), v); err != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
				t.Fatalf("%q: Append after a prefix: %s, %v", data, got, err)
			}
		}
	})
}

// TestDirectValues: the values the direct encoder takes besides decoded
// documents, at their edges.
func TestDirectValues(t *testing.T) {
	for _, v := range []any{
		0.0, math.Copysign(0, -1), 1e21, 1e20, 1e-6, 1e-7, 9.999999999999999e-7, 5e-324, math.MaxFloat64, -math.MaxFloat64,
		0.1, 1.0 / 3, 100.0, 1e100, 123456789.0,
		0, -1, math.MaxInt, math.MinInt, int64(math.MaxInt64), int64(math.MinInt64),
		json.Number(""), json.Number("-0"), json.Number("1.5e+10"), json.Number("-12.34E-5"),
		map[string]any(nil), []any(nil), map[string]any{}, []any{},
		map[string]any{"k": []any{1.5, int64(2), json.Number("3"), nil, true, false, "<&>"}},
	} {
		want, err := reflective(v)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if got := direct(t, v); string(got) != string(want) {
			t.Errorf("%#v: got %s, want %s", v, got, want)
		}
	}
}

// TestFallback: values the direct encoder does not know, or that
// encoding/json refuses, go to encoding/json, which writes them or says
// why; a failed Append leaves dst as it was.
func TestFallback(t *testing.T) {
	type point struct {
		X int `json:"x"`
	}
	for _, c := range []struct {
		v    any
		want string // "" when encoding/json refuses v
	}{
		{point{1}, `{"x":1}`},
		{[]any{map[string]any{"p": point{2}}}, `[{"p":{"x":2}}]`},
		{map[string]string{"b": "<", "a": "&"}, `{"a":"&","b":"<"}`},
		{float32(0.1), `0.1`},
		{json.RawMessage(` { "a" : 1 } `), `{"a":1}`},
		{json.Number("01"), ""},
		{json.Number("1."), ""},
		{json.Number("x"), ""},
		{[]any{"a", math.NaN()}, ""},
		{map[string]any{"a": math.Inf(1)}, ""},
		{func() {}, ""},
	} {
		if _, ok := appendValue(nil, c.v, 0); ok {
			t.Errorf("%#v taken by the direct encoder", c.v)
		}
		got, err := Append([]byte("prefix"), c.v)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%#v written: %s", c.v, got)
		case c.want == "" && string(got) != "prefix":
			t.Errorf("%#v: a failed Append returned %q", c.v, got)
		case c.want != "" && (err != nil || string(got) != "prefix"+c.want):
			t.Errorf("%#v: %s, %v; want %s", c.v, got, err, c.want)
		}
	}
}

// TestDeep: a value nested past maxDepth is written by encoding/json,
// and one that holds itself is an error, not a stack overflow.
func TestDeep(t *testing.T) {
	var v any = "leaf"
	for range maxDepth + 5 {
		v = []any{map[string]any{"k": v}}
	}
	if _, ok := appendValue(nil, v, 0); ok {
		t.Error("a value deeper than maxDepth was taken by the direct encoder")
	}
	want, err := reflective(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Marshal(v); err != nil || !bytes.Equal(got, want) {
		t.Errorf("deep value: %v, equal %v", err, bytes.Equal(got, want))
	}

	loop := map[string]any{}
	loop["self"] = loop
	if _, err := Marshal(loop); err == nil {
		t.Error("a map that holds itself was written")
	}
}
