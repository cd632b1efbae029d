package mistral_test

import (
	"io"
	"strconv"
	"testing"

	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// toolCallStream is a Mistral stream of complete tool calls (id "c", name
// "f", one event each) with arguments of the given sizes, then a
// finish_reason.
func toolCallStream(_ *testing.T, sizes []int) io.Reader {
	var p wiretest.Pieces
	for i, n := range sizes {
		p.Addf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\",\"tool_calls\":[{\"id\":\"c\",\"index\":%d,\"function\":{\"name\":\"f\",\"arguments\":\"", i)
		p.Add(wiretest.Filler[:n], []byte("\"}}]}}]}\n\n"))
	}
	p.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n"))
	return p.Reader()
}

// TestDecodeToolCallBounds: openai.MaxToolCalls tool calls decode, and
// calls of openai.MaxToolCallBytes together; one call or one byte more
// ends the stream with an error saying so, though each call stays well
// within openai.MaxArguments.
func TestDecodeToolCallBounds(t *testing.T) {
	wiretest.CheckToolCallBounds(t, wiretest.ToolCallBounds{
		Decode:           mistral.DecodeStream,
		Stream:           toolCallStream,
		MaxToolCalls:     openai.MaxToolCalls,
		MaxToolCallBytes: openai.MaxToolCallBytes,
		MaxArguments:     len(wiretest.Filler),
		CallBytes:        len("c") + len("f"),
		EndAtStop:        true,
		TooMany:          "mistral: more than " + strconv.Itoa(openai.MaxToolCalls) + " tool calls",
		TooLarge:         "mistral: tool calls larger than " + strconv.Itoa(openai.MaxToolCallBytes) + " bytes together",
	})
}
