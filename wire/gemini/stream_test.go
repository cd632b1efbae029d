package gemini_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

const longFixture = "testdata/bench/long.sse"

func TestStreamFixturesSSE(t *testing.T) {
	wiretest.RunStreamFixtures(t, "testdata/stream", ".sse", 10, gemini.DecodeStream)
}

// The JSON array fixtures end in ".array.json": with ".json" alone the
// runner would take the ".chunks.json" files for fixtures too.
func TestStreamFixturesJSON(t *testing.T) {
	wiretest.RunStreamFixtures(t, "testdata/stream", ".array.json", 3, gemini.DecodeStream)
}

// fixtures lists the stream fixtures of both modes, and the long one when
// long is set.
func fixtures(t testing.TB, long bool) []string {
	pats := []string{"testdata/stream/*.sse", "testdata/stream/*.array.json"}
	if long {
		pats = append(pats, longFixture)
	}
	var files []string
	for _, pat := range pats {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

type result struct {
	chunks []chat.Chunk
	err    string
}

func decode(r io.Reader) result {
	chunks, err := wiretest.DecodeAll(gemini.DecodeStream, r)
	res := result{chunks: chunks}
	if err != nil {
		res.err = err.Error()
	}
	return res
}

// TestOneByteAtATime checks that how the body arrives changes nothing:
// every fixture read one byte at a time decodes as it does whole.
func TestOneByteAtATime(t *testing.T) {
	for _, f := range fixtures(t, true) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		whole := decode(bytes.NewReader(in))
		bytewise := decode(iotest.OneByteReader(bytes.NewReader(in)))
		if !reflect.DeepEqual(whole, bytewise) {
			t.Errorf("%s: one byte at a time gives %+v, want %+v", f, bytewise, whole)
		}
	}
}

// TestArrayIncremental checks that the JSON array is decoded as it
// arrives: the first element's chunks come before the rest is written.
func TestArrayIncremental(t *testing.T) {
	pr, pw := io.Pipe()
	next, stop := iter.Pull2(gemini.DecodeStream(pr))
	defer stop()
	go io.WriteString(pw, `[{"candidates":[{"content":{"parts":[{"text":"first"}]}}]}`)
	c, err, ok := next()
	if !ok || err != nil || c.Type != chat.ChunkText || c.Text != "first" {
		t.Fatalf("first chunk: %+v %v %v", c, err, ok)
	}
	go func() {
		io.WriteString(pw, ",\n"+`{"candidates":[{"content":{"parts":[{"text":" second"}]},"finishReason":"STOP"}]}]`)
		pw.Close()
	}()
	var got []string
	for {
		c, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(c.Type)+":"+c.Text)
	}
	if want := []string{"text: second", "stop:"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestStableIDs checks that generated call ids depend only on the call
// and its place: the same stream gives the same ids, the layout of the
// arguments does not matter, and functionCall.id is used when present.
func TestStableIDs(t *testing.T) {
	stream := func(args ...string) string {
		var b strings.Builder
		for _, a := range args {
			b.WriteString(`data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"read_file","args":` + a + `}}]}}]}` + "\n\n")
		}
		b.WriteString(`data: {"candidates":[{"finishReason":"STOP"}]}` + "\n\n")
		return b.String()
	}
	ids := func(in string) []string {
		t.Helper()
		res := decode(strings.NewReader(in))
		if res.err != "" {
			t.Fatal(res.err)
		}
		var out []string
		for _, c := range res.chunks {
			if c.Type == chat.ChunkToolCallStart {
				out = append(out, c.ID)
			}
		}
		return out
	}
	a := ids(stream(`{"path":"a.go"}`, `{"path":"b.go"}`, `{"path":"a.go"}`))
	if len(a) != 3 {
		t.Fatalf("ids %q", a)
	}
	if b := ids(stream(`{"path":"a.go"}`, `{"path":"b.go"}`, `{"path":"a.go"}`)); !reflect.DeepEqual(a, b) {
		t.Errorf("the same stream gave ids %q, then %q", a, b)
	}
	if b := ids(stream("{ \"path\" :\t\"a.go\" }", `{"path":"b.go"}`, `{"path": "a.go"}`)); !reflect.DeepEqual(a, b) {
		t.Errorf("reformatted arguments gave ids %q, want %q", b, a)
	}
	array := "[" + strings.Join([]string{
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"read_file","args":{` + "\n" + `"path": "a.go"}}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"read_file","args":{"path":"b.go"}}},{"functionCall":{"name":"read_file","args":{"path":"a.go"}}}]}}]}`,
	}, ",\n") + "]"
	if b := ids(array); !reflect.DeepEqual(a, b) {
		t.Errorf("the array mode gave ids %q, want %q", b, a)
	}
	seen := map[string]bool{}
	for i, id := range a {
		if !strings.HasPrefix(id, "call_"+string(rune('0'+i))+"_") || len(id) != len("call_0_")+8 || seen[id] {
			t.Errorf("id %d: %q", i, id)
		}
		seen[id] = true
	}
	if b := ids(stream(`{"path":"c.go"}`)); b[0] == a[0] {
		t.Errorf("different arguments gave the same id %q", b[0])
	}
	in := `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"abc","name":"f","args":{}}}]},"finishReason":"STOP"}]}` + "\n\n"
	if b := ids(in); !reflect.DeepEqual(b, []string{"abc"}) {
		t.Errorf("functionCall.id not used: %q", b)
	}
}

func TestFraming(t *testing.T) {
	stop := `{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}`
	for _, tc := range []struct {
		name, in string
		chunks   int
		err      string
	}{
		{"empty body", "", 0, "ended before a finishReason"},
		{"only spaces", " \r\n\t", 0, "ended before a finishReason"},
		{"sse after blank lines", "\n\n\ndata: " + stop + "\n\n", 2, ""},
		{"sse without a final blank line", "data: " + stop, 2, ""},
		{"empty data", "data:\n\ndata: " + stop + "\n\n", 2, ""},
		{"array after spaces", "  \n[" + stop + "]\n", 2, ""},
		{"empty array", "[]", 0, ""},
		{"array cut after a comma", "[" + stop + ",", 2, "array element 2 (at byte 77) is cut short"},
		{"data after the array", "[" + stop + "] x", 2, "data after the JSON array at byte"},
		{"a second array", "[" + stop + "][]", 2, "data after the JSON array"},
		{"array of non-objects", "[1]", 0, "array element 1 (at byte 1)"},
		{"offsets count leading spaces", "  \n[1]", 0, "array element 1 (at byte 4)"},
		{"offsets count leading spaces, syntax", "\n[{]", 0, "array element 1 (at byte 2): invalid JSON at byte 3"},
		{"bare objects", stop + "\n" + stop, 3, ""}, // one stop only
		{"bare error body", `{"error":{"code":400,"message":"bad key","status":"INVALID_ARGUMENT"}}`, 1, ""},
		{"bare object cut", `{"candidates":[`, 0, "object 1 (at byte 0) is cut short"},
		{"bare object malformed", `{"candidates":]`, 0, "object 1 (at byte 0): invalid JSON"},
		{"error with a code only", `{"error":{"code":500,"message":"boom"}}`, 1, ""},
		{"candidate without content", `data: {"candidates":[{}]}` + "\n\ndata: " + stop, 2, ""},
		{"null fields", `data: {"candidates":null,"usageMetadata":null,"promptFeedback":null,"error":null}` + "\n\ndata: " + stop, 2, ""},
		{"second candidate ignored", `data: {"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"},{"content":{"parts":[{"text":"b"}]},"finishReason":"SAFETY"}]}`, 2, ""},
		{"not json", "data: hello\n\n", 0, "event 1: invalid JSON at byte 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := decode(strings.NewReader(tc.in))
			if len(res.chunks) != tc.chunks {
				t.Errorf("%d chunks, want %d: %+v", len(res.chunks), tc.chunks, res.chunks)
			}
			if tc.err == "" && res.err != "" || !strings.Contains(res.err, tc.err) {
				t.Errorf("error %q, want %q", res.err, tc.err)
			}
		})
	}
}

// TestArgs checks the arguments of a call: compacted, "{}" when missing
// or null, and passed on as they are when they are not an object (Gemini
// only sends objects).
func TestArgs(t *testing.T) {
	for args, want := range map[string]string{
		``:                         "{}",
		`,"args":null`:             "{}",
		`,"args":{}`:               "{}",
		`,"args":{ "a" : [1, 2] }`: `{"a":[1,2]}`,
		`,"args":"x"`:              `"x"`,
	} {
		in := `data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"` + args + `}}]},"finishReason":"STOP"}]}`
		res := decode(strings.NewReader(in))
		if res.err != "" || len(res.chunks) != 4 || res.chunks[1].Arguments != want || res.chunks[2].Arguments != want {
			t.Errorf("%s: %+v", args, res)
		}
	}
}

