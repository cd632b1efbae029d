package anthropic_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

const streamDir = "testdata/stream"

func TestDecodeStreamFixtures(t *testing.T) {
	wiretest.RunStreamFixtures(t, streamDir, ".sse", 10, anthropic.DecodeStream)
}

func fixtures(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(streamDir, "*.sse"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return files
}

func decodeBytes(data []byte) ([]chat.Chunk, error) {
	return wiretest.DecodeAll(anthropic.DecodeStream, bytes.NewReader(data))
}

func chunkJSON(cs []chat.Chunk) string {
	b, _ := json.Marshal(cs)
	return string(b)
}

// TestRoundTrip: encoding a fixture's chunks and decoding the result gives
// the same chunks. A fixture that ends in a decode error gives its chunks
// and then the error event EncodeStream writes for the decode error.
func TestRoundTrip(t *testing.T) {
	for _, f := range fixtures(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".sse")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := decodeBytes(in)
			var out bytes.Buffer
			flushes := 0
			encErr := anthropic.EncodeStream(&out, func() { flushes++ }, "claude-test", "msg_rt", anthropic.DecodeStream(bytes.NewReader(in)))
			if fmt.Sprint(encErr) != fmt.Sprint(wantErr) {
				t.Fatalf("EncodeStream returned %v, want the decode error %v", encErr, wantErr)
			}
			if flushes == 0 {
				t.Error("flush never called")
			}
			checkShape(t, out.Bytes())
			got, gotErr := decodeBytes(out.Bytes())
			if gotErr != nil {
				t.Fatalf("decoding the encoded stream: %v\n%s", gotErr, out.Bytes())
			}
			if wantErr != nil {
				// The decode error became an error event.
				want = append(want, chat.Chunk{Type: chat.ChunkError, Error: &chat.StreamError{
					Type: "api_error", Message: wantErr.Error(), Retryable: true}})
			}
			if g, w := chunkJSON(got), chunkJSON(want); g != w {
				t.Errorf("round trip differs\n got: %s\nwant: %s\nencoded:\n%s", g, w, out.Bytes())
			}
		})
	}
}

// checkShape checks that an encoded stream has the shape of the API's:
// message_start first (unless the stream is only an error), blocks opened
// and closed in order with indexes 0, 1, ..., deltas for the open block
// only, message_delta after the blocks, then message_stop, or an error
// event last.
func checkShape(t *testing.T, data []byte) {
	t.Helper()
	var names []string
	open, next, started, ended := -1, 0, false, false
	for ev, err := range sse.Read(bytes.NewReader(data), 0) {
		if err != nil {
			t.Fatalf("reading the encoded stream: %v", err)
		}
		if ended {
			t.Fatalf("event %s after the end", ev.Name)
		}
		names = append(names, ev.Name)
		var e struct {
			Type  string `json:"type"`
			Index *int   `json:"index"`
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event %s: %v", ev.Name, err)
		}
		if e.Type != ev.Name {
			t.Fatalf("event %s has type %q", ev.Name, e.Type)
		}
		if ev.Name != "message_start" && ev.Name != "error" && !started {
			t.Fatalf("event %s before message_start", ev.Name)
		}
		switch ev.Name {
		case "message_start":
			if started {
				t.Fatal("two message_start events")
			}
			started = true
		case "content_block_start":
			if open >= 0 || e.Index == nil || *e.Index != next {
				t.Fatalf("content_block_start %v while block %d is open, next %d", e.Index, open, next)
			}
			open = next
		case "content_block_delta":
			if e.Index == nil || *e.Index != open {
				t.Fatalf("content_block_delta for %v while block %d is open", e.Index, open)
			}
		case "content_block_stop":
			if e.Index == nil || *e.Index != open {
				t.Fatalf("content_block_stop for %v while block %d is open", e.Index, open)
			}
			open, next = -1, next+1
		case "message_delta":
			// A block may stay open only when the stream was cut in it.
		case "message_stop", "error":
			ended = true
		default:
			t.Fatalf("unexpected event %s", ev.Name)
		}
	}
	if !ended {
		t.Fatalf("stream does not end with message_stop or error: %v", names)
	}
}

