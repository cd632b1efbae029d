package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // what ValidString returns; "" when it refuses
	}{
		{`"plain" rest`, `"plain"`},
		{`""`, `""`},
		{`"esc \" \\ \/ \b \f \n \r \t \u00e9 \u20AC"`, `"esc \" \\ \/ \b \f \n \r \t \u00e9 \u20AC"`},
		{`"pair \ud83d\ude00"`, `"pair \ud83d\ude00"`},
		{`"ü ✓ 😀"`, `"ü ✓ 😀"`},
		{`"lone high \ud83d"`, ""},
		{`"lone high then text \ud83dx"`, ""},
		{`"high then not low \ud83d\u0041"`, ""},
		{`"lone low \ude00"`, ""},
		{`"bad escape \x"`, ""},
		{`"short \u12"`, ""},
		{`"bad hex \u12g4"`, ""},
		{"\"control \x01\"", ""},
		{"\"invalid \xff\"", ""},
		{"\"cut utf8 \xe2\x82\"", ""},
		{`"unterminated`, ""},
		{`"ends in backslash\`, ""},
		{`x"not a string"`, ""},
	} {
		r := New([]byte(c.in))
		got, ok := r.ValidString()
		if string(got) != c.want || ok != (c.want != "") {
			t.Errorf("%q: %q %v, want %q", c.in, got, ok, c.want)
		}
		if ok && r.Pos() != len(c.want) {
			t.Errorf("%q: at %d after it", c.in, r.Pos())
		}
	}
}

// FuzzValidString: a string ValidString accepts is one encoding/json
// decodes without replacing anything (no U+FFFD it did not spell), and
// the bytes it returns are the whole string, quotes included.
func FuzzValidString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\u00e9\n"`, "\"\xff\"", `"\\"`, `"x\"y"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, ok := New(b).ValidString()
		if !ok {
			return
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%q accepted, encoding/json: %v", raw, err)
		}
		if !utf8.ValidString(v) {
			t.Fatalf("%q decodes to invalid UTF-8", raw)
		}
		if strings.ContainsRune(v, utf8.RuneError) && !strings.Contains(string(raw), "\uFFFD") && !strings.Contains(strings.ToLower(string(raw)), `\ufffd`) {
			t.Fatalf("%q decodes with a replacement character", raw)
		}
	})
}
