package bedrock_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/bedrock"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

const streamDir = "testdata/stream"

var update = flag.Bool("update", false, "rewrite the binary stream fixtures in "+streamDir+" (TestWriteFixtures)")

func TestStreamFixtures(t *testing.T) {
	wiretest.RunStreamFixtures(t, streamDir, ".eventstream", 17, bedrock.DecodeStream)
}

// frame is one event stream message of a fixture: an event (msg ""), an
// exception or an error, with its JSON payload written by hand.
type frame struct {
	msg     string // "" (event), "exception" or "error"
	typ     string // the event type, exception type or error code
	payload string
	errMsg  string // :error-message of an error frame
}

func ev(typ, payload string) frame  { return frame{typ: typ, payload: payload} }
func exc(typ, payload string) frame { return frame{msg: "exception", typ: typ, payload: payload} }

// encodeFrame writes f with the eventstream Encoder.
func encodeFrame(t testing.TB, w io.Writer, f frame) {
	if f.payload != "" && f.msg != "error" && !json.Valid([]byte(f.payload)) && f.typ != "futureEvent" {
		t.Fatalf("%s payload is not JSON: %s", f.typ, f.payload)
	}
	if err := eventstream.NewEncoder().Encode(w, eventstream.Message{Headers: headersOf(f), Payload: []byte(f.payload)}); err != nil {
		t.Fatal(err)
	}
}

// headersOf gives the headers Bedrock sends with f.
func headersOf(f frame) eventstream.Headers {
	var hs eventstream.Headers
	switch f.msg {
	case "":
		hs.Set(":event-type", eventstream.StringValue(f.typ))
		hs.Set(":content-type", eventstream.StringValue("application/json"))
		hs.Set(":message-type", eventstream.StringValue("event"))
	case "exception":
		hs.Set(":exception-type", eventstream.StringValue(f.typ))
		hs.Set(":content-type", eventstream.StringValue("application/json"))
		hs.Set(":message-type", eventstream.StringValue("exception"))
	case "error":
		hs.Set(":error-code", eventstream.StringValue(f.typ))
		hs.Set(":error-message", eventstream.StringValue(f.errMsg))
		hs.Set(":message-type", eventstream.StringValue("error"))
	}
	return hs
}

// streamFixture is a fixture's frames and, for the broken ones, how the
// encoded stream is damaged (offs holds each frame's offset, then the
// stream's length).
type streamFixture struct {
	frames []frame
	damage func(data []byte, offs []int) []byte
	// chunks, when set, are the expected chunks, written beside the
	// fixture (for the long fixture, whose chunks follow from its frames);
	// the other fixtures' .chunks.json files are written by hand.
	chunks []chat.Chunk
}

func encodeFixture(t testing.TB, fx streamFixture) []byte {
	var buf bytes.Buffer
	offs := []int{}
	for _, f := range fx.frames {
		offs = append(offs, buf.Len())
		encodeFrame(t, &buf, f)
	}
	offs = append(offs, buf.Len())
	data := buf.Bytes()
	if fx.damage != nil {
		data = fx.damage(data, offs)
	}
	return data
}

const (
	start = `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU","role":"assistant"}`
	pad   = `"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH"`
)

func textDelta(i int, s string) frame {
	b, _ := json.Marshal(s)
	return ev("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":%d,"delta":{"text":%s},%s}`, i, b, pad))
}

func toolDelta(i int, s string) frame {
	b, _ := json.Marshal(s)
	return ev("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":%d,"delta":{"toolUse":{"input":%s}},%s}`, i, b, pad))
}

func blockStop(i int) frame {
	return ev("contentBlockStop", fmt.Sprintf(`{"contentBlockIndex":%d,"p":"abcdefghijklmn"}`, i))
}

func messageStop(reason string) frame {
	return ev("messageStop", fmt.Sprintf(`{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ","stopReason":%q}`, reason))
}

func metadata(in, out, read, write int) frame {
	return ev("metadata", fmt.Sprintf(`{"metrics":{"latencyMs":1342},"p":"abcdefghijklmnopqrstu","usage":{"cacheReadInputTokens":%d,"cacheWriteInputTokens":%d,"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}`, read, write, in, out, in+out+read+write))
}

