package gateway

import (
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// TestRecordStreamBounded: what a recorded stream keeps to make its
// record is bounded however many events the upstream sends: a provider
// that repeats its usage in every event (Gemini's) or sends events
// without text adds no memory past the bound, and the record still has
// the last usage and the stop.
func TestRecordStreamBounded(t *testing.T) {
	const events = 400_000
	rw := &recordWriter{ResponseWriter: httptest.NewRecorder(), d: OpenAI, started: time.Now(), x: &Exchange{}}
	u := chat.Usage{Input: 10}
	upstream := func(yield func(chat.Chunk, error) bool) {
		for i := range events {
			c := chat.Chunk{Type: chat.ChunkUsage, Usage: &u}
			if i%2 == 1 {
				c = chat.Chunk{Type: chat.ChunkText}
			}
			if !yield(c, nil) {
				return
			}
		}
		last := chat.Usage{Input: 10, Output: events}
		if yield(chat.Chunk{Type: chat.ChunkUsage, Usage: &last}, nil) {
			yield(chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}}, nil)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for range recordStream(rw, wire.Outgoing{Model: "m", ID: "chatcmpl-1"}, upstream) {
		n++
	}
	runtime.ReadMemStats(&after)
	if n != events+2 {
		t.Fatalf("%d chunks passed on, want %d", n, events+2)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("keeping the stream for its record allocated %d MiB", grew>>20)
	}
	if x := rw.x; x.Usage == nil || x.Usage.Output != events || len(x.Response) == 0 {
		t.Errorf("the record lost the stream's end: usage %+v, response %s", x.Usage, x.Response)
	}
}