// TestEncodeStream checks the events written for chunks that do not come
// from an Anthropic stream: interleaved tool calls, usage after the stop,
// a foreign stop reason and error type, a tool call whose arguments come
// only with its end.
func TestEncodeStream(t *testing.T) {
	chunks := []chat.Chunk{
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 100, CacheRead: 80, CacheWrite: 5, Output: 0, Reasoning: 3}},
		{Type: chat.ChunkReasoning, Text: "hmm"},
		{Type: chat.ChunkReasoning, Signature: "s1"},
		{Type: chat.ChunkReasoning, Text: "more"},
		{Type: chat.ChunkText, Text: ""},
		{Type: chat.ChunkText, Text: "Hi"},
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 100, CacheRead: 80, CacheWrite: 5, Output: 7}},
		{Type: chat.ChunkText, Text: " there"},
		{Type: chat.ChunkToolCallStart, Index: 0, ID: "c1", Name: "f"},
		{Type: chat.ChunkToolCallStart, Index: 1, ID: "c2", Name: "g"},
		{Type: chat.ChunkToolCallDelta, Index: 1, Arguments: `{"b":`},
		{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"a":1}`},
		{Type: chat.ChunkToolCallDelta, Index: 1, Arguments: `2}`},
		{Type: chat.ChunkToolCallStart, Index: 2, ID: "c3", Name: "h"},
		{Type: chat.ChunkToolCallEnd, Index: 2, Arguments: `{"c":3}`},
		{Type: chat.ChunkToolCallEnd, Index: 0},
		{Type: chat.ChunkToolCallDelta, Index: 9, Arguments: `ignored`},
		{Type: chat.ChunkToolCallEnd, Index: 1, Arguments: `{"b":2}`},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse, Raw: "tool_calls"}},
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 100, CacheRead: 80, CacheWrite: 5, Output: 40}},
	}
	want := `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":15,"cache_creation_input_tokens":5,"cache_read_input_tokens":80,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s1"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"more"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":" there"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"c1","name":"f","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: content_block_start
