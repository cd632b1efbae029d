package responses

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseEvent: whenever the fast path reads an event, it reads what
// encoding/json reads.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"AbC"}`,
		`{"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_3","output_index":0,"summary_index":1,"delta":"\u00e9\n"}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc","output_index":1,"delta":"{\"a\":1}"}`,
		`{"type":"response.output_text.delta","delta":"x","logprobs":[{"token":"x"}]}`,
		`{"type":"response.completed","response":{"status":"completed"}}`,
		`{"type":"x","output_index":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow wireEvent
		if !parseFast(data, &fast) {
			return
		}
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("the fast path read %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, fast, slow)
		}
	})
}
