package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

// fastCases are events for parseFast: those it reads and those it leaves
// to encoding/json.
var fastCases = []struct {
	data string
	fast bool
}{
	{`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1754002000,"model":"gpt-4.1","service_tier":"default","system_fingerprint":"fp_b3","choices":[{"index":0,"delta":{"content":" and"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"c"}`, true},
	{`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
	{` { "choices" : [ { "index" : 0 , "delta" : { "content" : "a\"b\\c\/d\n\t\r\b\f \u00e9 Ça va? 👋" } } ] } `, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`, true},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\":"}}]}}]}`, true},
	{`{"choices":[{"index":0,"delta":{},"finish_reason":"stop","native_finish_reason":"STOP"}],"provider":"OpenAI"}`, true},
	{`{"choices":[{"index":0,"delta":{"reasoning_content":"think","content":null}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"reasoning":"r"}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"refusal":"b"}}]}`, true},
	{`{"choices":[{"index":0,"delta":{"content":"a","content":null}}]}`, true},
	{`{"choices":[]}`, true},
	{`{}`, true},
	{`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`, true},
	{`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`, true},
	{`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":20,"total_tokens":44,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_cache_hit_tokens":8,"prompt_cache_miss_tokens":2}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens":null,"prompt_tokens_details":null,"completion_tokens_details":null}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":3},"prompt_tokens_details":null,"prompt_tokens_details":{"cache_write_tokens":4}}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":3,"cached_tokens":null}}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":3},"prompt_tokens_details":{"cache_write_tokens":4}}}`, true},
	{`{"choices":[],"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens":1},"usage":null}`, true},
	{`{"choices":[],"usage":{"prompt_tokens":1,"cost":0.0012}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens":1.0}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens":"1"}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens_details":{"audio_tokens":0.5}}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens_details":[]}}`, false},
	{`{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.text","text":"x"}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"function_call":{"name":"f"}}}]}`, false},
	{`{"error":{"message":"x"}}`, false},
	{`{"Choices":[]}`, false},
	{`{"choice\u0073":[]}`, false},
	{`{"choices":[],"choices":[]}`, false},
	{`{"choices":[{"delta":{"tool_calls":[]},"delta":{"tool_calls":[]}}]}`, false},
	{`{"choices":null}`, false},
	{`{"choices":[{"index":-1}]}`, false},
	{`{"choices":[{"index":1.0}]}`, false},
	{`{"choices":[{"index":01}]}`, false},
	{`{"choices":[{"index":1234567890}]}`, false},
	{`{"choices":[{"index":0,"logprobs":{"content":[]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00"}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"` + "\xff" + `"}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"` + "\x01" + `"}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":1}}]}`, false},
	{`{"id":"a\"b"}`, false},
	{`{"created":1.5}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":null}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":null}]}}]}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"a"}}],}`, false},
	{`{"choices":[{"index":0,"delta":{"content":"a"}}]} x`, false},
	{`{"choices":[{"index":0,"delta":{"content":"a}}]}`, false},
	{``, false},
	{`[]`, false},
}

func TestParseFast(t *testing.T) {
	for _, c := range fastCases {
		var got streamChunk
		if fast := parseFast([]byte(c.data), &got); fast != c.fast {
			t.Errorf("%s: fast %v, want %v", c.data, fast, c.fast)
		}
		checkFast(t, []byte(c.data))
	}
}

// TestParseFastStreams: nearly every event of the fixtures' streams takes
// the fast path.
func TestParseFastStreams(t *testing.T) {
	fast, all := 0, 0
	for _, data := range streamEvents(t) {
		var c streamChunk
		all++
		if parseFast(data, &c) {
			fast++
		}
	}
	if fast*10 < all*8 {
		t.Errorf("%d of %d events on the fast path, want at least 80%%", fast, all)
	}
}

// checkFast: when parseFast reads data, it gets what encoding/json gets.
func checkFast(t *testing.T, data []byte) {
	t.Helper()
	var fast, slow streamChunk
	if !parseFast(data, &fast) {
		return
	}
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("%q: parseFast read what encoding/json rejects: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v\njson %+v", data, fast, slow)
	}
}

// streamEvents are the data of every event of the stream fixtures.
func streamEvents(t testing.TB) [][]byte {
	files, _ := filepath.Glob("testdata/stream/*.sse")
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for ev, err := range sse.Read(bytes.NewReader(data), 0) {
			if err != nil {
				break
			}
			if d := bytes.TrimSpace(ev.Data); len(d) > 0 && string(d) != "[DONE]" {
				out = append(out, d)
			}
		}
	}
	return out
}

func FuzzParseFast(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.data))
	}
	for _, data := range streamEvents(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFast(t, data) })
}