// textFrames is a short answer used by the damaged fixtures: frame 0 is
// messageStart, frames 1-3 text deltas.
var textFrames = []frame{
	ev("messageStart", start),
	textDelta(0, "The build fails"),
	textDelta(0, " because go.sum is"),
	textDelta(0, " out of date."),
	blockStop(0),
	messageStop("end_turn"),
	metadata(25, 11, 0, 0),
}

func streamFixtures() map[string]streamFixture {
	fx := map[string]streamFixture{
		"text_usage": {frames: []frame{
			ev("messageStart", start),
			textDelta(0, "Hello"),
			textDelta(0, ", world. The test fails because"),
			textDelta(0, " the fixture is stale.\n"),
			blockStop(0),
			messageStop("end_turn"),
			metadata(37, 19, 2048, 512),
		}},
		"tool_use_fragmented": {frames: []frame{
			ev("messageStart", start),
			textDelta(0, "I'll read the file."),
			blockStop(0),
			ev("contentBlockStart", `{"contentBlockIndex":1,"p":"abcdefghijklmnopqrstuvwxyzABC","start":{"toolUse":{"name":"read_file","toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"}}}`),
			toolDelta(1, `{"pa`),
			toolDelta(1, `th": "src/ma`),
			toolDelta(1, `in.go", "lin`),
			toolDelta(1, `es": [1, 40]}`),
			blockStop(1),
			messageStop("tool_use"),
			metadata(420, 61, 0, 0),
		}},
		"two_tool_uses": {frames: []frame{
			ev("messageStart", start),
			textDelta(0, "Checking both."),
			blockStop(0),
			ev("contentBlockStart", `{"contentBlockIndex":1,"p":"abcdefghij","start":{"toolUse":{"name":"run","toolUseId":"tooluse_A1"}}}`),
			toolDelta(1, `{"cmd":"go","args":`),
			toolDelta(1, `["test","./..."]}`),
			blockStop(1),
			ev("contentBlockStart", `{"contentBlockIndex":2,"p":"abcdefghij","start":{"toolUse":{"name":"get_time","toolUseId":"tooluse_B2"}}}`),
			toolDelta(2, ``),
			blockStop(2),
			messageStop("tool_use"),
			metadata(512, 88, 1024, 0),
		}},
		"reasoning_signature": {frames: []frame{
			ev("messageStart", start),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"The user wants"}},"p":"abcdefgh"}`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":" the sum of 2 and 3"}},"p":"abcdefgh"}`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":", which is 5."}},"p":"abcdefgh"}`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"ErcBCkgIBhABGAIiQJ3n2wIq2Q=="}},"p":"abcdefgh"}`),
			blockStop(0),
			textDelta(1, "2 + 3 = "),
			textDelta(1, "5."),
			blockStop(1),
			messageStop("end_turn"),
			metadata(58, 74, 0, 0),
		}},
		"reasoning_redacted": {frames: []frame{
			ev("messageStart", start),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"redactedContent":"RXJzdGVyIFRlaWwgdmVyc2NobMO8c3NlbHQ="}},"p":"abcdefgh"}`),
			blockStop(0),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"text":"Now plain reasoning."}},"p":"abcdefgh"}`),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"signature":"c2lnbmF0dXJl"}},"p":"abcdefgh"}`),
			blockStop(1),
			textDelta(2, "Done."),
			blockStop(2),
			messageStop("end_turn"),
			metadata(90, 40, 0, 0),
		}},
		"throttling_after_content": {frames: []frame{
			ev("messageStart", start),
			textDelta(0, "Let me look"),
			textDelta(0, " at that."),
			exc("throttlingException", `{"message":"Too many tokens, please wait before trying again."}`),
		}},
		"validation_exception": {frames: []frame{
			exc("validationException", `{"message":"The model returned the following errors: Input is too long for requested model."}`),
		}},
		"error_frame": {frames: []frame{
			ev("messageStart", start),
			textDelta(0, "Partial"),
			{msg: "error", typ: "InternalFailure", errMsg: "The request processing has failed because of an unknown error."},
		}},
		"max_tokens": {frames: []frame{
			ev("messageStart", start),
			textDelta(0, "Here is a long list:\n1. alpha\n"),
			textDelta(0, "2. beta\n3. gam"),
			blockStop(0),
			messageStop("max_tokens"),
			metadata(30, 16, 0, 0),
		}},
		"guardrail_unknown_events": {frames: []frame{
			ev("messageStart", start),
			ev("contentBlockStart", `{"contentBlockIndex":0,"start":{"text":""}}`),
			textDelta(0, "I can't"),
			ev("futureEvent", `not even JSON`),
			ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"citation":{"title":"doc","location":{}}}}`),
			blockStop(0),
			messageStop("guardrail_intervened"),
			ev("metadata", `{"metrics":{"latencyMs":200},"trace":{"guardrail":{}},"usage":{"inputTokens":12,"outputTokens":3,"totalTokens":15}}`),
		}},
		"tool_open_at_stop": {frames: []frame{
			ev("messageStart", start),
			ev("contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"name":"run","toolUseId":"tooluse_C3"}}}`),
			toolDelta(0, `{"cmd":"ls"}`),
			toolDelta(3, `{"orphan":true}`), // no toolUse start for block 3
			messageStop("tool_use"),
		}},
		"corrupt_checksum": {frames: textFrames, damage: func(data []byte, offs []int) []byte {
			data[offs[3]-10] ^= 0x01 // a byte of frame 2's payload
			return data
		}},
		"corrupt_prelude": {frames: textFrames, damage: func(data []byte, offs []int) []byte {
			data[offs[2]+2] ^= 0x10 // frame 2's total length
			return data
		}},
		"absurd_length": {frames: textFrames[:2], damage: func(data []byte, offs []int) []byte {
			var p [12]byte
			binary.BigEndian.PutUint32(p[0:], 0x7ffffff0)
			binary.BigEndian.PutUint32(p[4:], 0)
			binary.BigEndian.PutUint32(p[8:], crc32.ChecksumIEEE(p[:8]))
			return append(append(data, p[:]...), "not the rest"...)
		}},
		"truncated": {frames: textFrames, damage: func(data []byte, offs []int) []byte {
			return data[:offs[3]+40] // inside frame 3's headers
		}},
		"cut_between_frames": {frames: textFrames, damage: func(data []byte, offs []int) []byte {
			return data[:offs[3]] // after frame 2
		}},
	}
	fx["long"] = longFixture()
	return fx
}

