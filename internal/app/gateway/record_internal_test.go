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

// TestRecordStreamRuns: a recorded stream keeps its runs of text chunks
// as one chunk each, and its record is the response all its chunks make:
// text around usage, reasoning and a tool call, empty deltas, a
// character split between two deltas, for every dialect's encoder.
func TestRecordStreamRuns(t *testing.T) {
	u1, u2 := chat.Usage{Input: 10, Output: 1}, chat.Usage{Input: 10, Output: 9}
	chunks := []chat.Chunk{
		{Type: chat.ChunkReasoning, Text: "thinking "}, {Type: chat.ChunkReasoning, Text: "more"},
		{Type: chat.ChunkText, Text: "Hello"}, {Type: chat.ChunkText, Text: ", w"},
		{Type: chat.ChunkUsage, Usage: &u1}, {Type: chat.ChunkText, Text: "orld \xc3"}, {Type: chat.ChunkText, Text: "\xa9"},
		{Type: chat.ChunkText}, {Type: chat.ChunkText, Text: "!"},
		{Type: chat.ChunkToolCallStart, Index: 0, ID: "call_1", Name: "f"},
		{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"a":`}, {Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `1}`},
		{Type: chat.ChunkToolCallEnd, Index: 0},
		{Type: chat.ChunkText, Text: "after the call"}, {Type: chat.ChunkUsage, Usage: &u2}, {Type: chat.ChunkText, Text: " and more"},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
	}
	// Whole, and cut before its stop: the last run ends with the stream.
	for _, chunks := range [][]chat.Chunk{chunks, chunks[:len(chunks)-1]} {
		recordRuns(t, chunks, u2)
	}
}

func recordRuns(t *testing.T, chunks []chat.Chunk, u2 chat.Usage) {
	t.Helper()
	all := func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
	want, err := chat.Collect(all)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Dialect{Anthropic, OpenAI, Responses, Gemini} {
		out := wire.Outgoing{Request: &chat.Request{Model: "m"}, Model: "m", ID: d.row().IDPrefix + "1", Created: 1}
		rw := &recordWriter{ResponseWriter: httptest.NewRecorder(), d: d, started: time.Now(), x: &Exchange{}}
		n := 0
		for _, err := range recordStream(rw, out, all) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != len(chunks) {
			t.Fatalf("%s: %d chunks passed on, want %d", d.row().Name, n, len(chunks))
		}
		body, err := d.row().Response(want, out)
		if err != nil {
			t.Fatal(err)
		}
		if x := rw.x; string(x.Response) != string(body) || x.Usage == nil || *x.Usage != u2 || x.LastMessage != answerText(&want) {
			t.Errorf("%s: recorded %s (usage %+v, last message %q)\nwant %s", d.row().Name, x.Response, x.Usage, x.LastMessage, body)
		}
	}
}
