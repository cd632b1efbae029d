package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

// fastCases are payloads for parseFast: those it reads and those it leaves
// to encoding/json.
var fastCases = []struct {
	data string
	fast bool
}{
	{`{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"Hi"}}`, true},
	{` { "type" : "content_block_delta" , "index" : 0 , "delta" : { "type" : "text_delta" , "text" : "a\"b\\c\/d\n\t\r\b\f" } }  `, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Ça va? 👋"}        }`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"},"delta":{"type":"signature_delta","signature":"s"}}`, true},
	{`{"type":"content_block_stop","index":3}`, true},
	{`{"type":"message_stop"}`, true},
	{`{"delta":{"stop_reason":"end_turn"}}`, true},
	{`{"delta":{"stop_reason":"end_turn","stop_reason":null}}`, true},
	{`{}`, true},
	{`{"type":"sparkle"}`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u00e9 \u2192"}}`, true},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud83d\ude00"}}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + "\xff" + `"}}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + "\x01" + `"}}`, false},
	{`{"Type":"content_block_delta","index":0}`, false},
	{`{"type":"content_block_delta","index":01}`, false},
	{`{"type":"content_block_delta","index":1.0}`, false},
	{`{"type":"content_block_delta","index":1e1}`, false},
	{`{"type":"content_block_delta","index":-1}`, false},
	{`{"type":"content_block_delta","index":null}`, false},
	{`{"type":"content_block_delta","index":1234567890}`, false},
	{`{"type":"content_block_delta","delta":{"type":"text_delta","text":null}}`, false},
	{`{"type":"content_block_delta","delta":{"type":"citations_delta","citation":{}}}`, false},
	{`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`, false},
	{`{"type":"content_block_stop","index":0,}`, false},
	{`{"type":"content_block_stop","index":0} x`, false},
	{`{"type":"content_block_stop" "index":0}`, false},
	{`{"typ\u0065":"content_block_stop"}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"abc}}`, false},
	{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ab\`, false},
	{``, false},
	{`[]`, false},
}

func TestParseFast(t *testing.T) {
	for _, c := range fastCases {
		var e event
		if got := parseFast([]byte(c.data), &e); got != c.fast {
			t.Errorf("%s: fast %v, want %v", c.data, got, c.fast)
		}
		checkFast(t, []byte(c.data))
	}
}

// checkFast: when parseFast reads data, it gets what encoding/json gets.
func checkFast(t *testing.T, data []byte) {
	t.Helper()
	var fast, slow event
	if !parseFast(data, &fast) {
		return
	}
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("%q: parseFast read what encoding/json rejects: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v\njson %+v", data, fast, slow)
	}
}

func FuzzParseFast(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.data))
	}
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for ev, err := range sse.Read(bytes.NewReader(data), 0) {
			if err != nil {
				break
			}
			f.Add(ev.Data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFast(t, data) })
}