// longFixture is a realistic long response: 60 reasoning deltas and a
// signature, 240 text deltas, a tool call in 40 fragments, the stop and
// usage. Its chunks follow from its frames.
func longFixture() streamFixture {
	var fs []frame
	var want []chat.Chunk
	fs = append(fs, ev("messageStart", start))
	for i := range 60 {
		s := fmt.Sprintf(" step %d: consider the failing assertion and the data it reads", i)
		b, _ := json.Marshal(s)
		fs = append(fs, ev("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":%s}},%s}`, b, pad)))
		want = append(want, chat.Chunk{Type: chat.ChunkReasoning, Text: s})
	}
	fs = append(fs, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"EqoBCkgIARABGAIiQL2t0mE6nN9kQ3bXc0u8yT5fR2mVvJ1wZ4sP7hK9dL0aBcDeFgHiJkLmNoPqRsTuVwXyZ"}},"p":"abcdef"}`),
		blockStop(0))
	want = append(want, chat.Chunk{Type: chat.ChunkReasoning, Signature: "EqoBCkgIARABGAIiQL2t0mE6nN9kQ3bXc0u8yT5fR2mVvJ1wZ4sP7hK9dL0aBcDeFgHiJkLmNoPqRsTuVwXyZ"})
	words := strings.Fields("The failing test reads the fixture through a helper that caches the parsed file, so after the format changed the cache still returned the old layout and the comparison failed on the third field. " +
		"I changed the helper to key the cache by the file's modification time and added a test that rewrites the fixture between two reads.")
	for i := range 240 {
		s := words[i%len(words)] + " "
		if i%17 == 16 {
			s += "\n\n"
		}
		fs = append(fs, textDelta(1, s))
		want = append(want, chat.Chunk{Type: chat.ChunkText, Text: s})
	}
	fs = append(fs, blockStop(1),
		ev("contentBlockStart", `{"contentBlockIndex":2,"p":"abcdefghij","start":{"toolUse":{"name":"write_file","toolUseId":"tooluse_Lg9xQ2mTS0aB1cD2eF3gH4"}}}`))
	want = append(want, chat.Chunk{Type: chat.ChunkToolCallStart, Index: 0, ID: "tooluse_Lg9xQ2mTS0aB1cD2eF3gH4", Name: "write_file"})
	args := `{"path":"internal/fixture/cache.go","content":"package fixture\n\n// cache maps a path and its modification time to the parsed file.\ntype cache struct {\n\tentries map[key]*File\n}\n\ntype key struct {\n\tpath string\n\tmtime int64\n}\n"}`
	for i := 0; i < len(args); {
		j := min(i+(len(args)+39)/40, len(args))
		fs = append(fs, toolDelta(2, args[i:j]))
		want = append(want, chat.Chunk{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: args[i:j]})
		i = j
	}
	fs = append(fs, blockStop(2), messageStop("tool_use"), metadata(1520, 2310, 40960, 1024))
	want = append(want,
		chat.Chunk{Type: chat.ChunkToolCallEnd, Index: 0, Arguments: args},
		chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse, Raw: "tool_use"}},
		chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 1520 + 40960 + 1024, Output: 2310, CacheRead: 40960, CacheWrite: 1024}})
	return streamFixture{frames: fs, chunks: want}
}

