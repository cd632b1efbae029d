package responses_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// repeat is n copies of s joined with commas.
func repeat(s string, n int) string { return strings.TrimSuffix(strings.Repeat(s+",", n), ",") }

// TestRequestLimits: a request past one of the bounds is refused with a
// too_large *chat.Error naming the place, and one at the bound is read.
func TestRequestLimits(t *testing.T) {
	item := `{"role":"user","content":"x"}`
	part := `{"type":"input_text","text":"x"}`
	tool := `{"type":"function","name":"f"}`
	cases := []struct {
		name, body, path string
		ok               bool
	}{
		{"items at the bound", `{"input":[` + repeat(item, chat.MaxMessages) + `]}`, "", true},
		{"items past the bound", `{"input":[` + repeat(item, chat.MaxMessages+1) + `]}`, "input", false},
		{"tools past the bound", `{"input":"x","tools":[` + repeat(tool, chat.MaxTools+1) + `]}`, "tools", false},
		{"blocks past the bound", `{"input":[{"role":"user","content":[` + repeat(part, chat.MaxBlocks+1) + `]}]}`, "input[0].content[20000]", false},
		{"blocks across items", `{"input":[{"role":"user","content":[` + repeat(part, chat.MaxBlocks) + `]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`, "input[1]", false},
		{"unknown fields past the bound", `{"input":"x",` + fields(chat.MaxExtraFields+1) + `}`, "", false},
		{"unknown fields in items", `{"input":[{"role":"user","content":"x",` + fields(chat.MaxExtraFields) + `},{"role":"user","content":"y","z":1}]}`, "input[1]", false},
		{"too deep", `{"input":"x","metadata":` + strings.Repeat(`{"a":`, responses.MaxDepth) + `1` + strings.Repeat(`}`, responses.MaxDepth) + `}`, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := responses.DecodeRequest([]byte(c.body))
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *chat.Error
			if !errors.As(err, &ce) || ce.Code != chat.CodeTooLarge && !strings.Contains(ce.Msg, "more than") {
				t.Fatalf("got %v, want a too-large *chat.Error", err)
			}
			if ce.Path != c.path {
				t.Errorf("path %q, want %q (%v)", ce.Path, c.path, err)
			}
		})
	}
}

func fields(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"x%d":1`, i)
	}
	return b.String()
}

// callStream is a Responses stream of function calls (call_id "c", name
// "f") with arguments of the given sizes, in deltas of at most
// len(wiretest.Filler) bytes, each call's done item without its arguments
// (a server may leave them to the deltas), then response.completed.
func callStream(_ *testing.T, sizes []int) io.Reader {
	var p wiretest.Pieces
	for i, n := range sizes {
		p.Addf("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":%d,\"item\":{\"type\":\"function_call\",\"id\":\"fc%d\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"\"}}\n\n", i, i)
		for n > 0 {
			k := min(n, len(wiretest.Filler))
			p.Addf("data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":%d,\"delta\":\"", i)
			p.Add(wiretest.Filler[:k], []byte("\"}\n\n"))
			n -= k
		}
		p.Addf("data: {\"type\":\"response.output_item.done\",\"output_index\":%d,\"item\":{\"type\":\"function_call\",\"id\":\"fc%d\",\"call_id\":\"c\",\"name\":\"f\"}}\n\n", i, i)
	}
	p.Add([]byte("data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n"))
	return p.Reader()
}

// TestDecodeToolCallBounds: MaxToolCalls calls decode, and calls of
// MaxToolCallBytes together; one call or one byte more ends the stream
// with an error saying so, each call having ended as its item did.
func TestDecodeToolCallBounds(t *testing.T) {
	wiretest.CheckToolCallBounds(t, wiretest.ToolCallBounds{
		Decode:           responses.DecodeStream,
		Stream:           callStream,
		MaxToolCalls:     responses.MaxToolCalls,
		MaxToolCallBytes: responses.MaxToolCallBytes,
		MaxArguments:     responses.MaxArguments,
		CallBytes:        len("c") + len("f"),
		TooMany:          "more than " + strconv.Itoa(responses.MaxToolCalls) + " tool calls",
		TooLarge:         "tool calls larger than " + strconv.Itoa(responses.MaxToolCallBytes) + " bytes together",
	})
}

// TestDecodeStreamBounds: more than MaxItems output items, or an event
// larger than MaxEvent, end the stream with an error.
func TestDecodeStreamBounds(t *testing.T) {
	var p wiretest.Pieces
	for i := range responses.MaxItems + 1 {
		p.Addf("data: {\"type\":\"response.output_item.added\",\"output_index\":%d,\"item\":{\"type\":\"message\",\"id\":\"m%d\"}}\n\n", i, i)
	}
	if _, err := wiretest.DecodeAll(responses.DecodeStream, p.Reader()); err == nil || !strings.Contains(err.Error(), "more than 10000 output items") {
		t.Errorf("items: got %v", err)
	}
	var q wiretest.Pieces
	q.Add([]byte(`data: {"type":"response.output_text.delta","delta":"`))
	for range responses.MaxEvent/len(wiretest.Filler) + 1 {
		q.Add(wiretest.Filler)
	}
	q.Add([]byte("\"}\n\n"))
	if _, err := wiretest.DecodeAll(responses.DecodeStream, q.Reader()); err == nil || !strings.Contains(err.Error(), "event larger than") {
		t.Errorf("event: got %v", err)
	}
}

// TestEncodeStreamBound: a stream past MaxStreamOutput ends with
// response.failed and ErrStreamTooLarge.
func TestEncodeStreamBound(t *testing.T) {
	text := string(wiretest.Filler)
	chunks := func(yield func(chat.Chunk, error) bool) {
		for range responses.MaxStreamOutput/len(text) + 1 {
			if !yield(chat.Chunk{Type: chat.ChunkText, Text: text}, nil) {
				return
			}
		}
		t.Errorf("the encoder read past its bound")
	}
	var tail tailWriter
	err := responses.EncodeStream(&tail, nil, "m", "resp_big", 1, chunks)
	if !errors.Is(err, responses.ErrStreamTooLarge) {
		t.Fatalf("got %v, want ErrStreamTooLarge", err)
	}
	if !tail.failed || !bytes.HasSuffix(tail.last, []byte("data: [DONE]\n\n")) {
		t.Errorf("the stream does not end with response.failed: %.300s", tail.last)
	}
}

// tailWriter keeps the last 4 KiB written, and whether an event was
// response.failed.
type tailWriter struct {
	last   []byte
	failed bool // an event began with response.failed
}

func (w *tailWriter) Write(b []byte) (int, error) {
	n := len(b)
	w.failed = w.failed || bytes.HasPrefix(b, []byte("event: response.failed\n"))
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	w.last = append(w.last, b...)
	if len(w.last) > 4096 {
		w.last = append([]byte(nil), w.last[len(w.last)-4096:]...)
	}
	return n, nil
}

// TestDecodeErrorReply: the dialect answers errors in OpenAI's shape.
func TestDecodeErrorReply(t *testing.T) {
	got := string(responses.Dialect().Error(wire.ErrorReply{Status: 404, Type: "invalid_request_error", Code: "previous_response_not_found",
		Param: "previous_response_id", Message: "Previous response with id 'resp_x' not found."}))
	want := `{"error":{"message":"Previous response with id 'resp_x' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}` + "\n"
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
