package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// stringSeeds are JSON string values, read or left to encoding/json.
var stringSeeds = []string{
	`"plain"`, `""`, ` "x" `, `"a\nb\tc\r\n"`, `"x\\"`, `"x\\\\"`, `"x\""`, `"\"\\\"\\"`, `"\u00e9\u2192\u003c-"`,
	`"é→\n—"`, `"\/\b\f"`, `"x\\\\\\\"y"`, `"\ud83d\ude00"`, `"\ud800"`, `"x\"`, "\"\xff\"", "\"a\x01\"", `"\u12"`,
	`"\x"`, `"abc`, `"` + strings.Repeat(`abcdefgh\n`, 40) + `"`, `"` + strings.Repeat("ü", 9) + `\t"`,
}

// TestString: what String reads, encoding/json reads alike; escaped
// surrogates, invalid UTF-8 and broken text are left to it.
func TestString(t *testing.T) {
	read := 0
	for _, s := range stringSeeds {
		if checkString(t, []byte(s)) {
			read++
		}
	}
	if read != 14 {
		t.Fatalf("String read %d of the seeds, want 14", read)
	}
	if _, ok := New([]byte(`"toolong"`)).String(6); ok {
		t.Fatal("a string past its bound was read")
	}
	if _, ok := New([]byte(`"too\nlong"`)).String(7); ok {
		t.Fatal("an escaped string past its bound was read")
	}
}

func checkString(t *testing.T, data []byte) bool {
	t.Helper()
	r := New(data)
	got, ok := r.String(1 << 20)
	if !ok || !r.End() {
		return false
	}
	var want string
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%q: String read what encoding/json refuses: %v", data, err)
	}
	if got != want {
		t.Fatalf("%q: String %q, encoding/json %q", data, got, want)
	}
	return true
}

func FuzzString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkString(t, data) })
}

// TestInt: plain integers that fit an int64, nothing else.
func TestInt(t *testing.T) {
	for text, want := range map[string]int64{"0": 0, " 12": 12, "-0": 0, "-7": -7, "9223372036854775807": 1<<63 - 1} {
		if v, ok := New([]byte(text)).Int(); !ok || v != want {
			t.Errorf("%q: %d, %v", text, v, ok)
		}
	}
	for _, text := range []string{"", "-", "01", "1.0", "1e3", "1E3", "9223372036854775808", "x", "+1"} {
		if v, ok := New([]byte(text)).Int(); ok {
			t.Errorf("%q: read as %d", text, v)
		}
	}
}

// TestObjectArray: objects, arrays and literals, with white space
// anywhere JSON allows it; escaped keys, trailing commas, missing
// separators and too many elements are refused.
func TestObjectArray(t *testing.T) {
	read := func(doc string) (map[string]any, bool) {
		r := New([]byte(doc))
		got := map[string]any{}
		ok := r.Object(func(key []byte) bool {
			k := string(key)
			switch k {
			case "list":
				var l []int64
				ok := r.Array(3, func() bool {
					v, ok := r.Int()
					l = append(l, v)
					return ok
				})
				got[k] = l
				return ok
			case "none":
				got[k] = nil
				return r.Literal("null")
			}
			s, ok := r.String(100)
			got[k] = s
			return ok
		})
		return got, ok && r.End()
	}
	if got, ok := read(" { \"a\" : \"x\" ,\n\"list\":[ 1 , 2,3 ] , \"none\" : null }\t"); !ok || got["a"] != "x" || len(got["list"].([]int64)) != 3 || got["none"] != nil {
		t.Fatalf("got %v, %v", got, ok)
	}
	if _, ok := read(`{}`); !ok {
		t.Fatal("the empty object was refused")
	}
	for _, doc := range []string{`{"\u0061":"x"}`, `{"a":"x",}`, `{"a" "x"}`, `{"list":[1,2,3,4]}`, `{"list":[1,]}`, `{"a":"x"} x`, `{"none":nul}`, `[]`, ``} {
		if _, ok := read(doc); ok {
			t.Errorf("%s: read", doc)
		}
	}
}
