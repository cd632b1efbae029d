package openai_test

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// limitFiller is the text of every argument fragment the limit tests
// send: a fragment of n bytes is limitFiller[:n], so a stream of 64 MiB
// costs no more than this to build.
var limitFiller = bytes.Repeat([]byte("x"), 4<<20)

// toolCallStream is a Chat Completions stream of tool calls (id "c", name
// "f") with arguments of the given sizes, sent in fragments of at most
// len(limitFiller) bytes, then a finish_reason.
func toolCallStream(sizes []int) io.Reader {
	var parts []io.Reader
	add := func(b ...[]byte) {
		for _, s := range b {
			parts = append(parts, bytes.NewReader(s))
		}
	}
	for i, n := range sizes {
		add(fmt.Appendf(nil, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n", i))
		for n > 0 {
			k := min(n, len(limitFiller))
			add(fmt.Appendf(nil, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":\"", i),
				limitFiller[:k], []byte("\"}}]}}]}\n\n"))
			n -= k
		}
	}
	add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
	return io.MultiReader(parts...)
}

// limitArgSizes is the argument sizes of n calls each carrying overhead
// bytes of id and name, whose bytes together come to
// MaxToolCallBytes+extra, each call's arguments within MaxArguments.
func limitArgSizes(t *testing.T, n, overhead, extra int) []int {
	left := openai.MaxToolCallBytes + extra - n*overhead
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = min(left, openai.MaxArguments)
		left -= sizes[i]
	}
	if left != 0 {
		t.Fatalf("%d calls cannot hold %d bytes more", n, left)
	}
	return sizes
}

// limitResult is what the limit tests check of a decoded stream.
type limitResult struct {
	starts, ends, args int // tool call starts and ends, and the bytes of the ends' arguments
	stop               bool
	err                error
}

func decodeLimits(r io.Reader) limitResult {
	var d limitResult
	for c, err := range openai.DecodeStream(r) {
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
	d := decodeLimits(toolCallStream(make([]int, openai.MaxToolCalls)))
	if d.err != nil || d.starts != openai.MaxToolCalls || d.ends != openai.MaxToolCalls || !d.stop {
		t.Fatalf("%d calls: got %+v, want them all and a stop", openai.MaxToolCalls, d)
	}
	d = decodeLimits(toolCallStream(make([]int, openai.MaxToolCalls+1)))
	want := "more than " + strconv.Itoa(openai.MaxToolCalls) + " tool calls"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("%d calls: got error %v, want one with %q", openai.MaxToolCalls+1, d.err, want)
	}
	if d.starts != openai.MaxToolCalls || d.ends != 0 || d.stop {
		t.Errorf("%d calls: got %+v, want the first %d started, none ended, no stop", openai.MaxToolCalls+1, d, openai.MaxToolCalls)
	}
}

// TestDecodeToolCallBytesBound: tool calls whose ids, names and arguments
// come to MaxToolCallBytes decode; one byte more ends the stream with an
// error, though each call stays within MaxArguments.
func TestDecodeToolCallBytesBound(t *testing.T) {
	const calls, overhead = 4, len("c") + len("f")
	d := decodeLimits(toolCallStream(limitArgSizes(t, calls, overhead, 0)))
	if d.err != nil || d.ends != calls || d.args != openai.MaxToolCallBytes-calls*overhead || !d.stop {
		t.Fatalf("at the bound: got %+v, want %d whole calls and a stop", d, calls)
	}
	d = decodeLimits(toolCallStream(limitArgSizes(t, calls, overhead, 1)))
	want := "tool calls larger than " + strconv.Itoa(openai.MaxToolCallBytes) + " bytes together"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("a byte past the bound: got error %v, want one with %q", d.err, want)
	}
	if d.ends != 0 || d.stop {
		t.Errorf("a byte past the bound: got %+v, want no call ended and no stop", d)
	}
}

// TestAssemblerBoundsNameAndID: the ids and names the assembler keeps
// count against MaxToolCallBytes too, and once a bound is passed it
// takes nothing more.
func TestAssemblerBoundsNameAndID(t *testing.T) {
	var a openai.ToolCallAssembler
	emit := func(chat.Chunk) bool { return true }
	name := strings.Repeat("n", 1<<20)
	for i := range openai.MaxToolCallBytes >> 20 {
		if !a.Fragment(i, "", name, "", emit) {
			t.Fatalf("call %d: %v", i, a.Err())
		}
	}
	if a.Fragment(openai.MaxToolCallBytes>>20, "", "f", "", emit) || a.Err() == nil {
		t.Fatal("a name past MaxToolCallBytes was taken")
	}
	err := a.Err()
	if a.Fragment(0, "", "", "{}", emit) || a.Err() != err {
		t.Fatal("a fragment after the error was taken")
	}
}