// TestWriteFixtures rewrites the binary fixtures (and the long fixture's
// chunks) with -update; without it, it checks that the files on disk are
// what the frames above encode to.
func TestWriteFixtures(t *testing.T) {
	for name, fx := range streamFixtures() {
		data := encodeFixture(t, fx)
		path := filepath.Join(streamDir, name+".eventstream")
		if *update {
			if err := os.MkdirAll(streamDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if fx.chunks != nil {
				j, err := json.MarshalIndent(wiretest.StreamResult{Chunks: fx.chunks}, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(streamDir, name+".chunks.json"), append(j, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestWriteFixtures -update)", err)
		}
		if !bytes.Equal(old, data) {
			t.Errorf("%s differs from its frames (run go test -run TestWriteFixtures -update)", path)
		}
	}
}

// TestLimits checks frames whose prelude is sound but whose lengths are
// not, and a frame just over MaxFrameSize.
func TestLimits(t *testing.T) {
	prelude := func(total, hlen uint32) []byte {
		p := make([]byte, 12, 64)
		binary.BigEndian.PutUint32(p[0:], total)
		binary.BigEndian.PutUint32(p[4:], hlen)
		binary.BigEndian.PutUint32(p[8:], crc32.ChecksumIEEE(p[:8]))
		return p
	}
	for _, tc := range []struct {
		name string
		in   []byte
		err  string
	}{
		{"zero length", prelude(0, 0), "out of bounds"},
		{"below minimum", prelude(15, 0), "out of bounds"},
		{"over maximum", prelude(bedrock.MaxFrameSize+1, 0), "out of bounds"},
		{"headers longer than frame", prelude(40, 30), "headers length"},
		{"headers over maximum", prelude(bedrock.MaxFrameSize, bedrock.MaxHeadersSize+1), "headers length"},
		{"maximum frame cut short", prelude(bedrock.MaxFrameSize, 0), "truncated"},
		{"partial prelude", []byte{0, 0, 0}, "truncated"},
		{"empty frame bad message crc", append(prelude(16, 0), 1, 2, 3, 4), "checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wiretest.DecodeAll(bedrock.DecodeStream, bytes.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
			if len(got) != 0 {
				t.Errorf("chunks %v, want none", got)
			}
		})
	}
	// An empty frame with sound checksums is no event and no error.
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{}); err != nil {
		t.Fatal(err)
	}
	if got, err := wiretest.DecodeAll(bedrock.DecodeStream, &buf); err != nil || len(got) != 0 {
		t.Errorf("empty frame: %v, %v", got, err)
	}
	// An empty body is an empty stream.
	if got, err := wiretest.DecodeAll(bedrock.DecodeStream, strings.NewReader("")); err != nil || len(got) != 0 {
		t.Errorf("empty body: %v, %v", got, err)
	}
}

func TestRetryable(t *testing.T) {
	for typ, want := range map[string]bool{
		"internalServerException":     true,
		"modelStreamErrorException":   true,
		"serviceUnavailableException": true,
		"throttlingException":         true,
		"ThrottlingException":         true,
		"validationException":         false,
		"accessDeniedException":       false,
		"modelTimeoutException":       false,
	} {
		var buf bytes.Buffer
		encodeFrame(t, &buf, exc(typ, `{"Message":"m"}`))
		got, err := wiretest.DecodeAll(bedrock.DecodeStream, &buf)
		if err != nil || len(got) != 1 || got[0].Error == nil {
			t.Fatalf("%s: %v, %v", typ, got, err)
		}
		if e := got[0].Error; e.Type != typ || e.Message != "m" || e.Retryable != want {
			t.Errorf("%s: %+v, want retryable %v", typ, e, want)
		}
	}
}

func TestStopReasons(t *testing.T) {
	for raw, want := range map[string]chat.StopReason{
		"end_turn":                      chat.StopEndTurn,
		"tool_use":                      chat.StopToolUse,
		"max_tokens":                    chat.StopMaxTokens,
		"stop_sequence":                 chat.StopSequence,
		"guardrail_intervened":          chat.StopContentFilter,
		"content_filtered":              chat.StopContentFilter,
		"model_context_window_exceeded": chat.StopMaxTokens,
		"malformed_model_output":        chat.StopError,
		"malformed_tool_use":            chat.StopError,
		"something_new":                 chat.StopEndTurn,
	} {
		var buf bytes.Buffer
		encodeFrame(t, &buf, messageStop(raw))
		got, err := wiretest.DecodeAll(bedrock.DecodeStream, &buf)
		if err != nil || len(got) != 1 || got[0].Stop == nil {
			t.Fatalf("%s: %v, %v", raw, got, err)
		}
		if s := *got[0].Stop; s.Reason != want || s.Raw != raw {
			t.Errorf("%s: %+v, want %s", raw, s, want)
		}
	}
}

// TestInvalidPayload: a known event whose payload is not JSON is a decode
// error after the chunks before it.
func TestInvalidPayload(t *testing.T) {
	var buf bytes.Buffer
	encodeFrame(t, &buf, textDelta(0, "ok"))
	encodeFrame(t, &buf, frame{typ: "futureEvent", payload: "x"})
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{
		Headers: eventstream.Headers{{Name: ":message-type", Value: eventstream.StringValue("event")}, {Name: ":event-type", Value: eventstream.StringValue("contentBlockDelta")}},
		Payload: []byte(`{"contentBlockIndex":`),
	}); err != nil {
		t.Fatal(err)
	}
	got, err := wiretest.DecodeAll(bedrock.DecodeStream, &buf)
	if err == nil || !strings.Contains(err.Error(), "contentBlockDelta") || len(got) != 1 {
		t.Errorf("got %v, %v", got, err)
	}
}

