package gateway

import (
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

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
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d KiB allocated for %d events", grew>>10, events)
	if grew > 48<<20 { // 334 MiB when every event was kept
		t.Errorf("keeping the stream for its record allocated %d MiB", grew>>20)
	}
	if x := rw.x; x.Usage == nil || x.Usage.Output != events || len(x.Response) == 0 {
		t.Errorf("the record lost the stream's end: usage %+v, response %s", x.Usage, x.Response)
	}
}

// TestRecordExcerptsCopied: a record's message excerpts are copies, not
// slices of the request's or the answer's text: a record waiting in the
// recorder's queue must not hold a message of megabytes, which the
// queue's byte bound does not count, for the sake of its first 400
// bytes.
func TestRecordExcerptsCopied(t *testing.T) {
	long := strings.Repeat("a long message ", 1<<16)
	within := func(s string) bool {
		p, start := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(long)))
		return p >= start && p < start+uintptr(len(long))
	}
	rw := &recordWriter{ResponseWriter: httptest.NewRecorder(), d: OpenAI, started: time.Now()}
	x := &Exchange{}
	req := chat.Request{Messages: []chat.Message{{Content: chat.Content{IsString: true, Text: long}}}}
	recordStart(rw, &route{record: true}, x, &req, []byte(`{}`))
	if x.FirstMessage == "" || within(x.FirstMessage) || within(x.LastMessage) {
		t.Errorf("the request's excerpts hold the whole message (%d bytes)", len(long))
	}
	res := chat.Response{Content: []chat.Block{{Type: chat.TypeText, Text: long}}}
	recorded(rw, &res)
	if x.LastMessage == "" || within(x.LastMessage) {
		t.Errorf("the answer's excerpt holds the whole answer (%d bytes)", len(long))
	}
}
