package bedrock_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/ctxkit/ctxkit/wire/bedrock"
)

// TestToolInputBounded: a tool call whose input grows past MaxArguments
// ends the stream with an error instead of growing memory.
func TestToolInputBounded(t *testing.T) {
	var b bytes.Buffer
	frame := func(typ, payload string) {
		var hs eventstream.Headers
		hs.Set(":event-type", eventstream.StringValue(typ))
		hs.Set(":content-type", eventstream.StringValue("application/json"))
		hs.Set(":message-type", eventstream.StringValue("event"))
		if err := eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: hs, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	frame("contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}`)
	frag := strings.Repeat("x", 1<<20)
	for i := 0; i <= bedrock.MaxArguments>>20; i++ {
		frame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"`+frag+`"}}}`)
	}
	var last error
	for _, err := range bedrock.DecodeStream(&b) {
		if err != nil {
			last = err
		}
	}
	if last == nil || !strings.Contains(last.Error(), "input larger than") {
		t.Fatalf("got %v", last)
	}
}
