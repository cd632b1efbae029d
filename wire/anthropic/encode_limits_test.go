package anthropic_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

// tailWriter keeps the last bytes written to it.
type tailWriter struct{ tail []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.tail = append(w.tail, p[max(0, len(p)-4096):]...)
	w.tail = w.tail[max(0, len(w.tail)-4096):]
	return len(p), nil
}

// TestEncodeToolCallCountBound: the writer keeps every call that started,
// and queues those that start while another is open. MaxToolCalls calls
// all started at once are written; one more ends the stream with an error
// event, and EncodeStream returns the error.
func TestEncodeToolCallCountBound(t *testing.T) {
	interleaved := func(n int) []chat.Chunk {
		var cs []chat.Chunk
		for i := range n {
			cs = append(cs, chat.Chunk{Type: chat.ChunkToolCallStart, Index: i, ID: "t" + strconv.Itoa(i), Name: "f"})
		}
		for i := range n {
			cs = append(cs, chat.Chunk{Type: chat.ChunkToolCallEnd, Index: i, Arguments: "{}"})
		}
		return append(cs, chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}})
	}
	var out bytes.Buffer
	if err := anthropic.EncodeStream(&out, nil, "m", "id", seq(interleaved(anthropic.MaxToolCalls)...)); err != nil {
		t.Fatalf("%d calls: %v", anthropic.MaxToolCalls, err)
	}
	if n := strings.Count(out.String(), "event: content_block_stop\n"); n != anthropic.MaxToolCalls || !strings.HasSuffix(out.String(), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("%d calls: %d blocks written, and the stream ends %q", anthropic.MaxToolCalls, n, out.String()[max(0, out.Len()-200):])
	}

	out.Reset()
	err := anthropic.EncodeStream(&out, nil, "m", "id", seq(interleaved(anthropic.MaxToolCalls+1)...))
	want := "more than " + strconv.Itoa(anthropic.MaxToolCalls) + " tool calls"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%d calls: got error %v, want one with %q", anthropic.MaxToolCalls+1, err, want)
	}
	last := out.String()[strings.LastIndex(out.String(), "event: "):]
	if !strings.HasPrefix(last, "event: error\n") || !strings.Contains(last, want) || strings.Contains(out.String(), "message_stop") {
		t.Fatalf("%d calls: the stream ends %q, want an error event naming the bound and no message_stop", anthropic.MaxToolCalls+1, last)
	}
}

// TestEncodeWaitingBytesBound: calls that wait behind an open one keep
// their id, name, fragments and, once ended, complete arguments. Up to
// MaxToolCallBytes of them is written whole; one byte more ends the
// stream with an error event.
func TestEncodeWaitingBytesBound(t *testing.T) {
	big := strings.Repeat("x", anthropic.MaxArguments)
	const calls = 5 // call 0 stays open, calls 1-4 wait behind it
	const overhead = calls * len("tf")
	stream := func(extra int, complete bool) []chat.Chunk {
		var cs []chat.Chunk
		for i := range calls {
			cs = append(cs, chat.Chunk{Type: chat.ChunkToolCallStart, Index: i, ID: "t", Name: "f"})
		}
		left := anthropic.MaxToolCallBytes + extra - overhead
		for i := 1; i < calls; i++ {
			n := min(left, len(big))
			left -= n
			if complete {
				cs = append(cs, chat.Chunk{Type: chat.ChunkToolCallEnd, Index: i, Arguments: big[:n]})
				continue
			}
			for n > 0 {
				k := min(n, 4<<20)
				cs = append(cs, chat.Chunk{Type: chat.ChunkToolCallDelta, Index: i, Arguments: big[:k]})
				n -= k
			}
		}
		if left != 0 {
			t.Fatalf("the waiting calls cannot hold %d bytes more", left)
		}
		for i := range calls {
			cs = append(cs, chat.Chunk{Type: chat.ChunkToolCallEnd, Index: i})
		}
		return append(cs, chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}})
	}
	for _, complete := range []bool{false, true} {
		name := "fragments"
		if complete {
			name = "complete arguments"
		}
		t.Run(name, func(t *testing.T) {
			var out tailWriter
			if err := anthropic.EncodeStream(&out, nil, "m", "id", seq(stream(0, complete)...)); err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			if !bytes.HasSuffix(out.tail, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) {
				t.Fatalf("at the bound: the stream ends %q", out.tail)
			}

			out = tailWriter{}
			err := anthropic.EncodeStream(&out, nil, "m", "id", seq(stream(1, complete)...))
			want := "hold more than " + strconv.Itoa(anthropic.MaxToolCallBytes) + " bytes"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("a byte past the bound: got error %v, want one with %q", err, want)
			}
			last := out.tail[bytes.LastIndex(out.tail, []byte("event: ")):]
			if !bytes.HasPrefix(last, []byte("event: error\n")) || !bytes.Contains(last, []byte(want)) {
				t.Fatalf("a byte past the bound: the stream ends %q, want an error event naming the bound", last)
			}
		})
	}
}
