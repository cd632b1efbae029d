package gemini_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// callStream is an alt=sse stream of function calls named "f", one event
// each, whose args are {"a":"<n bytes>"} for each n of sizes, then a
// finishReason.
func callStream(_ *testing.T, sizes []int) io.Reader {
	var p wiretest.Pieces
	head := []byte(`data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":"`)
	tail := []byte("\"}}}]}}]}\n\n")
	for _, n := range sizes {
		p.Add(head, wiretest.Filler[:n], tail)
	}
	p.Add([]byte(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}` + "\n\n"))
	return p.Reader()
}

// TestDecodeToolCallBounds: MaxToolCalls function calls decode, and calls
// of MaxToolCallBytes together (names and arguments); one call or one
// byte more ends the stream with an error saying so, though each call is
// well within a response chunk.
func TestDecodeToolCallBounds(t *testing.T) {
	wrapping := len(`{"a":""}`)
	wiretest.CheckToolCallBounds(t, wiretest.ToolCallBounds{
		Decode:           gemini.DecodeStream,
		Stream:           callStream,
		MaxToolCalls:     gemini.MaxToolCalls,
		MaxToolCallBytes: gemini.MaxToolCallBytes,
		MaxArguments:     len(wiretest.Filler),
		CallBytes:        len("f") + wrapping,
		Wrapping:         wrapping,
		TooMany:          fmt.Sprintf("more than %d function calls", gemini.MaxToolCalls),
		TooLarge:         fmt.Sprintf("function calls larger than %d bytes together", gemini.MaxToolCallBytes),
	})
}
