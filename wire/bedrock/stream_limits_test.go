package bedrock_test

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/wire/bedrock"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// limitFiller is wiretest.Filler as a string, for the frames' payloads.
var limitFiller = string(wiretest.Filler)

// toolUseStream is a ConverseStream of tool calls (id "t", name "f", one
// after another) with inputs of the given sizes, sent in fragments of at
// most len(limitFiller) bytes. Frames that are alike are encoded once and
// read as many times as they are sent.
func toolUseStream(t *testing.T, sizes []int) io.Reader {
	encoded := map[frame][]byte{}
	var parts []io.Reader
	send := func(f frame) {
		b, ok := encoded[f]
		if !ok {
			var buf bytes.Buffer
			encodeFrame(t, &buf, f)
			b = buf.Bytes()
			encoded[f] = b
		}
		parts = append(parts, bytes.NewReader(b))
	}
	send(ev("messageStart", `{"role":"assistant"}`))
	for i, n := range sizes {
		send(ev("contentBlockStart", `{"contentBlockIndex":`+strconv.Itoa(i)+`,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}`))
		for n > 0 {
			k := min(n, len(limitFiller))
			send(ev("contentBlockDelta", `{"contentBlockIndex":`+strconv.Itoa(i)+`,"delta":{"toolUse":{"input":"`+limitFiller[:k]+`"}}}`))
			n -= k
		}
		send(blockStop(i))
	}
	send(messageStop("tool_use"))
	return io.MultiReader(parts...)
}

// TestDecodeToolCallBounds: MaxToolCalls tool calls decode, and calls of
// MaxToolCallBytes together; one call or one byte more ends the stream
// with an error saying so.
func TestDecodeToolCallBounds(t *testing.T) {
	wiretest.CheckToolCallBounds(t, wiretest.ToolCallBounds{
		Decode:           bedrock.DecodeStream,
		Stream:           toolUseStream,
		MaxToolCalls:     bedrock.MaxToolCalls,
		MaxToolCallBytes: bedrock.MaxToolCallBytes,
		MaxArguments:     bedrock.MaxArguments,
		CallBytes:        len("t") + len("f"),
		TooMany:          "more than " + strconv.Itoa(bedrock.MaxToolCalls) + " tool calls",
		TooLarge:         "tool calls larger than " + strconv.Itoa(bedrock.MaxToolCallBytes) + " bytes together",
	})
}

// TestDecodeOpenToolCallsBound: calls that never stop are bounded alike:
// an input fragment for a block that had no start opens a call too.
func TestDecodeOpenToolCallsBound(t *testing.T) {
	var b bytes.Buffer
	for i := range bedrock.MaxToolCalls + 1 {
		encodeFrame(t, &b, toolDelta(i, "{}"))
	}
	want := "more than " + strconv.Itoa(bedrock.MaxToolCalls) + " tool calls"
	if _, err := wiretest.DecodeAll(bedrock.DecodeStream, &b); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%d calls left open: got error %v, want one with %q", bedrock.MaxToolCalls+1, err, want)
	}
}
