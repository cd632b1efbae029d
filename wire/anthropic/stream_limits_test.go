package anthropic_test

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

// filler is the text of every argument fragment the limit tests send: a
// fragment of n bytes is filler[:n], so a stream of 64 MiB costs no more
// than this to build.
var filler = bytes.Repeat([]byte("x"), 4<<20)

// pieces is a stream built from byte slices that are read in turn, shared
// rather than copied.
type pieces []io.Reader

func (p *pieces) add(b ...[]byte) {
	for _, s := range b {
		*p = append(*p, bytes.NewReader(s))
	}
}

func (p *pieces) addf(format string, a ...any) { p.add(fmt.Appendf(nil, format, a...)) }

func (p pieces) reader() io.Reader { return io.MultiReader(p...) }

// argSizes is the argument sizes of n calls each carrying overhead bytes
// of id and name, whose bytes together come to MaxToolCallBytes+extra,
// each call's arguments within MaxArguments.
func argSizes(n, overhead, extra int) []int {
	left := anthropic.MaxToolCallBytes + extra - n*overhead
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = min(left, anthropic.MaxArguments)
		left -= sizes[i]
	}
	if left != 0 {
		panic("argSizes: the calls cannot hold that much")
	}
	return sizes
}

// toolUseStream is a Messages stream of tool_use blocks (id "t", name
// "f", one after another) with arguments of the given sizes, sent in
// fragments of at most len(filler) bytes.
func toolUseStream(sizes []int) io.Reader {
	var p pieces
	p.addf("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	for i, n := range sizes {
		p.addf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n", i)
		for n > 0 {
			k := min(n, len(filler))
			p.addf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"", i)
			p.add(filler[:k], []byte("\"}}\n\n"))
			n -= k
		}
		p.addf("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":%d}\n\n", i)
	}
	p.addf("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":2}}\n\n")
	p.addf("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return p.reader()
}

// decoded is what the limit tests check of a decoded stream.
type decoded struct {
	starts, ends, args int // tool call starts and ends, and the bytes of the ends' arguments
	stop               bool
	err                error
}

func decodeLimits(r io.Reader) decoded {
	var d decoded
	for c, err := range anthropic.DecodeStream(r) {
		if err != nil {
			d.err = err
			break
		}
		switch c.Type {
		case chat.ChunkToolCallStart:
			d.starts++
		case chat.ChunkToolCallEnd:
			d.ends++
			d.args += len(c.Arguments)
		case chat.ChunkStop:
			d.stop = true
		}
	}
	return d
}

// TestDecodeToolCallCountBound: MaxToolCalls tool calls decode; one more
// ends the stream with an error saying so.
func TestDecodeToolCallCountBound(t *testing.T) {
	d := decodeLimits(toolUseStream(make([]int, anthropic.MaxToolCalls)))
	if d.err != nil || d.starts != anthropic.MaxToolCalls || d.ends != anthropic.MaxToolCalls || !d.stop {
		t.Fatalf("%d calls: got %+v, want them all and a stop", anthropic.MaxToolCalls, d)
	}
	d = decodeLimits(toolUseStream(make([]int, anthropic.MaxToolCalls+1)))
	want := "more than " + strconv.Itoa(anthropic.MaxToolCalls) + " tool calls"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("%d calls: got error %v, want one with %q", anthropic.MaxToolCalls+1, d.err, want)
	}
	if d.starts != anthropic.MaxToolCalls || d.stop {
		t.Errorf("%d calls: got %+v, want the first %d and no stop", anthropic.MaxToolCalls+1, d, anthropic.MaxToolCalls)
	}
}

// TestDecodeToolCallBytesBound: tool calls whose ids, names and arguments
// come to MaxToolCallBytes decode; one byte more ends the stream with an
// error, though each call stays within MaxArguments.
func TestDecodeToolCallBytesBound(t *testing.T) {
	const calls, overhead = 4, len("t") + len("f")
	d := decodeLimits(toolUseStream(argSizes(calls, overhead, 0)))
	if d.err != nil || d.ends != calls || d.args != anthropic.MaxToolCallBytes-calls*overhead || !d.stop {
		t.Fatalf("at the bound: got %+v, want %d whole calls and a stop", d, calls)
	}
	d = decodeLimits(toolUseStream(argSizes(calls, overhead, 1)))
	want := "tool calls larger than " + strconv.Itoa(anthropic.MaxToolCallBytes) + " bytes together"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("a byte past the bound: got error %v, want one with %q", d.err, want)
	}
	if d.ends != calls-1 || d.stop {
		t.Errorf("a byte past the bound: got %+v, want %d calls ended before the error", d, calls-1)
	}
}

// TestDecodeOpenBlocksBound: MaxOpenBlocks blocks open at once decode;
// one more ends the stream with an error saying so.
func TestDecodeOpenBlocksBound(t *testing.T) {
	open := func(n int) io.Reader {
		var p pieces
		for i := range n {
			p.addf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", i)
		}
		p.addf("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		return p.reader()
	}
	if d := decodeLimits(open(anthropic.MaxOpenBlocks)); d.err != nil {
		t.Fatalf("%d open blocks: %v", anthropic.MaxOpenBlocks, d.err)
	}
	d := decodeLimits(open(anthropic.MaxOpenBlocks + 1))
	want := "more than " + strconv.Itoa(anthropic.MaxOpenBlocks) + " blocks open at once"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("%d open blocks: got error %v, want one with %q", anthropic.MaxOpenBlocks+1, d.err, want)
	}
}
