package bedrock_test

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/bedrock"
)

// limitFiller is the input of every tool fragment the limit tests send:
// a fragment of n bytes is limitFiller[:n].
var limitFiller = strings.Repeat("x", 4<<20)

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

// argSizes is the input sizes of n calls each carrying overhead bytes of
// id and name, whose bytes together come to MaxToolCallBytes+extra, each
// call's input within MaxArguments.
func argSizes(t *testing.T, n, overhead, extra int) []int {
	left := bedrock.MaxToolCallBytes + extra - n*overhead
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = min(left, bedrock.MaxArguments)
		left -= sizes[i]
	}
	if left != 0 {
		t.Fatalf("%d calls cannot hold %d bytes more", n, left)
	}
	return sizes
}

// decoded is what the limit tests check of a decoded stream.
type decoded struct {
	starts, ends, args int // tool call starts and ends, and the bytes of the ends' arguments
	stop               bool
	err                error
}

func decodeLimits(r io.Reader) decoded {
	var d decoded
	for c, err := range bedrock.DecodeStream(r) {
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
	d := decodeLimits(toolUseStream(t, make([]int, bedrock.MaxToolCalls)))
	if d.err != nil || d.starts != bedrock.MaxToolCalls || d.ends != bedrock.MaxToolCalls || !d.stop {
		t.Fatalf("%d calls: got %+v, want them all and a stop", bedrock.MaxToolCalls, d)
	}
	d = decodeLimits(toolUseStream(t, make([]int, bedrock.MaxToolCalls+1)))
	want := "more than " + strconv.Itoa(bedrock.MaxToolCalls) + " tool calls"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("%d calls: got error %v, want one with %q", bedrock.MaxToolCalls+1, d.err, want)
	}
	if d.starts != bedrock.MaxToolCalls || d.stop {
		t.Errorf("%d calls: got %+v, want the first %d and no stop", bedrock.MaxToolCalls+1, d, bedrock.MaxToolCalls)
	}

	// Calls that never stop are bounded alike: an input fragment for a
	// block that had no start opens a call too.
	var b bytes.Buffer
	for i := range bedrock.MaxToolCalls + 1 {
		encodeFrame(t, &b, toolDelta(i, "{}"))
	}
	if d := decodeLimits(&b); d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("%d calls left open: got error %v, want one with %q", bedrock.MaxToolCalls+1, d.err, want)
	}
}

// TestDecodeToolCallBytesBound: tool calls whose ids, names and inputs
// come to MaxToolCallBytes decode; one byte more ends the stream with an
// error, though each call stays within MaxArguments.
func TestDecodeToolCallBytesBound(t *testing.T) {
	const calls, overhead = 4, len("t") + len("f")
	d := decodeLimits(toolUseStream(t, argSizes(t, calls, overhead, 0)))
	if d.err != nil || d.ends != calls || d.args != bedrock.MaxToolCallBytes-calls*overhead || !d.stop {
		t.Fatalf("at the bound: got %+v, want %d whole calls and a stop", d, calls)
	}
	d = decodeLimits(toolUseStream(t, argSizes(t, calls, overhead, 1)))
	want := "tool calls larger than " + strconv.Itoa(bedrock.MaxToolCallBytes) + " bytes together"
	if d.err == nil || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("a byte past the bound: got error %v, want one with %q", d.err, want)
	}
	if d.ends != calls-1 || d.stop {
		t.Errorf("a byte past the bound: got %+v, want %d calls ended before the error", d, calls-1)
	}
}