// TestCollect puts a fixture together as a non-streaming client would.
func TestCollect(t *testing.T) {
	f, err := os.Open(filepath.Join(streamDir, "reasoning_signature.eventstream"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := chat.Collect(bedrock.DecodeStream(f))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(r.Content)
	want := `[{"type":"thinking","thinking":"The user wants the sum of 2 and 3, which is 5.","signature":"ErcBCkgIBhABGAIiQJ3n2wIq2Q=="},{"type":"text","text":"2 + 3 = 5."}]`
	if d := wiretest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\n got %s", d, got)
	}
	if r.Stop.Reason != chat.StopEndTurn || r.Usage.Output != 74 {
		t.Errorf("stop %+v usage %+v", r.Stop, r.Usage)
	}
}

// oneByteReader hands out one byte a read, as a slow network might.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestSmallReads(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(streamDir, "long.eventstream"))
	if err != nil {
		t.Fatal(err)
	}
	whole, err1 := wiretest.DecodeAll(bedrock.DecodeStream, bytes.NewReader(in))
	bytewise, err2 := wiretest.DecodeAll(bedrock.DecodeStream, oneByteReader{bytes.NewReader(in)})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	a, _ := json.Marshal(whole)
	b, _ := json.Marshal(bytewise)
	if !bytes.Equal(a, b) {
		t.Error("reading a byte at a time decodes differently")
	}
}

// errReader fails after its data.
type errReader struct {
	r   io.Reader
	err error
}

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		err = e.err
	}
	return n, err
}

