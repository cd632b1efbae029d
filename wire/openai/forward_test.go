package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// forwardOut is what the forwarded streams of these tests are written
// for.
func forwardOut(withUsage bool) wire.Outgoing {
	return wire.Outgoing{Request: &chat.Request{StreamUsage: withUsage}, Model: "route-model", ID: "chatcmpl-ours", Created: 1700000000}
}

// bothPaths writes the upstream stream up to a client twice: decoded and
// encoded (the dialect's Stream), and through the dialect's Forwarder.
// pipe stands for what the gateway puts between a decoder and the writer.
func bothPaths(upstream []byte, out wire.Outgoing, chunks bool) (encoded, forwarded []byte, yielded []chat.Chunk) {
	row := openai.Dialect()
	var a bytes.Buffer
	_ = row.Stream(&a, out, openai.DecodeStream(bytes.NewReader(upstream)))
	var b bytes.Buffer
	fw := row.Forward(out, wire.ForwardOptions{Chunks: chunks})
	_ = fw.Stream(&b, func(yield func(chat.Chunk, error) bool) {
		for c, err := range fw.Decode(iotest.HalfReader(bytes.NewReader(upstream))) {
			if err == nil {
				yielded = append(yielded, c)
			}
			if !yield(c, err) {
				return
			}
		}
	})
	return a.Bytes(), b.Bytes(), yielded
}

// clientView is what a client reads of a Chat Completions stream: its
// chunks as DecodeStream reads them, adjacent text joined (and reasoning,
// and a call's argument fragments), and the decode error if any.
func clientView(body []byte) ([]chat.Chunk, string) {
	var out []chat.Chunk
	for c, err := range openai.DecodeStream(bytes.NewReader(body)) {
		if err != nil {
			return out, err.Error()
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			switch {
			case c.Type == chat.ChunkText && last.Type == chat.ChunkText:
				last.Text += c.Text
				continue
			case c.Type == chat.ChunkReasoning && last.Type == chat.ChunkReasoning && c.Signature == "" && c.Redacted == "" && last.Signature == "" && last.Redacted == "":
				last.Text += c.Text
				continue
			case c.Type == chat.ChunkToolCallDelta && last.Type == chat.ChunkToolCallDelta && c.Index == last.Index:
				last.Arguments += c.Arguments
				continue
			}
		}
		out = append(out, c)
	}
	return out, ""
}

// checkEvents checks what every chunk object of a forwarded stream says
// outside its choices: the gateway's id, object, created and model, and
// usage only for a client that asked for it.
func checkEvents(body []byte, out wire.Outgoing) error {
	withUsage := out.Request.StreamUsage
	for line := range strings.SplitSeq(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("event %s: %v", data, err)
		}
		if _, ok := ev["error"]; ok {
			continue
		}
		want := map[string]string{"id": `"` + out.ID + `"`, "object": `"chat.completion.chunk"`,
			"created": fmt.Sprint(out.Created), "model": `"` + out.Model + `"`}
		for k, v := range want {
			if string(ev[k]) != v {
				return fmt.Errorf("event %s: %s is %s, want %s", data, k, ev[k], v)
			}
		}
		if u, ok := ev["usage"]; ok && !withUsage {
			return fmt.Errorf("event %s: usage %s for a client that did not ask", data, u)
		}
		if string(ev["choices"]) == "[]" && !withUsage {
			return fmt.Errorf("event %s: an empty choices array for a client that did not ask for usage", data)
		}
	}
	return nil
}

