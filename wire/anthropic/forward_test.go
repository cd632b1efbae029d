package anthropic_test

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
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

var forwardOut = wire.Outgoing{Model: "route-model", ID: "msg_ours"}

// bothPaths writes the upstream stream up to a client twice: decoded and
// encoded (the dialect's Stream), and through the dialect's Forwarder.
func bothPaths(upstream []byte, chunks bool) (encoded, forwarded []byte, yielded []chat.Chunk) {
	row := anthropic.Dialect()
	var a bytes.Buffer
	_ = row.Stream(&a, forwardOut, anthropic.DecodeStream(bytes.NewReader(upstream)))
	var b bytes.Buffer
	fw := row.Forward(forwardOut, wire.ForwardOptions{Chunks: chunks})
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

// clientView is what a client reads of a Messages stream: its chunks as
// DecodeStream reads them, adjacent text joined (and thinking, and a
// call's argument fragments), and the decode error if any.
func clientView(body []byte) ([]chat.Chunk, string) {
	var out []chat.Chunk
	for c, err := range anthropic.DecodeStream(bytes.NewReader(body)) {
		if err != nil {
			return out, err.Error()
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			switch {
			case c.Type == chat.ChunkText && last.Type == chat.ChunkText:
				last.Text += c.Text
				continue
			case c.Type == chat.ChunkReasoning && last.Type == chat.ChunkReasoning && c.Text != "" && last.Signature == "" && last.Redacted == "" && c.Redacted == "" && c.Signature == "":
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

// checkStructure checks a forwarded stream as an SDK reads it: each
// event's name is its JSON type, message_start carries the gateway's id
// and model, blocks start at 0, 1, ... and a delta or stop is for the
// block open.
func checkStructure(body []byte) error {
	open, next := -1, 0
	for ev, err := range sse.Read(bytes.NewReader(body), 0) {
		if err != nil {
			return err
		}
		var e struct {
			Type    string `json:"type"`
			Index   *int   `json:"index"`
			Message struct {
				ID    string `json:"id"`
				Model string `json:"model"`
			} `json:"message"`
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return fmt.Errorf("event %s: %v", ev.Data, err)
		}
		if e.Type != ev.Name {
			return fmt.Errorf("event %s named %q", ev.Data, ev.Name)
		}
		switch e.Type {
		case "message_start":
			if e.Message.ID != forwardOut.ID || e.Message.Model != forwardOut.Model {
				return fmt.Errorf("message_start %s: not the gateway's id and model", ev.Data)
			}
		case "content_block_start":
			if e.Index == nil || *e.Index != next || open >= 0 {
				return fmt.Errorf("%s: block %d starts with %d open", ev.Data, next, open)
			}
			open, next = next, next+1
		case "content_block_delta", "content_block_stop":
			if e.Index == nil || *e.Index != open {
				return fmt.Errorf("%s: block %d is open", ev.Data, open)
			}
			if e.Type == "content_block_stop" {
				open = -1
			}
		}
	}
	return nil
}

func sameChunk(a, b chat.Chunk) bool { return chunkJSON([]chat.Chunk{a}) == chunkJSON([]chat.Chunk{b}) }

// compare holds the forwarded stream of upstream to the encoded one.
func compare(t testing.TB, upstream []byte) {
	t.Helper()
	for _, chunks := range []bool{false, true} {
		enc, fwd, yielded := bothPaths(upstream, chunks)
		a, aerr := clientView(enc)
		b, berr := clientView(fwd)
		if !slices.EqualFunc(a, b, sameChunk) || aerr != berr {
			t.Fatalf("chunks %v: the client reads\n%s (%s)\nforwarded, and\n%s (%s)\nencoded; upstream:\n%s\nforwarded:\n%s\nencoded:\n%s",
				chunks, chunkJSON(b), berr, chunkJSON(a), aerr, upstream, fwd, enc)
		}
		if errA, errB := checkStructure(enc), checkStructure(fwd); errB != nil && errA == nil {
			t.Fatalf("forwarded: %v\n%s", errB, fwd)
		}
		if chunks {
			var want []chat.Chunk
			for c, err := range anthropic.DecodeStream(bytes.NewReader(upstream)) {
				if err == nil {
					want = append(want, c)
				}
			}
			// The writer stops at an error (nothing is written after one),
			// and the pipeline with it: the decoder's chunks up to there.
			stopped := len(yielded) < len(want) && strings.Contains(string(fwd), "event: error\n")
			if len(yielded) > len(want) || !slices.EqualFunc(yielded, want[:len(yielded)], sameChunk) || len(yielded) < len(want) && !stopped {
				t.Fatalf("the forwarder yielded\n%s\nthe decoder makes\n%s", chunkJSON(yielded), chunkJSON(want))
			}
		}
	}
}

func event(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

const forwardStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_up\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"

// forwardStreams are upstream streams of the shapes a forwarder meets,
// beside the fixtures.
var forwardStreams = []string{
	// A server tool's block the decoder skips: the client's indexes close
	// the gap; text keys in another order; escapes and a surrogate pair.
	forwardStart +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srv","name":"web_search","input":{}}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"first"}}`) +
		event("content_block_delta", `{"index":1,"delta":{"text":" \"second\"\n\ud83d\ude00","type":"text_delta"},"type":"content_block_delta"}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":""}}`) +
		event("ping", `{"type": "ping"}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" third"}}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`) +
		event("message_stop", `{"type":"message_stop"}`),
	// Thinking, signed, then more thinking in the same block (a new block
	// to the client), then a tool call.
	forwardStart +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"b"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"c"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"wrong kind"}}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`) +
		event("message_stop", `{"type":"message_stop"}`),
	// Two blocks open at once (interleaved tool calls), unnamed events, a
	// delta for a block that never started, duplicate keys, an extra key.
	forwardStart +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t0","name":"f","input":{}}}`) +
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"g","input":{}}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"b\":2}"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`) +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" \"}}\n\n" +
		event("content_block_delta", `{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"nowhere"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"input_json_delta","partial_json":"x"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"y"},"extra":1}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`) +
		event("message_stop", `{"type":"message_stop"}`),
	// The index after the string, in deltas of one shape but for their
	// text, for a block the client numbers apart from the upstream.
	forwardStart +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srv","name":"web_search","input":{}}}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) +
		event("content_block_delta", `{"delta":{"type":"text_delta","text":"a"},"index":1,"type":"content_block_delta"}`) +
		event("content_block_delta", `{"delta":{"type":"text_delta","text":"bb"},"index":1,"type":"content_block_delta"}`) +
		event("content_block_delta", `{"delta":{"type":"text_delta","text":"ccc\n"},"index":1,"type":"content_block_delta"}`) +
		event("content_block_delta", `{"delta":{"type":"text_delta","text":""},"index":1,"type":"content_block_delta"}`) +
		event("content_block_delta", `{"delta":{"type":"text_delta","text":"d"},"index":1,"type":"content_block_delta"}`) +
		event("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`) +
		event("message_stop", `{"type":"message_stop"}`),
	// An error mid-block; a cut stream; a stream that breaks in a delta.
	forwardStart +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}}`) +
		event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"c"}}`),
	forwardStart +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}}`),
	forwardStart +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b\ud800"}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"`),
}

// TestForwardMatchesEncode: for every fixture and every shape above, the
// client reads of the forwarded stream what it reads of the stream
// decoded and encoded again, in a stream an SDK takes.
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

// TestForwardKeepsUpstreamBytes: a delta is the upstream's own, its index
// the client's numbering (a skipped block before it).
func TestForwardKeepsUpstreamBytes(t *testing.T) {
	_, got, _ := bothPaths([]byte(forwardStreams[0]), false)
	for _, want := range []string{
		event("content_block_delta", `{"index":0,"delta":{"text":" \"second\"\n\ud83d\ude00","type":"text_delta"},"type":"content_block_delta"}`),
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" third"}}`),
	} {
		if !strings.Contains(string(got), want) {
			t.Fatalf("no %s in\n%s", want, got)
		}
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