func TestStopReasons(t *testing.T) {
	for raw, want := range map[string]chat.StopReason{
		"STOP":                      chat.StopEndTurn,
		"MAX_TOKENS":                chat.StopMaxTokens,
		"SAFETY":                    chat.StopContentFilter,
		"RECITATION":                chat.StopContentFilter,
		"BLOCKLIST":                 chat.StopContentFilter,
		"PROHIBITED_CONTENT":        chat.StopContentFilter,
		"SPII":                      chat.StopContentFilter,
		"IMAGE_SAFETY":              chat.StopContentFilter,
		"IMAGE_PROHIBITED_CONTENT":  chat.StopContentFilter,
		"IMAGE_RECITATION":          chat.StopContentFilter,
		"MALFORMED_FUNCTION_CALL":   chat.StopError,
		"LANGUAGE":                  chat.StopError,
		"OTHER":                     chat.StopError,
		"FINISH_REASON_UNSPECIFIED": chat.StopError,
		"SOMETHING_NEW":             chat.StopError,
	} {
		in := `data: {"candidates":[{"finishReason":"` + raw + `"}]}` + "\n\n" +
			`data: {"candidates":[{"finishReason":"STOP"}]}` + "\n\n" // only the first stop counts
		res := decode(strings.NewReader(in))
		if res.err != "" || len(res.chunks) != 1 || *res.chunks[0].Stop != (chat.Stop{Reason: want, Raw: raw}) {
			t.Errorf("%s: %+v", raw, res)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want chat.StreamError
	}{
		{`{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}`, chat.StreamError{Type: "RESOURCE_EXHAUSTED", Message: "quota", Retryable: true}},
		{`{"code":500,"message":"internal","status":"INTERNAL"}`, chat.StreamError{Type: "INTERNAL", Message: "internal", Retryable: true}},
		{`{"code":503,"message":"overloaded","status":"UNAVAILABLE"}`, chat.StreamError{Type: "UNAVAILABLE", Message: "overloaded", Retryable: true}},
		{`{"code":504,"message":"slow","status":"DEADLINE_EXCEEDED"}`, chat.StreamError{Type: "DEADLINE_EXCEEDED", Message: "slow", Retryable: true}},
		{`{"status":"UNAVAILABLE"}`, chat.StreamError{Type: "UNAVAILABLE", Retryable: true}},
		{`{"code":503}`, chat.StreamError{Type: "503", Retryable: true}},
		{`{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}`, chat.StreamError{Type: "INVALID_ARGUMENT", Message: "bad"}},
		{`{"code":403,"message":"denied","status":"PERMISSION_DENIED"}`, chat.StreamError{Type: "PERMISSION_DENIED", Message: "denied"}},
	} {
		res := decode(strings.NewReader(`data: {"error":` + tc.in + "}\n\n"))
		if res.err != "" || len(res.chunks) != 1 || res.chunks[0].Type != chat.ChunkError || *res.chunks[0].Error != tc.want {
			t.Errorf("%s: %+v", tc.in, res)
		}
	}
}

// TestStrayErrorBody: Google ends a failing SSE stream with its plain
// error body, outside any event; the client hears the error, not a cut.
func TestStrayErrorBody(t *testing.T) {
	head := `data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}` + "\r\n\r\n"
	want := chat.StreamError{Type: "RESOURCE_EXHAUSTED", Message: "quota \"x\"", Retryable: true}
	for _, body := range []string{
		`{"error":{"code":429,"message":"quota \"x\"","status":"RESOURCE_EXHAUSTED"}}`,
		"{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"quota \\\"x\\\"\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}\n",
		"[{\r\n  \"error\": {\"code\": 429, \"message\": \"quota \\\"x\\\"\", \"status\": \"RESOURCE_EXHAUSTED\"}\r\n}\r\n]",
	} {
		res := decode(strings.NewReader(head + body))
		if res.err != "" || len(res.chunks) != 2 || res.chunks[1].Type != chat.ChunkError || *res.chunks[1].Error != want {
			t.Errorf("%q: %+v", body, res)
		}
	}
	// Anything else after the events is still a cut stream.
	for _, body := range []string{"", "{\"candidates\":[]}\n", "{\"error\":", "garbage\n", `{"error":{"code":429}} trailing`} {
		_, err := wiretest.DecodeAll(gemini.DecodeStream, strings.NewReader(head+body))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%q: error %v, want a cut stream", body, err)
		}
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("connection reset")
	for _, head := range []string{
		`data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}` + "\n\n",
		`[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]},`,
		`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`,
	} {
		r := io.MultiReader(strings.NewReader(head), iotest.ErrReader(boom))
		chunks, err := wiretest.DecodeAll(gemini.DecodeStream, r)
		if len(chunks) != 1 || !errors.Is(err, boom) {
			t.Errorf("%.20s…: %d chunks, error %v", head, len(chunks), err)
		}
	}
	if _, err := wiretest.DecodeAll(gemini.DecodeStream, iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("error %v", err)
	}
}

func TestCutWrapsUnexpectedEOF(t *testing.T) {
	for _, f := range []string{"cut-between-events.sse", "array-cut.array.json", "array-no-close.array.json"} {
		in, err := os.ReadFile("testdata/stream/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wiretest.DecodeAll(gemini.DecodeStream, bytes.NewReader(in)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: error %v does not wrap io.ErrUnexpectedEOF", f, err)
		}
	}
}

