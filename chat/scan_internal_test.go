package chat

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzScanAgreesWithDecoder: on valid JSON the fast scanner and the
// encoding/json path decode a request to the same value, or fail with the
// same error.
func FuzzScanAgreesWithDecoder(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a\"b\\u00e9","cache_control":{"type":"ephemeral"}}]}],"x":[1,2.5e3,true,null,"]"]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{"a":{"b":[{}]}}}]}],"tools":[{"name":"n","input_schema":{}}]}`,
		`{"a":1,"a":2}`,
		`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`,
		" { \"model\" : \"m\" , \"messages\" : [ ] } ",
		`{"\u006dodel":"m","messages":[]}`,
		"{\"model\":\"\xff\",\"messages\":[]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		fast, ferr := reader{valid: true}.request(data)
		slow, serr := reader{valid: false}.request(data)
		if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
			t.Fatalf("errors differ:\nfast: %v\nslow: %v", ferr, serr)
		}
		if ferr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("results differ:\nfast: %#v\nslow: %#v", fast, slow)
		}
	})
}
