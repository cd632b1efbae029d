package anthropic_test

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// toolUseStream is a Messages stream of tool_use blocks (id "t", name
// "f", one after another) with arguments of the given sizes, sent in
// fragments of at most len(wiretest.Filler) bytes.
func toolUseStream(_ *testing.T, sizes []int) io.Reader {
	var p wiretest.Pieces
	p.Addf("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	for i, n := range sizes {
		p.Addf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n", i)
		for n > 0 {
			k := min(n, len(wiretest.Filler))
			p.Addf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"", i)
			p.Add(wiretest.Filler[:k], []byte("\"}}\n\n"))
			n -= k
		}
		p.Addf("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":%d}\n\n", i)
	}
	p.Addf("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":2}}\n\n")
	p.Addf("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return p.Reader()
}

// TestDecodeToolCallBounds: MaxToolCalls tool calls decode, and calls of
// MaxToolCallBytes together; one call or one byte more ends the stream
// with an error saying so.
func TestDecodeToolCallBounds(t *testing.T) {
	wiretest.CheckToolCallBounds(t, wiretest.ToolCallBounds{
		Decode:           anthropic.DecodeStream,
		Stream:           toolUseStream,
		MaxToolCalls:     anthropic.MaxToolCalls,
		MaxToolCallBytes: anthropic.MaxToolCallBytes,
		MaxArguments:     anthropic.MaxArguments,
		CallBytes:        len("t") + len("f"),
		TooMany:          "more than " + strconv.Itoa(anthropic.MaxToolCalls) + " tool calls",
		TooLarge:         "tool calls larger than " + strconv.Itoa(anthropic.MaxToolCallBytes) + " bytes together",
	})
}

// TestDecodeOpenBlocksBound: MaxOpenBlocks blocks open at once decode;
// one more ends the stream with an error saying so.
func TestDecodeOpenBlocksBound(t *testing.T) {
	open := func(n int) io.Reader {
		var p wiretest.Pieces
		for i := range n {
			p.Addf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", i)
		}
		p.Addf("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		return p.Reader()
	}
	if _, err := wiretest.DecodeAll(anthropic.DecodeStream, open(anthropic.MaxOpenBlocks)); err != nil {
		t.Fatalf("%d open blocks: %v", anthropic.MaxOpenBlocks, err)
	}
	_, err := wiretest.DecodeAll(anthropic.DecodeStream, open(anthropic.MaxOpenBlocks+1))
	want := "more than " + strconv.Itoa(anthropic.MaxOpenBlocks) + " blocks open at once"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%d open blocks: got error %v, want one with %q", anthropic.MaxOpenBlocks+1, err, want)
	}
}