// FuzzParseFastResume: an event that starts with the prefix another left
// to skip is read, from the end of that prefix, as encoding/json reads it
// whole, and as parseFast reads it from its start.
func FuzzParseFastResume(f *testing.F) {
	events := streamEvents(f)
	for i := 1; i < len(events) && i < 40; i++ {
		f.Add(events[i-1], events[i])
	}
	f.Add([]byte(`{"id":"c","created":1,"choices":[]}`), []byte(`[{"index":0,"delta":{"content":"x"}}],"usage":null}`))
	f.Add([]byte(`{"id":"c","created":1,"choices":[]}`), []byte(`null}`))
	f.Add([]byte(`{"id":"c","created":1,"choices":[]}`), []byte(`[],"choices":[]}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ca streamChunk
		resume, ok := parseFastFrom(a, &ca, 0)
		if !ok || resume == 0 {
			return
		}
		// b, after a's prefix.
		data := append(a[:resume:resume], b...)
		var fast, whole, slow streamChunk
		if _, ok := parseFastFrom(data, &fast, resume); !ok {
			return
		}
		if _, ok := parseFastFrom(data, &whole, 0); !ok {
			t.Fatalf("%q: read from %d but not from its start", data, resume)
		}
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("%q: read from %d what encoding/json rejects: %v", data, resume, err)
		}
		if !reflect.DeepEqual(fast, slow) || !reflect.DeepEqual(fast, whole) {
			t.Fatalf("%q from %d:\nfast  %+v\nwhole %+v\njson  %+v", data, resume, fast, whole, slow)
		}
	})
}

// BenchmarkParseChunk reads the events of a long text stream with
// encoding/json (the decoder before the fast path) and with parseChunk,
// and reports parseChunk's time as a fraction of encoding/json's
// ("x-json").
func BenchmarkParseChunk(b *testing.B) {
	data, err := os.ReadFile("testdata/stream/long_stream.sse")
	if err != nil {
		b.Fatal(err)
	}
	var events [][]byte
	for ev, err := range sse.Read(bytes.NewReader(data), 0) {
		if err == nil && string(ev.Data) != "[DONE]" {
			events = append(events, ev.Data)
		}
	}
	b.ReportAllocs()
	var slow, fast int64
	for b.Loop() {
		t0 := nanotime()
		for _, ev := range events {
			var c streamChunk
			if err := json.Unmarshal(ev, &c); err != nil {
				b.Fatal(err)
			}
		}
		t1 := nanotime()
		var p chunkParser
		for _, ev := range events {
			var c streamChunk
			if err := p.parse(ev, &c); err != nil {
				b.Fatal(err)
			}
		}
		t2 := nanotime()
		slow += t1 - t0
		fast += t2 - t1
	}
	n := float64(b.N) * float64(len(events))
	b.ReportMetric(float64(slow)/n, "json-ns/event")
	b.ReportMetric(float64(fast)/n, "fast-ns/event")
	b.ReportMetric(float64(fast)/float64(slow), "x-json")
}

var epoch = time.Now()

func nanotime() int64 { return int64(time.Since(epoch)) }

// responseCases are bodies for parseResponseFast: those it reads and those
// it leaves to encoding/json.
var responseCases = []struct {
	data string
	fast bool
}{
	{`{"id":"chatcmpl-bench","object":"chat.completion","created":1754000000,"model":"gpt-bench","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":20,"total_tokens":44,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default","system_fingerprint":"fp_bench"}`, true},
	{`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}]}`, true},
	{`{"choices":[{"index":0,"message":{"content":"<think>x</think>y","reasoning_content":"r"}}],"usage":null}`, true},
	{`{"choices":[]}`, true},
	{`{"choices":null}`, true},
	{`{"choices":[{"index":0,"message":{"content":"a"},"message":{"content":"b"}}]}`, false},
	{`{"choices":[],"choices":[]}`, false},
	{`{"choices":[{"index":0,"message":{"annotations":[{"type":"url_citation"}]}}]}`, false},
	{`{"choices":[{"index":0,"message":{"reasoning_details":[]}}]}`, false},
	{`{"error":{"message":"x","code":500}}`, false},
	{`{"choices":[],"usage":{"prompt_tokens":1,"cost":0.5}}`, false},
	{`{"choices":[{"index":0,"logprobs":{"content":[]}}]}`, false},
	{`{"choices":[]} x`, false},
}

func TestParseResponseFast(t *testing.T) {
	for _, c := range responseCases {
		var r unaryResponse
		if got := parseResponseFast([]byte(c.data), &r); got != c.fast {
			t.Errorf("%s: fast %v, want %v", c.data, got, c.fast)
		}
		checkResponseFast(t, []byte(c.data))
	}
}

// checkResponseFast: when parseResponseFast reads data, it gets what
// encoding/json gets.
func checkResponseFast(t *testing.T, data []byte) {
	t.Helper()
	var fast, slow unaryResponse
	if !parseResponseFast(data, &fast) {
		return
	}
	if err := json.Unmarshal(data, &slow); err != nil {
		t.Fatalf("%q: parseResponseFast read what encoding/json rejects: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v\njson %+v", data, fast, slow)
	}
}

func FuzzParseResponseFast(f *testing.F) {
	for _, c := range responseCases {
		f.Add([]byte(c.data))
	}
	// The responses of the stream fixtures, as EncodeResponse writes them.
	if data, err := os.ReadFile("testdata/responses.json"); err == nil {
		var bodies map[string]json.RawMessage
		if json.Unmarshal(data, &bodies) == nil {
			for _, b := range bodies {
				f.Add([]byte(b))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkResponseFast(t, data) })
}