// endless is a body that never ends: head, then the same byte forever. It
// counts what it gave.
type endless struct {
	head string
	fill byte
	n    int64
}

func (e *endless) Read(p []byte) (int, error) {
	k := 0
	if int(e.n) < len(e.head) {
		k = copy(p, e.head[e.n:])
	}
	for i := k; i < len(p); i++ {
		p[i] = e.fill
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestBounded checks that a response chunk that never ends is an error
// once it passes MaxStreamChunk, in every mode, and is never read much
// further.
func TestBounded(t *testing.T) {
	for _, body := range []*endless{
		{head: `data: {"candidates":[{"content":{"parts":[{"text":"`, fill: 'a'},
		{head: `[{"candidates":[{"content":{"parts":[{"text":"`, fill: 'a'},
		{head: `[{"candidates":[]},` + "\n", fill: ' '},
		{head: `{"candidates":[{"content":{"parts":[{"text":"`, fill: 'a'},
	} {
		chunks, err := wiretest.DecodeAll(gemini.DecodeStream, body)
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%.10s…: %d chunks, error %v", body.head, len(chunks), err)
		}
		if body.n > gemini.MaxStreamChunk+1<<20 {
			t.Errorf("%.10s…: read %d bytes for a bound of %d", body.head, body.n, gemini.MaxStreamChunk)
		}
	}
}

// TestLongFixture checks the benchmark's fixture against a reading of it
// done apart from DecodeStream (generic JSON).
func TestLongFixture(t *testing.T) {
	in, err := os.ReadFile(longFixture)
	if err != nil {
		t.Fatal(err)
	}
	var thinking, text strings.Builder
	var sig string
	var calls []any
	var usage map[string]any
	events := 0
	for ev, err := range sse.Read(bytes.NewReader(in), 0) {
		if err != nil {
			t.Fatal(err)
		}
		events++
		var v struct {
			Candidates []struct {
				Content struct {
					Parts []map[string]any
				}
			}
			UsageMetadata map[string]any
		}
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			t.Fatal(err)
		}
		usage = v.UsageMetadata
		for _, p := range v.Candidates[0].Content.Parts {
			switch {
			case p["thought"] == true:
				thinking.WriteString(p["text"].(string))
				if s, ok := p["thoughtSignature"].(string); ok {
					sig += s
				}
			case p["functionCall"] != nil:
				calls = append(calls, p["functionCall"].(map[string]any)["args"])
			default:
				text.WriteString(p["text"].(string))
			}
		}
	}
	if events < 200 {
		t.Fatalf("%d events, want 200 or more", events)
	}
	chunks, err := wiretest.DecodeAll(gemini.DecodeStream, bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := chat.Collect(func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	var gotThinking, gotText strings.Builder
	var gotSig string
	var gotCalls []any
	for _, b := range resp.Content {
		switch b.Type {
		case chat.TypeThinking:
			gotThinking.WriteString(b.Thinking)
			gotSig += b.Signature
		case chat.TypeText:
			gotText.WriteString(b.Text)
		case chat.TypeToolUse:
			var args any
			if err := json.Unmarshal(b.Input, &args); err != nil {
				t.Fatal(err)
			}
			gotCalls = append(gotCalls, args)
		}
	}
	if gotThinking.String() != thinking.String() || gotSig != sig || gotText.String() != text.String() || !reflect.DeepEqual(gotCalls, calls) {
		t.Errorf("content differs:\n%q\n%q\n%q\n%v", gotThinking.String(), gotSig, gotText.String(), gotCalls)
	}
	n := func(k string) int64 { f, _ := usage[k].(float64); return int64(f) }
	want := chat.Usage{
		Input:     n("promptTokenCount"),
		Output:    n("candidatesTokenCount") + n("thoughtsTokenCount"),
		CacheRead: n("cachedContentTokenCount"),
		Reasoning: n("thoughtsTokenCount"),
	}
	if resp.Usage != want || resp.Stop != (chat.Stop{Reason: chat.StopToolUse, Raw: "STOP"}) {
		t.Errorf("usage %+v stop %+v, want %+v", resp.Usage, resp.Stop, want)
	}
}

// FuzzDecodeStream checks that no input panics, that the iteration ends
// with at most one error, last, and that what comes out is bounded by
// what went in.
func FuzzDecodeStream(f *testing.F) {
	// The long fixture is left out: mutating 100 KB inputs slows the
	// fuzzer down more than it finds.
	for _, file := range fixtures(f, false) {
		in, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(in)
	}
	f.Add([]byte(`[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"}}]}}]}]`))
	f.Add([]byte(`{"error":{"code":429}}{"error":{"code":"x"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out int
		errs := 0
		for c, err := range gemini.DecodeStream(bytes.NewReader(in)) {
			if errs > 0 {
				t.Fatalf("an item after the error: %+v %v", c, err)
			}
			if err != nil {
				errs++
				continue
			}
			// Each part gives at most its text, its signature and twice its
			// arguments ("{}" when it has none, plus a generated id).
			out += len(c.Text) + len(c.Signature) + len(c.Arguments)
			if c.Type == chat.ChunkToolCallEnd {
				out -= len(c.Arguments) // counted with the delta
			}
		}
		// Invalid UTF-8 in a string becomes U+FFFD: one input byte can
		// give three output bytes.
		if out > 3*len(in)+64 {
			t.Fatalf("%d bytes of chunks from %d bytes of input", out, len(in))
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	wiretest.BenchDecode(b, longFixture, gemini.DecodeStream, ssePayloads(b, longFixture))
}

// BenchmarkDecodeArray decodes the same responses in the JSON array mode.
func BenchmarkDecodeArray(b *testing.B) {
	payloads := ssePayloads(b, longFixture)
	path := filepath.Join(b.TempDir(), "long.json")
	if err := os.WriteFile(path, append(append([]byte("["), bytes.Join(payloads, []byte(",\r\n"))...), ']'), 0o644); err != nil {
		b.Fatal(err)
	}
	wiretest.BenchDecode(b, path, gemini.DecodeStream, payloads)
}

func ssePayloads(b *testing.B, path string) [][]byte {
	in, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var payloads [][]byte
	for ev, err := range sse.Read(bytes.NewReader(in), 0) {
		if err != nil {
			b.Fatal(err)
		}
		payloads = append(payloads, ev.Data)
	}
	return payloads
}
