package reqjson

import (
	"encoding/json"
	"testing"
)

// FuzzString holds String's one-pass reading to encoding/json's: the same
// string, or a failure where encoding/json fails (or the value is not a
// string).
func FuzzString(f *testing.F) {
	for _, s := range []string{`"plain"`, ` "spaced" `, `"esc\"aped\\ \/ \n\t \u00e9 \u2192"`, `"\ud83d\ude00"`, `"\ud800"`,
		"\"\xff\"", "\"ctl\x01\"", `"unterminated`, `"a" "b"`, `"a"x`, `123`, `null`, ``, `"Ça va? 👋"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := String(v, "p")
		var want string
		jerr := json.Unmarshal(v, &want)
		isString := IsString(v)
		switch {
		case jerr != nil || !isString:
			if err == nil {
				t.Fatalf("%q: read %q where encoding/json fails (%v) or it is no string", v, got, jerr)
			}
		case err != nil:
			t.Fatalf("%q: %v, encoding/json reads %q", v, err, want)
		case got != want:
			t.Fatalf("%q: %q, encoding/json reads %q", v, got, want)
		}
	})
}