data: {"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"c2","name":"g","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{\"b\":2}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":4}

event: content_block_start
data: {"type":"content_block_start","index":5,"content_block":{"type":"tool_use","id":"c3","name":"h","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"{\"c\":3}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":5}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":15,"cache_creation_input_tokens":5,"cache_read_input_tokens":80,"output_tokens":40}}

event: message_stop
data: {"type":"message_stop"}

`
	var out bytes.Buffer
	if err := anthropic.EncodeStream(&out, nil, "m", "msg_1", seq(chunks...)); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	checkShape(t, out.Bytes())

	// What an Anthropic client collects is what the chunks say.
	wantResp, err := chat.Collect(seq(chunks...))
	if err != nil {
		t.Fatal(err)
	}
	gotResp, err := chat.Collect(anthropic.DecodeStream(&out))
	if err != nil {
		t.Fatal(err)
	}
	wantResp.Usage.Reasoning = 0 // Anthropic's usage has no reasoning count
	wantResp.Stop.Raw = "tool_use"
	if !reflect.DeepEqual(gotResp, wantResp) {
		t.Errorf("collected\n got: %+v\nwant: %+v", gotResp, wantResp)
	}
}

func seq(cs ...chat.Chunk) func(func(chat.Chunk, error) bool) {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range cs {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func TestEncodeStreamErrors(t *testing.T) {
	cases := []struct {
		name   string
		chunks []chat.Chunk
		err    error // from the chunk sequence, after the chunks
		want   string
	}{{
		name: "foreign retryable error",
		chunks: []chat.Chunk{
			{Type: chat.ChunkText, Text: "a"},
			{Type: chat.ChunkError, Error: &chat.StreamError{Type: "throttlingException", Message: "slow down", Retryable: true}},
			{Type: chat.ChunkText, Text: "never sent"},
		},
		want: `message_start content_block_start content_block_delta error {"type":"error","error":{"type":"api_error","message":"throttlingException: slow down"}}`,
	}, {
		name: "foreign permanent error",
		chunks: []chat.Chunk{
			{Type: chat.ChunkError, Error: &chat.StreamError{Type: "validationException", Message: "bad"}},
		},
		want: `error {"type":"error","error":{"type":"invalid_request_error","message":"validationException: bad"}}`,
	}, {
		name: "usage then error",
		chunks: []chat.Chunk{
			{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 10}},
			{Type: chat.ChunkError, Error: &chat.StreamError{Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
		},
		want: `message_start error {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	}, {
		name:   "decode error",
		chunks: []chat.Chunk{{Type: chat.ChunkText, Text: "a"}},
		err:    errors.New("boom"),
		want:   `message_start content_block_start content_block_delta error {"type":"error","error":{"type":"api_error","message":"boom"}}`,
	}, {
		name: "content filter and error stops",
		chunks: []chat.Chunk{
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopContentFilter, Raw: "content_filter"}},
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopError, Raw: "error"}},
		},
		want: `message_start message_delta error {"type":"error","error":{"type":"api_error","message":"the upstream stopped with an error: error"}}`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := func(yield func(chat.Chunk, error) bool) {
				for _, ch := range c.chunks {
					if !yield(ch, nil) {
						return
					}
				}
				if c.err != nil {
					yield(chat.Chunk{}, c.err)
				}
			}
			var out bytes.Buffer
			err := anthropic.EncodeStream(&out, nil, "m", "id", in)
			if err != c.err {
				t.Errorf("EncodeStream: %v, want %v", err, c.err)
			}
			checkShape(t, out.Bytes())
			var names []string
			var last []byte
			for ev, err := range sse.Read(&out, 0) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, ev.Name)
				last = ev.Data
			}
			if got := strings.Join(names, " ") + " " + string(last); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestStopReasons: the mapping both ways.
func TestStopReasons(t *testing.T) {
	cases := []struct {
		raw    string
		reason chat.StopReason
		back   string // what the encoder writes for the decoded stop
	}{
		{"end_turn", chat.StopEndTurn, "end_turn"},
		{"max_tokens", chat.StopMaxTokens, "max_tokens"},
		{"tool_use", chat.StopToolUse, "tool_use"},
		{"stop_sequence", chat.StopSequence, "stop_sequence"},
		{"refusal", chat.StopContentFilter, "refusal"},
		{"pause_turn", chat.StopEndTurn, "pause_turn"},
		{"model_context_window_exceeded", chat.StopMaxTokens, "model_context_window_exceeded"},
		{"something_new", chat.StopEndTurn, "end_turn"},
	}
	for _, c := range cases {
		stream := fmt.Sprintf("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":%q},\"usage\":{\"output_tokens\":1}}\n\n", c.raw)
		got, err := decodeBytes([]byte(stream))
		if err != nil || len(got) != 2 || got[1].Stop == nil {
			t.Fatalf("%s: %v %v", c.raw, got, err)
		}
		if *got[1].Stop != (chat.Stop{Reason: c.reason, Raw: c.raw}) {
			t.Errorf("%s: decoded %+v", c.raw, *got[1].Stop)
		}
		if back := stopOf(t, *got[1].Stop); back != c.back {
			t.Errorf("%s: encoded as %s, want %s", c.raw, back, c.back)
		}
	}
	// Stops from other providers follow the canonical reason.
	for st, want := range map[chat.Stop]string{
		{Reason: chat.StopEndTurn, Raw: "stop"}:                 "end_turn",
		{Reason: chat.StopMaxTokens, Raw: "length"}:             "max_tokens",
		{Reason: chat.StopToolUse, Raw: "tool_calls"}:           "tool_use",
		{Reason: chat.StopSequence}:                             "stop_sequence",
		{Reason: chat.StopContentFilter, Raw: "content_filter"}: "refusal",
		{Reason: chat.StopContentFilter, Raw: "end_turn"}:       "refusal",
		{Reason: chat.StopError, Raw: "error"}:                  "end_turn",
		{Reason: "weird"}:                                       "end_turn",
	} {
		if got := stopOf(t, st); got != want {
			t.Errorf("%+v: encoded as %s, want %s", st, got, want)
		}
	}
}

