package plan

import (
	"reflect"
	"testing"
)

// fastSeeds are plans of the usual shape (the fast path must accept them)
// and near misses.
var fastSeeds = []string{
	`{"diffs":[{"path":"src/main.go","checksum":"` + emptySum + `","unified_diff":"@@ -0,0 +1 @@\n+x\n"}],"post":{"commands":[{"program":"go","args":["vet","./..."],"timeout_ms":60000}]}}`,
	" {\n \"diffs\" : [ {\"unified_diff\":\"--- a/x\\n+++ b/x\\n@@ -1 +1 @@\\n-\\t\\\"a\\\\\\u00e9\\/\\n+b\\r\\n\",\"path\":\"d\u00e9j\u00e0/x\",\"checksum\":\"" + emptySum + "\"} ] ,\"post\":{\"commands\":[]}}\n",
	`{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x"}],"post":{"commands":[{"program":"true"},{"program":"sh","args":[],"timeout_ms":-0}]}}`,
	`{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"\ud83d\ude00"}]}`,
	`{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x","path":"b"}]}`,
	`{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x"}],"post":{"commands":[{"program":"go","timeout_ms":1.5}]}}`,
	`{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x"}]} x`,
	`{"diffs":[{"path":"a","checksum":"` + emptySum + "\",\"unified_diff\":\"\xff\"}]}",
	`{"diffs":[],}`,
	`{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"x"}],"post":{"commands":[{"program":"go","timeout_ms":012}]}}`,
}

// TestParseFast: the fast path accepts the usual plans with the same
// result as the token decoder, and leaves the rest to it.
func TestParseFast(t *testing.T) {
	for i, s := range fastSeeds {
		fast, ok := parseFast([]byte(s))
		strict, err := decodeStrict([]byte(s))
		if wantOK := i < 3; ok != wantOK {
			t.Errorf("seed %d: parseFast ok = %v, want %v", i, ok, wantOK)
		}
		if ok && (err != nil || !reflect.DeepEqual(fast, strict)) {
			t.Errorf("seed %d: parseFast %#v, decodeStrict %#v, %v", i, fast, strict, err)
		}
	}
}

// TestParseFastEscapes: strings that end in escaped backslashes and
// quotes, escapes next to the closing quote and multi-byte characters
// decode as the token decoder decodes them.
func TestParseFastEscapes(t *testing.T) {
	for _, text := range []string{
		`x\\`, `x\\\\`, `x\"`, `\"\\\"\\`, `\\\"`, `a\nb\tc\r\n`, `\u00e9\u2192\u003c-`, `é→\n—`,
		`\/\b\f`, `x\\\\\\\"y`,
	} {
		doc := `{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"` + text + `"}]}`
		fast, ok := parseFast([]byte(doc))
		strict, err := decodeStrict([]byte(doc))
		if !ok || err != nil || !reflect.DeepEqual(fast, strict) {
			t.Errorf("%s: parseFast %v %#v, decodeStrict %v %#v", text, ok, fast, err, strict)
		}
	}
	for _, text := range []string{`x\`, `x\\\`, "x\n", `\u12`, `\x`, `\ud800`} {
		doc := `{"diffs":[{"path":"a","checksum":"` + emptySum + `","unified_diff":"` + text + `"}]}`
		if _, ok := parseFast([]byte(doc)); ok {
			t.Errorf("%q: parseFast accepted it", text)
		}
	}
}
