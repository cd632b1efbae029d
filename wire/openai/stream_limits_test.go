package openai_test

import (
	"io"
	"strconv"
	"testing"

	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// toolCallStream is a Chat Completions stream of tool calls (id "c", name
// "f") with arguments of the given sizes, sent in fragments of at most
// len(wiretest.Filler) bytes, then a finish_reason.
func toolCallStream(_ *testing.T, sizes []int) io.Reader {
	var p wiretest.Pieces
	for i, n := range sizes {
		p.Addf("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n", i)
		for n > 0 {
			k := min(n, len(wiretest.Filler))
			p.Addf("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":\"", i)
			p.Add(wiretest.Filler[:k], []byte("\"}}]}}]}\n\n"))
			n -= k
		}
	}
	p.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
	return p.Reader()
}

// TestDecodeToolCallBounds: MaxToolCalls tool calls decode, and calls of
// MaxToolCallBytes together; one call or one byte more ends the stream
// with an error saying so, before any call ends.
func TestDecodeToolCallBounds(t *testing.T) {
	wiretest.CheckToolCallBounds(t, wiretest.ToolCallBounds{
		Decode:           openai.DecodeStream,
		Stream:           toolCallStream,
		MaxToolCalls:     openai.MaxToolCalls,
		MaxToolCallBytes: openai.MaxToolCallBytes,
		MaxArguments:     openai.MaxArguments,
		CallBytes:        len("c") + len("f"),
		EndAtStop:        true,
		TooMany:          "more than " + strconv.Itoa(openai.MaxToolCalls) + " tool calls",
		TooLarge:         "tool calls larger than " + strconv.Itoa(openai.MaxToolCallBytes) + " bytes together",
	})
}
