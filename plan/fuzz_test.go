package plan

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"diffs":[{"path":"src/main.go","checksum":"` + emptySum + `","unified_diff":"@@ -0,0 +1 @@\n+x\n"}],"post":{"commands":[{"program":"go","args":["vet"],"timeout_ms":1}]}}`))
	f.Add([]byte(`{"diffs":[{"path":"../x","checksum":"","unified_diff":""}]}`))
	f.Add([]byte(`{"diffs":[],"diffs":[]}`))
	f.Add([]byte(`[{"diffs":1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code == "" {
				t.Fatalf("error %v is not a coded *Error", err)
			}
			return
		}
		// A parsed plan is checked, and survives a round trip.
		if err := p.Check(); err != nil {
			t.Fatalf("Parse accepted a plan Check refuses: %v", err)
		}
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(raw); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzExtract(f *testing.F) {
	f.Add("Here:\n```json\n{\"diffs\":[]}\n```\n")
	f.Add("text {\"a\": {\"b\": [1, 2]}} more")
	f.Add("{{{{")
	f.Fuzz(func(t *testing.T, reply string) {
		got, err := Extract(reply)
		if err != nil {
			return
		}
		if !json.Valid(got) || len(got) == 0 || got[0] != '{' {
			t.Fatalf("Extract returned %q", got)
		}
	})
}

// FuzzParseFast holds parseFast to decodeStrict: whatever the fast path
// accepts, the token decoder accepts with the same plan.
func FuzzParseFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := parseFast(data)
		if !ok {
			return
		}
		strict, err := decodeStrict(data)
		if err != nil {
			t.Fatalf("parseFast accepted what decodeStrict refuses: %v", err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("parseFast and decodeStrict disagree:\n%#v\n%#v", fast, strict)
		}
	})
}
