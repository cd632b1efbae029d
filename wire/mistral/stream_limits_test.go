package mistral_test

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// limitFiller is the text of every call's arguments the limit tests send:
// arguments of n bytes are limitFiller[:n], so a stream of 64 MiB costs no
// more than this to build.
var limitFiller = bytes.Repeat([]byte("x"), 4<<20)

// toolCallStream is a Mistral stream of complete tool calls (id "c", name
// "f", one event each) with arguments of the given sizes, then a
// finish_reason.
func toolCallStream(sizes []int) io.Reader {
	var parts []io.Reader
	add := func(b ...[]byte) {
		for _, s := range b {
			parts = append(parts, bytes.NewReader(s))
		}
	}
	for i, n := range sizes {
		add(fmt.Appendf(nil, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\",\"tool_calls\":[{\"id\":\"c\",\"index\":%d,\"function\":{\"name\":\"f\",\"arguments\":\"", i),
			limitFiller[:n], []byte("\"}}]}}]}\n\n"))
	}
	add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n"))
	return io.MultiReader(parts...)
}

// limitResult is what the limit tests check of a decoded stream.
type limitResult struct {
	starts, ends, args int // tool call starts and ends, and the bytes of the ends' arguments
	stop               bool
	err                error
}

func decodeLimits(r io.Reader) limitResult {
	var d limitResult
	for c, err := range mistral.DecodeStream(r) {
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

// TestDecodeToolCallCountBound: openai.MaxToolCalls tool calls decode;
// one more ends the stream with an error saying so.
func TestDecodeToolCallCountBound(t *testing.T) {
	sizes := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = 2 // each call's arguments are "xx"
		}
		return s
	}
	d := decodeLimits(toolCallStream(sizes(openai.MaxToolCalls)))
	if d.err != nil || d.starts != openai.MaxToolCalls || d.ends != openai.MaxToolCalls || !d.stop {
		t.Fatalf("%d calls: got %+v, want them all and a stop", openai.MaxToolCalls, d)
	}
	d = decodeLimits(toolCallStream(sizes(openai.MaxToolCalls + 1)))
	want := "mistral: more than " + strconv.Itoa(openai.MaxToolCalls) + " tool calls"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("%d calls: got error %v, want one with %q", openai.MaxToolCalls+1, d.err, want)
	}
	if d.starts != openai.MaxToolCalls || d.ends != 0 || d.stop {
		t.Errorf("%d calls: got %+v, want the first %d started, none ended, no stop", openai.MaxToolCalls+1, d, openai.MaxToolCalls)
	}
}

// TestDecodeToolCallBytesBound: tool calls whose ids, names and arguments
// come to openai.MaxToolCallBytes decode; one byte more ends the stream
// with an error, though each call stays well within openai.MaxArguments.
func TestDecodeToolCallBytesBound(t *testing.T) {
	const calls, overhead = 16, len("c") + len("f")
	sizes := func(extra int) []int {
		left := openai.MaxToolCallBytes + extra - calls*overhead
		s := make([]int, calls)
		for i := range s {
			s[i] = min(left, len(limitFiller))
			left -= s[i]
		}
		if left != 0 {
			t.Fatalf("%d calls cannot hold %d bytes more", calls, left)
		}
		return s
	}
	d := decodeLimits(toolCallStream(sizes(0)))
	if d.err != nil || d.ends != calls || d.args != openai.MaxToolCallBytes-calls*overhead || !d.stop {
		t.Fatalf("at the bound: got %+v, want %d whole calls and a stop", d, calls)
	}
	d = decodeLimits(toolCallStream(sizes(1)))
	want := "mistral: tool calls larger than " + strconv.Itoa(openai.MaxToolCallBytes) + " bytes together"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("a byte past the bound: got error %v, want one with %q", d.err, want)
	}
	if d.ends != 0 || d.stop {
		t.Errorf("a byte past the bound: got %+v, want no call ended and no stop", d)
	}
}
