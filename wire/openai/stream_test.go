package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

const streamDir = "testdata/stream"

func TestStreamFixtures(t *testing.T) {
	wiretest.RunStreamFixtures(t, streamDir, ".sse", 12, openai.DecodeStream)
}

func fixtures(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(streamDir, "*.sse"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return files
}

func seq(cs []chat.Chunk) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range cs {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func chunksJSON(cs []chat.Chunk) []byte {
	b, _ := json.Marshal(cs)
	return b
}

// TestRoundTrip: for every fixture, DecodeStream(EncodeStream(DecodeStream
// (fixture))) gives the same chunks.
func TestRoundTrip(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".sse"), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _ := wiretest.DecodeAll(openai.DecodeStream, bytes.NewReader(in))
			var out bytes.Buffer
			flushes := 0
			if err := openai.EncodeStream(&out, func() { flushes++ }, "m", "chatcmpl-rt", 1754000000, seq(first)); err != nil {
				t.Fatal(err)
			}
			if flushes == 0 {
				t.Error("flush never called")
			}
			if !strings.HasSuffix(out.String(), "data: [DONE]\n\n") {
				t.Errorf("no [DONE] at the end:\n%s", out.String())
			}
			second, err := wiretest.DecodeAll(openai.DecodeStream, bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatalf("decoding the encoded stream: %v\n%s", err, out.String())
			}
			// The signatures and redacted reasoning come in the last
			// delta: in order, but after the rest.
			first, second = wiretest.SignedLast(first), wiretest.SignedLast(second)
			if d := wiretest.Diff(chunksJSON(first), chunksJSON(second)); d != "" {
				t.Errorf("round trip differs: %s\nfirst:  %s\nsecond: %s\nwire:\n%s", d, chunksJSON(first), chunksJSON(second), out.String())
			}
		})
	}
}

// TestEncodeStreamShape checks the wire form: role in the first delta,
// every chunk object complete, usage once at the end with choices [].
func TestEncodeStreamShape(t *testing.T) {
	cost := 0.5
	cs := []chat.Chunk{
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 10}},
		{Type: chat.ChunkReasoning, Text: "hmm"},
		{Type: chat.ChunkReasoning, Signature: "sig"},
		{Type: chat.ChunkReasoning, Redacted: "opaque"},
		{Type: chat.ChunkText, Text: "Hi <b>"},
		{Type: chat.ChunkToolCallStart, Index: 0, ID: "c1", Name: "f"},
		{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: `{"a":1}`}, // no deltas: all the arguments
		{Type: chat.ChunkToolCallStart, Index: 1, ID: "c2", Name: "g"},
		{Type: chat.ChunkToolCallEnd, Index: 1}, // no arguments at all: "{}"
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 10, Output: 5, CacheRead: 4, CacheWrite: 2, Reasoning: 3, Cost: &cost}},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopSequence, Raw: "stop_sequence"}},
	}
	var out bytes.Buffer
	if err := openai.EncodeStream(&out, nil, "gpt-x", "chatcmpl-1", 42, seq(cs)); err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	for ev, err := range sse.Read(bytes.NewReader(out.Bytes()), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) == "[DONE]" {
			events = append(events, nil)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("%s: %v", ev.Data, err)
		}
		events = append(events, m)
	}
	want := []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hmm"},"finish_reason":null}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hi <b>"},"finish_reason":null}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]},"finish_reason":null}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":""}}]},"finish_reason":null}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":null}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.text","text":"hmm","signature":"sig","index":0},{"type":"reasoning.encrypted","data":"opaque","index":1}]},"finish_reason":"stop"}],"usage":null}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":42,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":2},"completion_tokens_details":{"reasoning_tokens":3},"cost":0.5,"cost_usd":0.5}}`,
	}
	if len(events) != len(want)+1 || events[len(events)-1] != nil {
		t.Fatalf("%d events, want %d and [DONE]:\n%s", len(events), len(want)+1, out.String())
	}
	for i, w := range want {
		got, _ := json.Marshal(events[i])
		if d := wiretest.Diff([]byte(w), got); d != "" {
			t.Errorf("event %d: %s\n got %s\nwant %s", i, d, got, w)
		}
	}
	if !strings.Contains(out.String(), `"content":"Hi <b>"`) {
		t.Errorf("HTML escaped in content:\n%s", out.String())
	}
}

