package gemini_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/gemini"
)

func seq(chunks []chat.Chunk, end error) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		if end != nil {
			yield(chat.Chunk{}, end)
		}
	}
}

func outgoing(sse bool) wire.Outgoing {
	q := url.Values{}
	if sse {
		q.Set("alt", "sse")
	}
	return wire.Outgoing{Incoming: wire.Incoming{Model: "gemini-3-pro-preview", Stream: true, Query: q},
		Model: "gemini-3-pro-preview", ID: "r1"}
}

func writeStream(t testing.TB, sse bool, chunks []chat.Chunk, end error) (string, error) {
	var b bytes.Buffer
	err := gemini.Dialect().Stream(&b, outgoing(sse), seq(chunks, end))
	return b.String(), err
}

var callChunks = []chat.Chunk{
	{Type: chat.ChunkReasoning, Text: "Plan."},
	{Type: chat.ChunkReasoning, Signature: "c2ln"},
	{Type: chat.ChunkToolCallStart, Index: 0, ID: "call_0", Name: "run"},
	{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"cmd":`},
	{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `"ls"}`},
	{Type: chat.ChunkToolCallEnd, Index: 0},
	{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 10, Output: 7, Reasoning: 4, CacheRead: 2}},
	{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"}},
}

// TestStreamFramingSSE pins the alt=sse framing byte for byte: data:
// events ended by a blank line (CRLF CRLF), the signature on the call, the
// usage on the events after it, STOP for a turn of calls.
func TestStreamFramingSSE(t *testing.T) {
	got, err := writeStream(t, true, callChunks, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Plan.","thought":true}]},"index":0}],"modelVersion":"gemini-3-pro-preview","responseId":"r1"}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"role":"model","parts":[{"thoughtSignature":"c2ln","functionCall":{"id":"call_0","name":"run","args":{"cmd":"ls"}}}]},"index":0}],"modelVersion":"gemini-3-pro-preview","responseId":"r1"}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"totalTokenCount":17,"cachedContentTokenCount":2,"thoughtsTokenCount":4},"modelVersion":"gemini-3-pro-preview","responseId":"r1"}` + "\r\n\r\n"
	if got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
}