// compare holds the forwarded stream of upstream to the encoded one.
func compare(t testing.TB, upstream []byte) {
	t.Helper()
	for _, withUsage := range []bool{false, true} {
		for _, chunks := range []bool{false, true} {
			out := forwardOut(withUsage)
			enc, fwd, yielded := bothPaths(upstream, out, chunks)
			a, aerr := clientView(enc)
			b, berr := clientView(fwd)
			if !slices.EqualFunc(a, b, sameChunk) || aerr != berr {
				t.Fatalf("usage %v, chunks %v: the client reads\n%s (%s)\nforwarded, and\n%s (%s)\nencoded; upstream:\n%s\nforwarded:\n%s\nencoded:\n%s",
					withUsage, chunks, chunksJSON(b), berr, chunksJSON(a), aerr, upstream, fwd, enc)
			}
			if err := checkEvents(fwd, out); err != nil {
				t.Fatalf("usage %v: %v\nforwarded:\n%s", withUsage, err, fwd)
			}
			if chunks {
				// Every chunk the decoder makes, forwarded or not.
				var want []chat.Chunk
				for c, err := range openai.DecodeStream(bytes.NewReader(upstream)) {
					if err == nil {
						want = append(want, c)
					}
				}
				if !slices.EqualFunc(yielded, want, sameChunk) {
					t.Fatalf("the forwarder yielded\n%s\nthe decoder makes\n%s", chunksJSON(yielded), chunksJSON(want))
				}
			}
		}
	}
}

func sameChunk(a, b chat.Chunk) bool {
	return bytes.Equal(chunksJSON([]chat.Chunk{a}), chunksJSON([]chat.Chunk{b}))
}

// forwardStreams are upstream streams of the shapes a forwarder meets,
// beside the fixtures.
var forwardStreams = []string{
	// OpenAI's own: a role event, content, finish, usage.
	`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"a"}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"Hello \"there\"\n\u00e9 \ud83d\ude00 ü"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"ab"}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]

`,
	// Tools: a start, argument fragments, a second call, finish.
	`data: {"id":"c2","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get","arguments":""}}]}}]}

data: {"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}

data: {"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}

data: {"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"put","arguments":"{}"}}]}}]}

data: {"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":" "}}]}}]}

data: {"id":"c2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`,
	// Complete calls all under index 0: the canonical index is not the
	// upstream's.
	`data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

`,
	// Think tags, split, then text.
	`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"  <thi"}}]}

data: {"choices":[{"index":0,"delta":{"content":"nk>why"}}]}

data: {"choices":[{"index":0,"delta":{"content":" so</th"}}]}

data: {"choices":[{"index":0,"delta":{"content":"ink>Answer"}}]}

data: {"choices":[{"index":0,"delta":{"content":" <think>stays"}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

`,
	// Reasoning in reasoning_content, then content, no role at all.
	`data: {"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}

data: {"choices":[{"index":0,"delta":{"reasoning_content":" more","content":"<b>"}}]}

data: {"choices":[{"index":0,"delta":{"content":"x"}}]}

data: {"choices":[{"index":0,"delta":{"refusal":"no"}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}

`,
	// An error mid-stream, after text.
	`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"partial"}}]}

data: {"error":{"message":"overloaded, key sk-secret","type":"server_error"}}

data: {"choices":[{"index":0,"delta":{"content":"after"}}]}

`,
	// Cut in the middle of an event, and a stream with a data error.
	`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"a"}}]}

data: {"choices":[{"index":0,"delta":{"content":"b"}}]}

data: {"choices":[{"index":0,"delta":{"cont`,
	`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"a"}}]}

data: not json

data: {"choices":[{"index":0,"delta":{"content":"b"}}]}

`,
	// Events of one shape but for their strings (content, reasoning,
	// arguments, obfuscation of every length), usage:null after them.
	`data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null,"obfuscation":""}

data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"usage":null,"obfuscation":"xyz"}

data: {"id":"c","choices":[{"index":0,"delta":{"content":"bbbbbb\n"}}],"usage":null,"obfuscation":""}

data: {"id":"c","choices":[{"index":0,"delta":{"content":""}}],"usage":null,"obfuscation":"q"}

data: {"id":"c","choices":[{"index":0,"delta":{"content":"\ud83d\ude00"}}],"usage":null,"obfuscation":"qq"}

data: {"id":"c","choices":[{"index":0,"delta":{"content":"\ud83d"}}],"usage":null,"obfuscation":"qq"}

data: {"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"r1","content":"c1"}}],"usage":null,"obfuscation":"o"}

data: {"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"r22","content":""}}],"usage":null,"obfuscation":"oo"}

data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":""}}]}}],"usage":null}

data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}],"usage":null,"obfuscation":"a"}

data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"k\":1"}}]}}],"usage":null,"obfuscation":"abc"}

data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}],"usage":null,"obfuscation":"ab"}

data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}],"usage":null,"obfuscation":"b"}

data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}

`,
	// Shapes left to the decoder: a lone surrogate, logprobs, an error
	// event name, a second choice, duplicate keys, a multi-line event, usage
	// before choices, a role other than assistant.
	`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"\ud800x"}}]}

data: {"choices":[{"index":0,"delta":{"content":"y"},"logprobs":{"content":[]}}]}

event: error
data: {"choices":[{"index":0,"delta":{"content":"z"}}]}

data: {"choices":[{"index":0,"delta":{"content":"0"}},{"index":1,"delta":{"content":"1"}}]}

data: {"choices":[{"index":0,"delta":{"content":"d1","content":"d2"}}]}

data: {"choices":[{"index":0,
data: "delta":{"content":"two lines"}}]}

data: {"usage":null,"choices":[{"index":0,"delta":{"content":"u"}}]}

data: {"choices":[{"index":0,"delta":{"role":"tool","content":"t"}}]}

data: {"choices":[{"index":0,"delta":{"content":"end"},"finish_reason":"stop"}]}

`,
}