func TestEncodeStreamErrors(t *testing.T) {
	// A provider error is a data line; the stream goes on to [DONE].
	var out bytes.Buffer
	cs := []chat.Chunk{
		{Type: chat.ChunkText, Text: "a"},
		{Type: chat.ChunkError, Error: &chat.StreamError{Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
	}
	if err := openai.EncodeStream(&out, nil, "m", "id", 1, seq(cs)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}}\n\n") ||
		!strings.HasSuffix(out.String(), "data: [DONE]\n\n") {
		t.Errorf("wire:\n%s", out.String())
	}
	got, err := wiretest.DecodeAll(openai.DecodeStream, bytes.NewReader(out.Bytes()))
	if err != nil || len(got) != 2 || got[1].Error == nil || !got[1].Error.Retryable {
		t.Errorf("decoded %+v %v", got, err)
	}

	// A decode error: an error line, no [DONE], the error returned.
	out.Reset()
	boom := errors.New("upstream: boom")
	failing := func(yield func(chat.Chunk, error) bool) {
		if yield(chat.Chunk{Type: chat.ChunkText, Text: "x"}, nil) {
			yield(chat.Chunk{}, boom)
		}
	}
	if err := openai.EncodeStream(&out, nil, "m", "id", 1, failing); err != boom {
		t.Fatalf("error %v, want boom", err)
	}
	if !strings.HasSuffix(out.String(), "data: {\"error\":{\"message\":\"upstream: boom\",\"type\":\"server_error\"}}\n\n") {
		t.Errorf("wire:\n%s", out.String())
	}

	// A write error stops the encoding and the upstream loop.
	pulled := 0
	many := func(yield func(chat.Chunk, error) bool) {
		for {
			pulled++
			if !yield(chat.Chunk{Type: chat.ChunkText, Text: "x"}, nil) {
				return
			}
		}
	}
	werr := errors.New("client gone")
	if err := openai.EncodeStream(failWriter{werr}, nil, "m", "id", 1, many); err != werr {
		t.Fatalf("error %v, want the write error", err)
	}
	if pulled != 1 {
		t.Errorf("%d chunks pulled after a write error", pulled)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func decodeString(t *testing.T, in string, o openai.DecodeOptions) ([]chat.Chunk, error) {
	t.Helper()
	return wiretest.DecodeAll(func(r io.Reader) iter.Seq2[chat.Chunk, error] {
		return openai.DecodeStreamWith(r, o)
	}, strings.NewReader(in))
}

func deltas(contents ...string) string {
	var b strings.Builder
	for _, c := range contents {
		j, _ := json.Marshal(c)
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"content":` + string(j) + "}}]}\n\n")
	}
	return b.String()
}

func TestThinkTags(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		want string // the chunks, as type:text lines
		keep bool
	}{
		{"whole tags", []string{"<think>a</think>b"}, "reasoning:a text:b", false},
		{"split everywhere", []string{"<", "t", "hink", ">a", "<", "/", "think", ">", "b"}, "reasoning:a text:b", false},
		{"not a tag", []string{"<th", "ing>"}, "text:<thing>", false},
		{"only later", []string{"Hi ", "<think>x</think>"}, "text:Hi  text:<think>x</think>", false},
		{"unclosed", []string{"<think>abc", "</thi"}, "reasoning:abc reasoning:</thi", false},
		{"leading whitespace", []string{" \n", "<think>", "r</think>", "t"}, "reasoning:r text:t", false},
		{"whitespace then text", []string{" \n", "Hello"}, "text: \nHello", false},
		{"a lone <", []string{"<"}, "text:<", false},
		{"kept", []string{"<think>a</think>b"}, "text:<think>a</think>b", true},
		{"closing split from the text", []string{"<think>a</thi", "nk>b"}, "reasoning:a text:b", false},
		{"false closing", []string{"<think>a</th", "x</think>"}, "reasoning:a reasoning:</thx", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeString(t, deltas(c.in...), openai.DecodeOptions{KeepThinkTags: c.keep})
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, ch := range got {
				parts = append(parts, string(ch.Type)+":"+ch.Text)
			}
			if s := strings.Join(parts, " "); s != c.want {
				t.Errorf("got  %q\nwant %q", s, c.want)
			}
		})
	}
}

// TestThinkTagsAfterReasoning: once reasoning came in a reasoning field,
// content is text even if it starts with a tag.
func TestThinkTagsAfterReasoning(t *testing.T) {
	in := `data: {"choices":[{"index":0,"delta":{"reasoning_content":"r"}}]}` + "\n\n" + deltas("<think>x</think>")
	got, err := decodeString(t, in, openai.DecodeOptions{})
	if err != nil || len(got) != 2 || got[1].Type != chat.ChunkText || got[1].Text != "<think>x</think>" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestHeldTextFlushedBeforeOtherChunks(t *testing.T) {
	in := deltas("<th") + `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n"
	got, err := decodeString(t, in, openai.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"<th","index":0},{"type":"tool_call_start","index":0,"id":"c","name":"f"},{"type":"tool_call_delta","index":0,"arguments":"{}"},{"type":"tool_call_end","index":0,"arguments":"{}"},{"type":"stop","index":0,"stop":{"reason":"tool_use","raw":"tool_calls"}}]`
	if d := wiretest.Diff([]byte(want), chunksJSON(got)); d != "" {
		t.Errorf("%s\n%s", d, chunksJSON(got))
	}
}

func TestLegacyFunctionCall(t *testing.T) {
	in := `data: {"choices":[{"index":0,"delta":{"role":"assistant","function_call":{"name":"lookup","arguments":""}}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"function_call":{"arguments":"{\"q\":1}"}}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"function_call"}]}` + "\n\n"
	got, err := decodeString(t, in, openai.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"tool_call_start","index":0,"id":"call_0","name":"lookup"},{"type":"tool_call_delta","index":0,"arguments":"{\"q\":1}"},{"type":"tool_call_end","index":0,"arguments":"{\"q\":1}"},{"type":"stop","index":0,"stop":{"reason":"tool_use","raw":"function_call"}}]`
	if d := wiretest.Diff([]byte(want), chunksJSON(got)); d != "" {
		t.Errorf("%s\n%s", d, chunksJSON(got))
	}
}

func TestMisc(t *testing.T) {
	// Refusals are text; choices other than 0 are ignored; an "error"
	// event's data is the error; arguments before a name wait for it.
	in := `data: {"choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"refusal":"I can't."}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"arguments":"{\"a\""}}]}}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"x","function":{"name":"late","arguments":":1}"}}]}}]}` + "\n\n" +
		"event: error\ndata: {\"message\":\"slow down\",\"type\":\"rate_limit_exceeded\"}\n\n"
	got, err := decodeString(t, in, openai.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"I can't.","index":0},
		{"type":"tool_call_start","index":0,"id":"x","name":"late"},
		{"type":"tool_call_delta","index":0,"arguments":"{\"a\":1}"},
		{"type":"error","index":0,"error":{"type":"rate_limit_exceeded","message":"slow down","retryable":true}},
		{"type":"tool_call_end","index":0,"arguments":"{\"a\":1}"}]`
	if d := wiretest.Diff([]byte(want), chunksJSON(got)); d != "" {
		t.Errorf("%s\n%s", d, chunksJSON(got))
	}
}

func TestStopReasons(t *testing.T) {
	for raw, want := range map[string]chat.StopReason{
		"stop": chat.StopEndTurn, "length": chat.StopMaxTokens, "tool_calls": chat.StopToolUse,
		"function_call": chat.StopToolUse, "content_filter": chat.StopContentFilter, "error": chat.StopError,
		"insufficient_system_resource": chat.StopError, "eos": chat.StopEndTurn,
	} {
		if got := openai.StopReason(raw); got != want {
			t.Errorf("%s: %s, want %s", raw, got, want)
		}
	}
	for r, want := range map[chat.StopReason]string{
		chat.StopEndTurn: "stop", chat.StopMaxTokens: "length", chat.StopToolUse: "tool_calls",
		chat.StopSequence: "stop", chat.StopContentFilter: "content_filter", chat.StopError: "error", "": "stop",
	} {
		if got := openai.FinishReason(r); got != want {
			t.Errorf("%s: %s, want %s", r, got, want)
		}
	}
}

func TestEventBound(t *testing.T) {
	in := deltas(strings.Repeat("x", 500))
	_, err := decodeString(t, in, openai.DecodeOptions{MaxEvent: 100})
	if err == nil || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Fatalf("want a size error, got %v", err)
	}
}

// TestCutMidEvent: a stream cut inside its last event ends cleanly; the
// same cut JSON followed by more is an error.
func TestCutMidEvent(t *testing.T) {
	in := deltas("a") + `data: {"choices":[{"index":0,"delta":{"content":"b`
	got, err := decodeString(t, in, openai.DecodeOptions{})
	if err != nil || len(got) != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	_, err = decodeString(t, in+"\n\n"+deltas("c"), openai.DecodeOptions{})
	if err == nil || !strings.Contains(err.Error(), "event 2") {
		t.Fatalf("want an error for event 2, got %v", err)
	}
}

func TestReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader(deltas("a")), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := wiretest.DecodeAll(openai.DecodeStream, r)
	if len(got) != 1 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%+v %v", got, err)
	}
}

// TestEncodeResponse: EncodeResponse of collected fixtures, against the
// expected documents in testdata/responses.json.
func TestEncodeResponse(t *testing.T) {
	data, err := os.ReadFile("testdata/responses.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) < 4 {
		t.Errorf("%d expected responses, want at least 4", len(want))
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(streamDir, name+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := chat.Collect(openai.DecodeStream(f))
			if err != nil {
				t.Fatal(err)
			}
			got, err := openai.EncodeResponse(r, "gpt-test", "chatcmpl-resp", 1754000000)
			if err != nil {
				t.Fatal(err)
			}
			if d := wiretest.Diff(want[name], got); d != "" {
				t.Errorf("%s\n got %s", d, got)
			}
		})
	}
	// A tool_use input that is not JSON is an error.
	_, err = openai.EncodeResponse(chat.Response{Content: []chat.Block{{Type: chat.TypeToolUse, ID: "c", Name: "f", Input: json.RawMessage("{oops")}}}, "m", "id", 1)
	if err == nil || !strings.Contains(err.Error(), "content[0].input") {
		t.Errorf("error %v", err)
	}
}

func FuzzDecodeStream(f *testing.F) {
	for _, file := range fixtures(f) {
		in, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(in)
	}
	f.Add([]byte(deltas("<thi", "nk>a</th", "ink>b")))
	f.Fuzz(func(t *testing.T, in []byte) {
		chunks, err := wiretest.DecodeAll(openai.DecodeStream, bytes.NewReader(in))
		checkInvariants(t, chunks, err == nil)
		var out bytes.Buffer
		if err := openai.EncodeStream(&out, nil, "m", "id", 1, seq(chunks)); err != nil {
			t.Fatal(err)
		}
		again, err := wiretest.DecodeAll(openai.DecodeStream, bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("the encoder wrote what the decoder cannot read: %v\n%s", err, out.String())
		}
		checkInvariants(t, again, true)
		if _, err := chat.Collect(seq(chunks)); err != nil {
			t.Fatal(err)
		}
	})
}

// checkInvariants: tool call chunks refer to started calls, indices are
// 0, 1, ... in order of start, the deltas of a call add up to its end's
// arguments, every started call ends (when the stream ended without a
// decode error: complete), and no chunk is empty.
func checkInvariants(t *testing.T, chunks []chat.Chunk, complete bool) {
	t.Helper()
	args := map[int]string{}
	ended := map[int]bool{}
	for i, c := range chunks {
		switch c.Type {
		case chat.ChunkToolCallStart:
			if _, ok := args[c.Index]; ok || c.Index != len(args) {
				t.Fatalf("chunk %d: start of call %d after %d calls", i, c.Index, len(args))
			}
			if c.ID == "" {
				t.Fatalf("chunk %d: a start without an id", i)
			}
			args[c.Index] = ""
		case chat.ChunkToolCallDelta:
			if _, ok := args[c.Index]; !ok || ended[c.Index] || c.Arguments == "" {
				t.Fatalf("chunk %d: delta for call %d (started %v, ended %v)", i, c.Index, ok, ended[c.Index])
			}
			args[c.Index] += c.Arguments
		case chat.ChunkToolCallEnd:
			if a, ok := args[c.Index]; !ok || ended[c.Index] || a != c.Arguments || a == "" {
				t.Fatalf("chunk %d: end of call %d with %q, deltas %q", i, c.Index, c.Arguments, a)
			}
			ended[c.Index] = true
		case chat.ChunkText:
			if c.Text == "" {
				t.Fatalf("chunk %d: empty text", i)
			}
		case chat.ChunkReasoning:
			if c.Text == "" && c.Signature == "" && c.Redacted == "" {
				t.Fatalf("chunk %d: empty reasoning", i)
			}
		}
	}
	for i := range args {
		if complete && !ended[i] {
			t.Fatalf("call %d never ended", i)
		}
	}
}

func payloads(b *testing.B, path string) [][]byte {
	in, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	for ev, err := range sse.Read(bytes.NewReader(in), 0) {
		if err != nil {
			b.Fatal(err)
		}
		if string(ev.Data) != "[DONE]" {
			out = append(out, ev.Data)
		}
	}
	return out
}

func BenchmarkDecode(b *testing.B) {
	path := filepath.Join(streamDir, "long_stream.sse")
	wiretest.BenchDecode(b, path, openai.DecodeStream, payloads(b, path))
}

func BenchmarkEncodeStream(b *testing.B) {
	in, err := os.ReadFile(filepath.Join(streamDir, "long_stream.sse"))
	if err != nil {
		b.Fatal(err)
	}
	chunks, err := wiretest.DecodeAll(openai.DecodeStream, bytes.NewReader(in))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := openai.EncodeStream(io.Discard, nil, "m", "id", 1, seq(chunks)); err != nil {
			b.Fatal(err)
		}
	}
}