// TestStreamFramingArray pins the JSON-array framing: "[", elements
// separated by ",\r\n", "]", and the whole body one JSON array.
func TestStreamFramingArray(t *testing.T) {
	got, err := writeStream(t, false, []chat.Chunk{
		{Type: chat.ChunkText, Text: "Hi"},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0}],"modelVersion":"gemini-3-pro-preview","responseId":"r1"}` + ",\r\n" +
		`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"modelVersion":"gemini-3-pro-preview","responseId":"r1"}]`
	if got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(got), &arr); err != nil || len(arr) != 2 {
		t.Fatalf("not a JSON array of two: %v", err)
	}
}

// flushRecorder records the writes and flushes a stream makes.
type flushRecorder struct {
	bytes.Buffer
	log []string
}

func (f *flushRecorder) Write(p []byte) (int, error) {
	f.log = append(f.log, "write:"+string(p))
	return f.Buffer.Write(p)
}

func (f *flushRecorder) Flush() { f.log = append(f.log, "flush") }

// TestStreamErrorSSE: an error inside an alt=sse stream is Google's error
// object, bare, in a write of its own between flushes, ended by a blank
// line, and the last thing written.
func TestStreamErrorSSE(t *testing.T) {
	var w flushRecorder
	err := gemini.Dialect().Stream(&w, outgoing(true), seq([]chat.Chunk{
		{Type: chat.ChunkText, Text: "Working"},
		{Type: chat.ChunkError, Error: &chat.StreamError{Type: "overloaded_error", Message: "busy", Retryable: true}},
		{Type: chat.ChunkText, Text: "never"},
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	n := len(w.log)
	wantErr := "write:" + `{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}` + "\r\n\r\n"
	if n < 3 || w.log[n-3] != "flush" || w.log[n-2] != wantErr || w.log[n-1] != "flush" {
		t.Fatalf("writes: %q", w.log)
	}
	if strings.Contains(w.String(), "never") {
		t.Fatal("wrote after the error")
	}
	resps, apiErr, rest := readLikeSDK(w.Bytes())
	if len(resps) != 1 || apiErr == nil || apiErr.Code != 503 || apiErr.Status != "UNAVAILABLE" || rest != "" {
		t.Fatalf("an SDK reader saw %d responses, error %+v, rest %q", len(resps), apiErr, rest)
	}
}

// TestStreamErrorArray: in the JSON array the error object is the last
// element, and the array is closed; a read failure is INTERNAL and is
// returned.
func TestStreamErrorArray(t *testing.T) {
	readErr := errors.New("upstream: connection reset")
	got, err := writeStream(t, false, []chat.Chunk{{Type: chat.ChunkText, Text: "a"}}, readErr)
	if !errors.Is(err, readErr) {
		t.Fatalf("returned %v", err)
	}
	var arr []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(got), &arr); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, got)
	}
	if len(arr) != 2 || string(arr[1]["error"]) != `{"code":500,"message":"upstream: connection reset","status":"INTERNAL"}` {
		t.Fatalf("got %s", got)
	}
	// The upstream decoder of this package reads it back as an error.
	chunks, derr := decodeAll(got)
	if derr != nil || chunks[len(chunks)-1].Type != chat.ChunkError || chunks[len(chunks)-1].Error.Type != "INTERNAL" {
		t.Fatalf("decoded %+v, %v", chunks, derr)
	}
}

func decodeAll(body string) ([]chat.Chunk, error) {
	var out []chat.Chunk
	for c, err := range gemini.DecodeStream(strings.NewReader(body)) {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

type sdkError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// readLikeSDK reads an alt=sse body as Google's SDKs are documented to:
// the body is cut into segments at a blank line (LF LF or CRLF CRLF); a
// segment that is a data: field is one response; any other segment must
// be an error object {"error":{...}}, which ends the stream. rest is
// what followed the last blank line (the JS SDK refuses a body that does
// not end with one).
func readLikeSDK(body []byte) (resps []map[string]any, apiErr *sdkError, rest string) {
	for len(body) > 0 {
		i, n := bytes.Index(body, []byte("\r\n\r\n")), 4
		if j := bytes.Index(body, []byte("\n\n")); j >= 0 && (i < 0 || j < i) {
			i, n = j, 2
		}
		if i < 0 {
			return resps, apiErr, string(body)
		}
		seg := bytes.TrimSpace(body[:i])
		body = body[i+n:]
		if data, ok := bytes.CutPrefix(seg, []byte("data:")); ok {
			var r map[string]any
			if json.Unmarshal(data, &r) != nil {
				return resps, &sdkError{Message: "bad data: " + string(data)}, ""
			}
			resps = append(resps, r)
			continue
		}
		var e struct {
			Error *sdkError `json:"error"`
		}
		if json.Unmarshal(seg, &e) != nil || e.Error == nil {
			return resps, &sdkError{Message: "bad segment: " + string(seg)}, ""
		}
		return resps, e.Error, string(body)
	}
	return resps, nil, ""
}

// TestStreamReadLikeSDK: every event of a stream parses as an SDK reads
// it, the body ends with a blank line, and the text comes out whole.
func TestStreamReadLikeSDK(t *testing.T) {
	got, err := writeStream(t, true, []chat.Chunk{
		{Type: chat.ChunkText, Text: "line one\n\nline two\r\n\r\n"},
		{Type: chat.ChunkText, Text: " end"},
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 3, Output: 2}},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopMaxTokens}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resps, apiErr, rest := readLikeSDK([]byte(got))
	if apiErr != nil || rest != "" || len(resps) != 3 {
		t.Fatalf("responses %d, error %+v, rest %q", len(resps), apiErr, rest)
	}
	var text strings.Builder
	for _, r := range resps {
		c := r["candidates"].([]any)[0].(map[string]any)
		for _, p := range c["content"].(map[string]any)["parts"].([]any) {
			text.WriteString(p.(map[string]any)["text"].(string))
		}
	}
	if text.String() != "line one\n\nline two\r\n\r\n end" {
		t.Fatalf("text %q", text.String())
	}
	last := resps[2]["candidates"].([]any)[0].(map[string]any)
	if last["finishReason"] != "MAX_TOKENS" {
		t.Fatalf("finish %v", last["finishReason"])
	}
}

type chunkFixture struct {
	Chunks []chat.Chunk `json:"chunks"`
	Error  string       `json:"error"`
}

// TestStreamRoundTrip: the decoder's fixtures (what real Gemini streams
// give), written by the dialect in either framing and decoded again by
// DecodeStream, put together the same response: content, signatures,
// usage, stop and error. With alt=sse an error object is bare, as
// Google writes it, and DecodeStream reads it after the events.
func TestStreamRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/stream/*.chunks.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("fixtures: %v, %d", err, len(files))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var fx chunkFixture
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatal(err)
		}
		if fx.Error != "" {
			continue // a stream the decoder refused: nothing to write
		}
		want, _ := chat.Collect(seq(fx.Chunks, nil))
		for _, sse := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sse=%v", filepath.Base(file), sse), func(t *testing.T) {
				body, err := writeStream(t, sse, fx.Chunks, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := want
				got, derr := chat.Collect(gemini.DecodeStream(strings.NewReader(body)))
				if want.Error != nil {
					// Usage after the last part is written with the next
					// response, and an error leaves none.
					want.Usage, got.Usage = chat.Usage{}, chat.Usage{}
				}
				if derr != nil {
					t.Fatalf("decode: %v\n%s", derr, body)
				}
				// Ids of calls survive; a stop's raw reason becomes Gemini's.
				want.Stop.Raw, got.Stop.Raw = "", ""
				if !reflect.DeepEqual(norm(want), norm(got)) {
					t.Fatalf("got  %s\nwant %s\nbody %s", show(got), show(want), body)
				}
			})
		}
	}
}

func norm(r chat.Response) chat.Response {
	for i := range r.Content {
		if r.Content[i].Input != nil {
			var b bytes.Buffer
			_ = json.Compact(&b, r.Content[i].Input)
			r.Content[i].Input = b.Bytes()
		}
	}
	if r.Error != nil {
		e := *r.Error
		e.Retryable = false // the code carries it; the type may be renamed
		r.Error = &e
	}
	return r
}

func show(r chat.Response) string {
	b, _ := json.Marshal(struct {
		Content []chat.Block
		Usage   chat.Usage
		Stop    chat.Stop
		Error   *chat.StreamError
	}{r.Content, r.Usage, r.Stop, r.Error})
	return string(b)
}

// TestResponseBody pins a collected response: thoughts, a signature moved
// onto the call it belongs with, a second call, usage, STOP for a turn of
// calls.
func TestResponseBody(t *testing.T) {
	res := chat.Response{
		Content: []chat.Block{
			{Type: chat.TypeThinking, Thinking: "Think.", Signature: "c2ln"},
			{Type: chat.TypeToolUse, ID: "c1", Name: "a", Input: json.RawMessage(`{"x": 1}`)},
			{Type: chat.TypeToolUse, ID: "c2", Name: "b", Input: json.RawMessage(`{}`)},
			{Type: chat.TypeRedactedThinking, Data: "opaque"},
		},
		Usage: chat.Usage{Input: 5, Output: 9, Reasoning: 3},
		Stop:  chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"},
	}
	got, err := gemini.Dialect().Response(res, wire.Outgoing{Model: "gemini-3-flash", ID: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Think.","thought":true},{"thoughtSignature":"c2ln","functionCall":{"id":"c1","name":"a","args":{"x":1}}},{"functionCall":{"id":"c2","name":"b","args":{}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":6,"totalTokenCount":14,"thoughtsTokenCount":3},"modelVersion":"gemini-3-flash","responseId":"abc"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Read back as the request history a client sends next, the
	// signature is where Gemini 3 wants it.
	var back struct {
		Candidates []struct {
			Content json.RawMessage `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"go"}]},` + string(back.Candidates[0].Content) + `]}`
	req, err := gemini.Dialect().Decode([]byte(body), wire.Incoming{Model: "gemini-3-flash"})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := gemini.EncodeRequest(req, gemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sig := out.Contents[1].Parts[1].ThoughtSignature; sig != "c2ln" {
		t.Fatalf("signature %q on the call", sig)
	}
}

func TestResponseFinishReasons(t *testing.T) {
	for _, c := range []struct {
		stop chat.Stop
		want string
	}{
		{chat.Stop{Reason: chat.StopEndTurn, Raw: "end_turn"}, "STOP"},
		{chat.Stop{Reason: chat.StopSequence}, "STOP"},
		{chat.Stop{Reason: chat.StopMaxTokens, Raw: "length"}, "MAX_TOKENS"},
		{chat.Stop{Reason: chat.StopContentFilter, Raw: "refusal"}, "SAFETY"},
		{chat.Stop{Reason: chat.StopContentFilter, Raw: "RECITATION"}, "RECITATION"},
		{chat.Stop{Reason: chat.StopError, Raw: "MALFORMED_FUNCTION_CALL"}, "MALFORMED_FUNCTION_CALL"},
		{chat.Stop{Reason: chat.StopError}, "OTHER"},
	} {
		got, err := gemini.Dialect().Response(chat.Response{Stop: c.stop}, wire.Outgoing{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), `"finishReason":"`+c.want+`"`) || !strings.Contains(string(got), `"parts":[{"text":""}]`) {
			t.Errorf("%+v: %s", c.stop, got)
		}
	}
}

// TestStreamUsageAfterStop: an upstream that reports usage after its
// finish reason (OpenAI does) still gets the usage into the last
// response, and nothing after the stop is written.
func TestStreamUsageAfterStop(t *testing.T) {
	for _, sse := range []bool{true, false} {
		got, err := writeStream(t, sse, []chat.Chunk{
			{Type: chat.ChunkText, Text: "Hi"},
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn, Raw: "stop"}},
			{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 8, Output: 2}},
			{Type: chat.ChunkText, Text: "late"},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got, "late") {
			t.Fatalf("sse=%v: wrote after the stop: %s", sse, got)
		}
		res, err := chat.Collect(gemini.DecodeStream(strings.NewReader(got)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Usage.Input != 8 || res.Usage.Output != 2 || res.Stop.Raw != "STOP" {
			t.Fatalf("sse=%v: usage %+v stop %+v\n%s", sse, res.Usage, res.Stop, got)
		}
	}
}