// stopOf is the stop_reason EncodeResponse writes for st.
func stopOf(t *testing.T, st chat.Stop) string {
	t.Helper()
	b, err := anthropic.EncodeResponse(chat.Response{Stop: st}, "m", "id")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.StopReason
}

func TestErrorRetryable(t *testing.T) {
	for typ, want := range map[string]bool{
		"overloaded_error":      true,
		"api_error":             true,
		"rate_limit_error":      true,
		"timeout_error":         true,
		"gateway_timeout":       true,
		"invalid_request_error": false,
		"authentication_error":  false,
		"permission_error":      false,
		"not_found_error":       false,
		"request_too_large":     false,
		"billing_error":         false,
		"":                      false,
	} {
		stream := fmt.Sprintf("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":%q,\"message\":\"m\"}}\n\n", typ)
		got, err := decodeBytes([]byte(stream))
		if err != nil || len(got) != 1 || got[0].Error == nil {
			t.Fatalf("%s: %v %v", typ, got, err)
		}
		if got[0].Error.Retryable != want || got[0].Error.Type != typ {
			t.Errorf("%s: %+v, want retryable %v", typ, *got[0].Error, want)
		}
	}
}

// TestDecodeEdges: events the fixtures do not show.
func TestDecodeEdges(t *testing.T) {
	cases := []struct {
		name, stream, want, err string
	}{{
		name: "tool input in content_block_start",
		stream: `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{ "a" : [1, 2] }}}

data: {"type":"content_block_stop","index":0}

`,
		want: `[{"type":"tool_call_start","index":0,"id":"t","name":"n"},{"type":"tool_call_delta","index":0,"arguments":"{\"a\":[1,2]}"},{"type":"tool_call_end","index":0,"arguments":"{\"a\":[1,2]}"}]`,
	}, {
		name: "text and signature in block starts",
		stream: `data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"t","signature":"s"}}

data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":"x"}}

`,
		want: `[{"type":"reasoning","text":"t","index":0},{"type":"reasoning","signature":"s","index":0},{"type":"text","text":"x","index":0}]`,
	}, {
		name: "deltas for blocks that never started or do not match",
		stream: `data: {"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"x"}}

data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}

data: {"type":"content_block_stop","index":7}

data: {"type":"message_delta","delta":{"stop_reason":null}}

`,
		want: `[]`,
	}, {
		name:   "unnamed malformed event",
		stream: "data: {nope\n\n",
		want:   `[]`,
		err:    "unnamed event",
	}, {
		name:   "known event with empty data",
		stream: "event: message_start\ndata:\n\n",
		want:   `[]`,
		err:    "message_start event",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeBytes([]byte(c.stream))
			if g := chunkJSON(got); g != c.want {
				t.Errorf("got  %s\nwant %s", g, c.want)
			}
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}

// endless is an event that never ends.
type endless struct{ started bool }

func (e *endless) Read(p []byte) (int, error) {
	if !e.started {
		e.started = true
		return copy(p, "event: content_block_delta\ndata: "), nil
	}
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestEventTooLarge: an event that never ends is an error after MaxEvent
// bytes, not an ever-growing buffer.
func TestEventTooLarge(t *testing.T) {
	_, err := wiretest.DecodeAll(anthropic.DecodeStream, &endless{})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("error %v", err)
	}
}

// TestArgumentsTooLarge: a tool call's arguments are bounded too.
func TestArgumentsTooLarge(t *testing.T) {
	frag, _ := json.Marshal(strings.Repeat("a", 1<<20))
	pr, pw := io.Pipe()
	go func() {
		fmt.Fprint(pw, "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n\n")
		for i := 0; i <= anthropic.MaxArguments>>20; i++ {
			if _, err := fmt.Fprintf(pw, "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%s}}\n\n", frag); err != nil {
				return
			}
		}
		pw.Close()
	}()
	n := 0
	var last error
	for _, err := range anthropic.DecodeStream(pr) {
		n++
		last = err
	}
	if last == nil || !strings.Contains(last.Error(), "arguments larger than") {
		t.Fatalf("after %d items: %v", n, last)
	}
}

// TestEncodeResponse: a collected fixture as a non-streaming response.
func TestEncodeResponse(t *testing.T) {
	files, err := filepath.Glob("testdata/response/*.json")
	if err != nil || len(files) < 3 {
		t.Fatalf("response fixtures: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(streamDir, name+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := chat.Collect(anthropic.DecodeStream(bytes.NewReader(in)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := anthropic.EncodeResponse(r, "claude-test", "msg_"+name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if d := wiretest.Diff(want, got); d != "" {
				t.Errorf("%s\n got: %s", d, got)
			}
			if !json.Valid(got) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func TestEncodeResponseErrors(t *testing.T) {
	se := &chat.StreamError{Type: "overloaded_error", Message: "Overloaded", Retryable: true}
	if _, err := anthropic.EncodeResponse(chat.Response{Error: se}, "m", "id"); err != se {
		t.Errorf("a response with an error: %v", err)
	}
	if got := string(anthropic.EncodeError(se)); got != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` {
		t.Errorf("EncodeError: %s", got)
	}
	for _, bl := range []chat.Block{
		{Type: chat.TypeImage},
		{Type: chat.TypeToolUse, ID: "t", Input: json.RawMessage(`{"a":`)},
	} {
		if _, err := anthropic.EncodeResponse(chat.Response{Content: []chat.Block{bl}}, "m", "id"); err == nil {
			t.Errorf("%s block: no error", bl.Type)
		}
	}
	got, err := anthropic.EncodeResponse(chat.Response{
		Content: []chat.Block{{Type: chat.TypeText, Text: "x", Citations: json.RawMessage(` [ {"type":"char_location"} ] `)}},
		Usage:   chat.Usage{Input: 3, CacheRead: 5},
	}, "m", "id")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"id","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"x","citations":[{"type":"char_location"}]}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":0}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// FuzzDecodeStream: decoding never panics, yields at most one item per
// input byte or so, and what it yields encodes to a stream that decodes
// without error to chunks that encode and decode to themselves.
func FuzzDecodeStream(f *testing.F) {
	for _, file := range fixtures(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var chunks []chat.Chunk
		for c, err := range anthropic.DecodeStream(bytes.NewReader(data)) {
			if err != nil {
				break
			}
			chunks = append(chunks, c)
		}
		if len(chunks) > len(data) {
			t.Fatalf("%d chunks from %d bytes", len(chunks), len(data))
		}
		once := encodeDecode(t, chunks)
		twice := encodeDecode(t, once)
		if a, b := chunkJSON(once), chunkJSON(twice); a != b {
			t.Fatalf("not stable after one round trip\nonce:  %s\ntwice: %s", a, b)
		}
	})
}

func encodeDecode(t *testing.T, chunks []chat.Chunk) []chat.Chunk {
	t.Helper()
	var out bytes.Buffer
	if err := anthropic.EncodeStream(&out, nil, "m", "id", seq(chunks...)); err != nil {
		t.Fatalf("EncodeStream: %v", err)
	}
	got, err := decodeBytes(out.Bytes())
	if err != nil {
		t.Fatalf("decoding the encoded stream: %v\n%s", err, out.Bytes())
	}
	return got
}

const benchFixture = "testdata/stream/long.sse"

func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile(benchFixture)
	if err != nil {
		b.Fatal(err)
	}
	var payloads [][]byte
	for ev, err := range sse.Read(bytes.NewReader(data), 0) {
		if err != nil {
			b.Fatal(err)
		}
		payloads = append(payloads, ev.Data)
	}
	wiretest.BenchDecode(b, benchFixture, anthropic.DecodeStream, payloads)
}

func BenchmarkEncodeStream(b *testing.B) {
	data, err := os.ReadFile(benchFixture)
	if err != nil {
		b.Fatal(err)
	}
	chunks, err := decodeBytes(data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := anthropic.EncodeStream(io.Discard, nil, "m", "id", seq(chunks...)); err != nil {
			b.Fatal(err)
		}
	}
}

type failWriter struct{ left int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errors.New("connection reset")
	}
	w.left -= len(p)
	return len(p), nil
}

// TestEncodeStreamWriteError: a failed write ends EncodeStream with that
// error, stops reading the chunks (closing the upstream body), and the
// writer writes nothing more.
func TestEncodeStreamWriteError(t *testing.T) {
	in, err := os.ReadFile(benchFixture)
	if err != nil {
		t.Fatal(err)
	}
	body := &closeRecorder{Reader: bytes.NewReader(in)}
	flushes := 0
	err = anthropic.EncodeStream(&failWriter{left: 2000}, func() { flushes++ }, "m", "id", anthropic.DecodeStream(body))
	if err == nil || err.Error() != "connection reset" {
		t.Fatalf("error %v", err)
	}
	if !body.closed {
		t.Error("the upstream body was not closed")
	}
	if flushes == 0 {
		t.Error("no flush before the failure")
	}

	w := anthropic.NewStreamWriter(&failWriter{}, nil, "m", "id")
	if err := w.Write(chat.Chunk{Type: chat.ChunkText, Text: "x"}); err == nil {
		t.Fatal("no error")
	}
	if err := w.Close(); err == nil || err.Error() != "connection reset" {
		t.Errorf("Close after a failed write: %v", err)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestStreamWriterFlushes: flush follows every chunk that wrote something,
// and only those.
func TestStreamWriterFlushes(t *testing.T) {
	var out bytes.Buffer
	flushes := 0
	w := anthropic.NewStreamWriter(&out, func() { flushes++ }, "m", "id")
	steps := []struct {
		c     chat.Chunk
		flush bool
	}{
		{chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 1}}, false}, // held for message_start
		{chat.Chunk{Type: chat.ChunkText, Text: ""}, false},
		{chat.Chunk{Type: chat.ChunkText, Text: "a"}, true},
		{chat.Chunk{Type: chat.ChunkText, Text: "b"}, true},
		{chat.Chunk{Type: chat.ChunkToolCallDelta, Index: 3, Arguments: "x"}, false},
		{chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 1, Output: 2}}, false},
		{chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}}, true}, // closes the text block
	}
	for i, s := range steps {
		before := flushes
		if err := w.Write(s.c); err != nil {
			t.Fatal(err)
		}
		if got := flushes > before; got != s.flush {
			t.Errorf("step %d (%s): flushed %v, want %v", i, s.c.Type, got, s.flush)
		}
	}
	before := flushes
	if err := w.Close(); err != nil || flushes != before+1 {
		t.Errorf("Close: %v, %d flushes", err, flushes-before)
	}
	if err := w.Write(chat.Chunk{Type: chat.ChunkText, Text: "late"}); err != nil || strings.Contains(out.String(), "late") {
		t.Errorf("Write after Close: %v", err)
	}
	checkShape(t, out.Bytes())
}
