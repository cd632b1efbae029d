package wiretest

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// Filler is the text of the tool-call arguments that limit tests send:
// arguments of n bytes are Filler[:n], or pieces of it, shared rather
// than copied, so that a stream of 64 MiB costs little to build.
var Filler = bytes.Repeat([]byte("x"), 4<<20)

// Pieces is a stream made of byte slices read in turn, shared rather than
// copied.
type Pieces []io.Reader

// Add appends the slices b to the stream.
func (p *Pieces) Add(b ...[]byte) {
	for _, s := range b {
		*p = append(*p, bytes.NewReader(s))
	}
}

// Addf appends the text format makes of a.
func (p *Pieces) Addf(format string, a ...any) { p.Add(fmt.Appendf(nil, format, a...)) }

// Reader reads the stream.
func (p Pieces) Reader() io.Reader { return io.MultiReader(p...) }

// ToolCallBounds describes how a stream decoder bounds the tool calls of
// one stream, for CheckToolCallBounds.
type ToolCallBounds struct {
	// Decode is the dialect's stream decoder.
	Decode Decoder
	// Stream is a stream of the dialect that makes one tool call for each
	// of sizes, whose arguments hold that many bytes of Filler, and then
	// stops.
	Stream func(t *testing.T, sizes []int) io.Reader
	// MaxToolCalls and MaxToolCallBytes are the decoder's bounds: on the
	// tool calls of a stream, and on the bytes of their ids, names and
	// arguments together.
	MaxToolCalls, MaxToolCallBytes int
	// MaxArguments is the most bytes of Filler Stream may put in one
	// call: the decoder's bound on one call's arguments, or what one
	// event of Stream can carry.
	MaxArguments int
	// CallBytes is the bytes each call of Stream counts against
	// MaxToolCallBytes beside its bytes of Filler: its id and name, and
	// what the arguments wrap the Filler in.
	CallBytes int
	// Wrapping is the part of CallBytes that the decoded arguments hold
	// (Gemini's {"a":""} around the Filler), 0 when they are the Filler.
	Wrapping int
	// EndAtStop says the decoder ends the tool calls when the stream
	// stops, all together (the OpenAI shape), rather than each as its
	// arguments end.
	EndAtStop bool
	// TooMany and TooLarge are what the errors past MaxToolCalls and past
	// MaxToolCallBytes say (a part of each).
	TooMany, TooLarge string
}

// CheckToolCallBounds checks a decoder's bounds on the tool calls of a
// stream. MaxToolCalls calls (with empty arguments) decode; one more ends
// the stream with the error TooMany, after the first MaxToolCalls started
// (and ended, unless EndAtStop) and before a stop. Calls whose ids, names
// and arguments come to MaxToolCallBytes decode whole; one byte more ends
// the stream with the error TooLarge, in the last call (the others ended,
// unless EndAtStop), though each call stays within MaxArguments.
func CheckToolCallBounds(t *testing.T, b ToolCallBounds) {
	t.Run("count", func(t *testing.T) {
		d := decodeToolCalls(b.Decode, b.Stream(t, make([]int, b.MaxToolCalls)))
		if d.err != nil || d.starts != b.MaxToolCalls || d.ends != b.MaxToolCalls || !d.stop {
			t.Fatalf("%d calls: got %v, want them all and a stop", b.MaxToolCalls, d)
		}
		d = decodeToolCalls(b.Decode, b.Stream(t, make([]int, b.MaxToolCalls+1)))
		if d.err == nil || !strings.Contains(d.err.Error(), b.TooMany) {
			t.Fatalf("%d calls: got error %v, want one with %q", b.MaxToolCalls+1, d.err, b.TooMany)
		}
		ended := b.MaxToolCalls
		if b.EndAtStop {
			ended = 0
		}
		if d.starts != b.MaxToolCalls || d.ends != ended || d.stop {
			t.Errorf("%d calls: got %v, want the first %d started, %d ended, no stop", b.MaxToolCalls+1, d, b.MaxToolCalls, ended)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		// Enough calls to hold a byte past the bound, their bytes spread
		// evenly: the last byte is in the last call.
		calls := b.MaxToolCallBytes/b.MaxArguments + 1
		sizes := func(extra int) []int {
			left := b.MaxToolCallBytes + extra - calls*b.CallBytes
			s := make([]int, calls)
			for i := range s {
				s[i] = left / (calls - i)
				left -= s[i]
			}
			if s[calls-1] > b.MaxArguments { // the largest
				t.Fatalf("%d calls cannot hold %d bytes", calls, b.MaxToolCallBytes+extra)
			}
			return s
		}
		d := decodeToolCalls(b.Decode, b.Stream(t, sizes(0)))
		args := b.MaxToolCallBytes - calls*(b.CallBytes-b.Wrapping)
		if d.err != nil || d.ends != calls || d.args != args || !d.stop {
			t.Fatalf("at the bound: got %v, want %d whole calls of %d bytes of arguments and a stop", d, calls, args)
		}
		d = decodeToolCalls(b.Decode, b.Stream(t, sizes(1)))
		if d.err == nil || !strings.Contains(d.err.Error(), b.TooLarge) {
			t.Fatalf("a byte past the bound: got error %v, want one with %q", d.err, b.TooLarge)
		}
		ended := calls - 1
		if b.EndAtStop {
			ended = 0
		}
		if d.ends != ended || d.stop {
			t.Errorf("a byte past the bound: got %v, want %d calls ended before the error and no stop", d, ended)
		}
	})
}

// toolCalls is what CheckToolCallBounds checks of a decoded stream.
type toolCalls struct {
	starts, ends, args int // tool call starts and ends, and the bytes of the ends' arguments
	stop               bool
	err                error
}

func (d toolCalls) String() string {
	return fmt.Sprintf("%d started, %d ended, %d bytes of arguments, stop %v, error %v", d.starts, d.ends, d.args, d.stop, d.err)
}

func decodeToolCalls(decode Decoder, r io.Reader) toolCalls {
	var d toolCalls
	for c, err := range decode(r) {
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