// TestForwardMatchesEncode: for every fixture and every shape above, the
// client reads of the forwarded stream what it reads of the stream
// decoded and encoded again, every event carries the gateway's id and
// model, and usage only when asked for.
func TestForwardMatchesEncode(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".sse"), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, in)
		})
	}
	for i, s := range forwardStreams {
		t.Run(fmt.Sprint("shape", i), func(t *testing.T) { compare(t, []byte(s)) })
	}
}

// TestForwardKeepsUpstreamBytes: a plain text event is the upstream's
// own, but for the id, created, model and (for a client that did not ask
// for usage) "usage":null; an event the forwarder does not pass (the
// finish) is the encoder's.
func TestForwardKeepsUpstreamBytes(t *testing.T) {
	up := forwardStreams[0]
	_, got, _ := bothPaths([]byte(up), forwardOut(false), false)
	events := strings.Split(strings.TrimSuffix(string(got), "\n\n"), "\n\n")
	want := []string{
		`data: {"id":"chatcmpl-ours","object":"chat.completion.chunk","created":1700000000,"model":"route-model","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"obfuscation":"a"}`,
		`data: {"id":"chatcmpl-ours","object":"chat.completion.chunk","created":1700000000,"model":"route-model","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"Hello \"there\"\n\u00e9 \ud83d\ude00 ü"},"logprobs":null,"finish_reason":null}],"obfuscation":"ab"}`,
		`data: {"id":"chatcmpl-ours","object":"chat.completion.chunk","created":1700000000,"model":"route-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`data: [DONE]`,
	}
	if !slices.Equal(events, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
	_, got, _ = bothPaths([]byte(up), forwardOut(true), false)
	if !strings.Contains(string(got), `"finish_reason":null}],"usage":null,"obfuscation":"ab"}`) ||
		!strings.Contains(string(got), `"choices":[],"usage":{"prompt_tokens":3,`) {
		t.Fatalf("a client that asked for usage gets usage:null kept and the usage chunk:\n%s", got)
	}
}

// FuzzForward holds the forwarded stream of any upstream bytes to the
// encoded one, as TestForwardMatchesEncode does.
func FuzzForward(f *testing.F) {
	for _, s := range forwardStreams {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join(streamDir, "*.sse"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil && len(b) < 8<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, upstream []byte) {
		if len(upstream) > 64<<10 {
			return
		}
		compare(t, upstream)
	})
}
