package gemini_test

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/gemini"
)

// limitFiller is the text of every call's arguments the limit tests send:
// a call whose args are {"a":"<n bytes>"} takes limitFiller[:n], so a
// stream of 64 MiB costs no more than this to build.
var limitFiller = bytes.Repeat([]byte("x"), 4<<20)

// argsOverhead is what {"a":"..."} adds to the n bytes inside it.
const argsOverhead = len(`{"a":""}`)

// callStream is an alt=sse stream of function calls named "f", one event
// each, whose args are {"a":"<n bytes>"} for each n of sizes, then a
// finishReason.
func callStream(sizes []int) io.Reader {
	var parts []io.Reader
	add := func(b ...[]byte) {
		for _, s := range b {
			parts = append(parts, bytes.NewReader(s))
		}
	}
	head := []byte(`data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":"`)
	tail := []byte("\"}}}]}}]}\n\n")
	for _, n := range sizes {
		add(head, limitFiller[:n], tail)
	}
	add([]byte(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}` + "\n\n"))
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
	for c, err := range gemini.DecodeStream(r) {
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

// TestDecodeToolCallCountBound: MaxToolCalls function calls decode; one
// more ends the stream with an error saying so.
func TestDecodeToolCallCountBound(t *testing.T) {
	d := decodeLimits(callStream(make([]int, gemini.MaxToolCalls)))
	if d.err != nil || d.starts != gemini.MaxToolCalls || d.ends != gemini.MaxToolCalls || !d.stop {
		t.Fatalf("%d calls: got %+v, want them all and a stop", gemini.MaxToolCalls, d)
	}
	d = decodeLimits(callStream(make([]int, gemini.MaxToolCalls+1)))
	want := "more than " + strconv.Itoa(gemini.MaxToolCalls) + " function calls"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("%d calls: got error %v, want one with %q", gemini.MaxToolCalls+1, d.err, want)
	}
	if d.starts != gemini.MaxToolCalls || d.stop {
		t.Errorf("%d calls: got %+v, want the first %d and no stop", gemini.MaxToolCalls+1, d, gemini.MaxToolCalls)
	}
}

// TestDecodeToolCallBytesBound: function calls whose names and arguments
// come to MaxToolCallBytes decode; one byte more ends the stream with an
// error, though each call is well within a response chunk.
func TestDecodeToolCallBytesBound(t *testing.T) {
	const calls, overhead = 16, len("f") + argsOverhead
	sizes := func(extra int) []int {
		left := gemini.MaxToolCallBytes + extra - calls*overhead
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
	d := decodeLimits(callStream(sizes(0)))
	if d.err != nil || d.ends != calls || d.args != gemini.MaxToolCallBytes-calls*len("f") || !d.stop {
		t.Fatalf("at the bound: got %+v, want %d whole calls and a stop", d, calls)
	}
	d = decodeLimits(callStream(sizes(1)))
	want := fmt.Sprintf("function calls larger than %d bytes together", gemini.MaxToolCallBytes)
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("a byte past the bound: got error %v, want one with %q", d.err, want)
	}
	if d.ends != calls-1 || d.stop {
		t.Errorf("a byte past the bound: got %+v, want %d calls before the error", d, calls-1)
	}
}