func TestReadError(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(streamDir, "text_usage.eventstream"))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("connection reset")
	for _, n := range []int{0, 100, 130} {
		_, err := wiretest.DecodeAll(bedrock.DecodeStream, errReader{bytes.NewReader(in[:n]), boom})
		if !errors.Is(err, boom) {
			t.Errorf("cut at %d: error %v, want %v", n, err, boom)
		}
	}
}

// FuzzDecodeStream decodes two streams: raw bytes (seeded with the
// fixtures) and frames with sound checksums built from events, one a line:
// "<event type> <payload>", or "!<exception type> <payload>". Neither may
// panic, and the chunks must keep the stream's promises.
// stallReader hands out its data, then reads nothing, without an error.
type stallReader struct{ r io.Reader }

func (s stallReader) Read(p []byte) (int, error) {
	n, _ := s.r.Read(p)
	return n, nil
}

func TestStalledReader(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(streamDir, "text_usage.eventstream"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 5, 40} { // in the prelude, in the frame
		_, err = wiretest.DecodeAll(bedrock.DecodeStream, stallReader{bytes.NewReader(in[:n])})
		if !errors.Is(err, io.ErrNoProgress) {
			t.Errorf("stalled at %d: error %v, want %v", n, err, io.ErrNoProgress)
		}
	}
}

func FuzzDecodeStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(streamDir, "*.eventstream"))
	events := []string{
		"contentBlockStart {\"contentBlockIndex\":1,\"start\":{\"toolUse\":{\"name\":\"run\",\"toolUseId\":\"t1\"}}}\n" +
			"contentBlockDelta {\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"{}\"}}}\n" +
			"contentBlockStop {\"contentBlockIndex\":1}\nmessageStop {\"stopReason\":\"tool_use\"}",
		"contentBlockDelta {\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"text\":\"a\",\"signature\":\"b\"}}}\n" +
			"metadata {\"usage\":{\"inputTokens\":1,\"outputTokens\":2}}\n!throttlingException {\"message\":\"x\"}",
	}
	for i, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, events[i%len(events)])
	}
	f.Fuzz(func(t *testing.T, raw []byte, events string) {
		checkStream(t, raw)
		var buf bytes.Buffer
		for line := range strings.Lines(events) {
			typ, payload, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			fr := frame{typ: typ, payload: payload}
			if e, ok := strings.CutPrefix(typ, "!"); ok {
				fr = frame{msg: "exception", typ: e, payload: payload}
			}
			if len(fr.typ) > 255 { // header values stay short
				continue
			}
			if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: headersOf(fr), Payload: []byte(payload)}); err != nil {
				t.Fatal(err)
			}
		}
		checkStream(t, buf.Bytes())
	})
}

// checkStream decodes data and checks what every stream promises: tool
// calls numbered 0, 1, ... as they start, deltas and ends only for started
// calls, ends with arguments, nothing after an error chunk.
func checkStream(t *testing.T, data []byte) {
	starts := map[int]bool{}
	ended := false
	for c, err := range bedrock.DecodeStream(bytes.NewReader(data)) {
		if ended {
			t.Fatalf("an item after the error chunk: %+v %v", c, err)
		}
		if err != nil {
			break
		}
		switch c.Type {
		case chat.ChunkToolCallStart:
			if starts[c.Index] || c.Index != len(starts) {
				t.Fatalf("tool call %d started out of order", c.Index)
			}
			starts[c.Index] = true
		case chat.ChunkToolCallDelta, chat.ChunkToolCallEnd:
			if !starts[c.Index] {
				t.Fatalf("%s for tool call %d, which did not start", c.Type, c.Index)
			}
			if c.Type == chat.ChunkToolCallEnd && c.Arguments == "" {
				t.Fatal("tool_call_end without arguments")
			}
		case chat.ChunkError:
			if c.Error == nil {
				t.Fatal("error chunk without an error")
			}
			ended = true
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	path := filepath.Join(streamDir, "long.eventstream")
	in, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var payloads [][]byte
	r := bytes.NewReader(in)
	dec := eventstream.NewDecoder()
	for r.Len() > 0 {
		m, err := dec.Decode(r, nil)
		if err != nil {
			b.Fatal(err)
		}
		payloads = append(payloads, m.Payload)
	}
	wiretest.BenchDecode(b, path, bedrock.DecodeStream, payloads)
}
