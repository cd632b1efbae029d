package chat_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// FuzzDecodeRequest: any input either fails with an error or decodes to a
// request that encodes to valid JSON and decodes again to the same bytes.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"x","y":[1,{"z":null}]}]}],"a":1}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]}]}`))
	f.Add([]byte(`{"messages":[],"output_config":{"effort":"low","format":{"type":"json_schema","name":"n","strict":true,"schema":{"type":"object"}}}}`))
	f.Add([]byte(`{"messages":[],"output_format":{"type":"json_object"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := chat.DecodeRequest(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("decoded but cannot encode: %v", err)
		}
		again, err := chat.DecodeRequest(out)
		if err != nil {
			t.Fatalf("own output refused: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(again)
		if string(out) != string(out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}
