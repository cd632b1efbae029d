package responses_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (run with -update and review):\n got: %s\nwant: %s", path, got, want)
	}
}

// TestStreamFixtures decodes the upstream stream fixtures, written from
// the API's documented events; the expected chunks are reviewed golden
// files (-update writes them).
func TestStreamFixtures(t *testing.T) {
	if *update {
		files, _ := filepath.Glob("testdata/stream/*.sse")
		for _, f := range files {
			in, _ := os.ReadFile(f)
			chunks, err := wiretest.DecodeAll(responses.DecodeStream, bytes.NewReader(in))
			res := wiretest.StreamResult{Chunks: chunks}
			if err != nil {
				res.Error = err.Error()
			}
			out, _ := json.MarshalIndent(res, "", "  ")
			_ = os.WriteFile(strings.TrimSuffix(f, ".sse")+".chunks.json", append(out, '\n'), 0o644)
		}
	}
	wiretest.RunStreamFixtures(t, "testdata/stream", ".sse", 5, responses.DecodeStream)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkDecodeStream decodes a long text answer (2,000 deltas) against
// a bare json.Unmarshal of its events.
func BenchmarkDecodeStream(b *testing.B) {
	var sse bytes.Buffer
	var payloads [][]byte
	for i := range 2000 {
		p := []byte(`{"type":"response.output_text.delta","sequence_number":` + strconv.Itoa(i+4) +
			`,"item_id":"msg_67ccd3acc8d48190a77525dc6de64b4104becf8758f4a3d4","output_index":0,"content_index":0,"delta":" word","logprobs":[],"obfuscation":"Xk3p9q"}`)
		payloads = append(payloads, p)
		sse.WriteString("event: response.output_text.delta\ndata: ")
		sse.Write(p)
		sse.WriteString("\n\n")
	}
	path := filepath.Join(b.TempDir(), "long.sse")
	if err := os.WriteFile(path, sse.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	wiretest.BenchDecode(b, path, responses.DecodeStream, payloads)
}

// BenchmarkEncodeStream writes a long text answer (2,000 deltas) and its
// usage as a Responses stream.
func BenchmarkEncodeStream(b *testing.B) {
	chunks := make([]chat.Chunk, 0, 2002)
	for range 2000 {
		chunks = append(chunks, chat.Chunk{Type: chat.ChunkText, Text: " word"})
	}
	chunks = append(chunks, chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 10, Output: 2000}},
		chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}})
	req := &chat.Request{Model: "gpt-5"}
	b.ReportAllocs()
	for b.Loop() {
		if err := responses.EncodeStream(io.Discard, req, "gpt-5", "resp_bench", 1, replay(chunks)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/delta")
}

// TestEncodeStreamAllocsPerEvent: an event costs the encoder no
// allocation of its own. A stream of 2,000 deltas of each kind (text,
// reasoning, arguments) allocates no more than one of 20 does, but for
// the growths of the buffers that keep the longer texts (a few for each
// doubling).
func TestEncodeStreamAllocsPerEvent(t *testing.T) {
	stream := func(n int) []chat.Chunk {
		var out []chat.Chunk
		for range n {
			out = append(out, chat.Chunk{Type: chat.ChunkReasoning, Text: "think "})
		}
		for range n {
			out = append(out, chat.Chunk{Type: chat.ChunkText, Text: " wörd\n"})
		}
		out = append(out, chat.Chunk{Type: chat.ChunkToolCallStart, ID: "call_1", Name: "f"})
		for range n {
			out = append(out, chat.Chunk{Type: chat.ChunkToolCallDelta, Arguments: `"a",`})
		}
		return append(out, chat.Chunk{Type: chat.ChunkToolCallEnd},
			chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 1, Output: 2}},
			chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}})
	}
	allocs := func(chunks []chat.Chunk) float64 {
		return testing.AllocsPerRun(5, func() {
			if err := responses.EncodeStream(io.Discard, nil, "m", "resp_a", 1, replay(chunks)); err != nil {
				t.Fatal(err)
			}
		})
	}
	short, long := allocs(stream(20)), allocs(stream(2000))
	// 2,000 deltas make 10-14 KiB of each text: the buffers that keep
	// them, the done items and the events held for one write each double
	// four or five times from the room the encoder starts with (24 in
	// all when this was written; one allocation an event would be 6,000).
	if long-short > 32 {
		t.Fatalf("%v allocations for 20 deltas of each kind, %v for 2,000: more than the buffers' growths", short, long)
	}
}

// TestDoneTextIsTheDeltas: the done events and items repeat the text as
// the deltas carried it, escapes and all; a chunk that ends inside a
// character carries U+FFFD for its bytes, and so does the done text.
func TestDoneTextIsTheDeltas(t *testing.T) {
	for _, c := range []struct {
		deltas []string
		want   string
	}{
		{[]string{"caf", "é <b>&", "\"\n\u2028\x01"}, "café <b>&\"\n\u2028\x01"},
		{[]string{"caf\xc3", "\xa9!"}, "caf\ufffd\ufffd!"},
	} {
		// Once as a message's text, once as a reasoning summary.
		var textOnly, reasonOnly []chat.Chunk
		for _, d := range c.deltas {
			textOnly = append(textOnly, chat.Chunk{Type: chat.ChunkText, Text: d})
			reasonOnly = append(reasonOnly, chat.Chunk{Type: chat.ChunkReasoning, Text: d})
		}
		for _, s := range [][]chat.Chunk{textOnly, reasonOnly} {
			s = append(s, chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}})
			var out bytes.Buffer
			if err := responses.EncodeStream(&out, nil, "m", "resp_t", 1, replay(s)); err != nil {
				t.Fatal(err)
			}
			var deltas strings.Builder
			dones := 0
			for line := range strings.Lines(out.String()) {
				data, ok := strings.CutPrefix(line, "data: {")
				if !ok {
					continue
				}
				var ev struct {
					Type  string `json:"type"`
					Delta string `json:"delta"`
					Text  string `json:"text"`
					Part  *struct {
						Text string `json:"text"`
					} `json:"part"`
					Item *struct {
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
						Summary []struct {
							Text string `json:"text"`
						} `json:"summary"`
					} `json:"item"`
				}
				if err := json.Unmarshal([]byte("{"+data), &ev); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				deltas.WriteString(ev.Delta)
				var done []string
				switch {
				case strings.HasSuffix(ev.Type, "_text.done"):
					done = append(done, ev.Text)
				case strings.HasSuffix(ev.Type, "part.done"):
					done = append(done, ev.Part.Text)
				case ev.Type == "response.output_item.done":
					for _, p := range ev.Item.Content {
						done = append(done, p.Text)
					}
					for _, p := range ev.Item.Summary {
						done = append(done, p.Text)
					}
				}
				for _, d := range done {
					dones++
					if d != c.want {
						t.Errorf("%s: %q, want %q", ev.Type, d, c.want)
					}
				}
			}
			if deltas.String() != c.want || dones != 3 {
				t.Errorf("deltas %q (want %q), %d done texts (want 3)", deltas.String(), c.want, dones)
			}
		}
	}
}

// FuzzEncodeStream: whatever chunks come, EncodeStream writes events of
// valid JSON numbered from 0, each item's done text (or arguments) is
// its deltas joined, and the terminal event's output is the done items.
func FuzzEncodeStream(f *testing.F) {
	f.Add([]byte("\x00hello\x00 world\x01think\x02\x04\x05{\"a\"\x05:1}\x06\x07"))
	f.Add([]byte("\x04\x14\x05x\x04\x05y\x06\x03\x01caf\xc3\x00\xa9\x02\x06"))
	f.Add([]byte("\x00\"<\\>\u2028\x01\x00\x03red\x00x"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		var chunks []chat.Chunk
		// The arguments sent for each call: an end's arguments extend
		// them, as an upstream's do (else the deltas cannot be joined into
		// them).
		var sent [3]string
		for len(ops) > 0 {
			op, n := ops[0], 1
			// The text of an op runs to the next byte below 8.
			for n < len(ops) && ops[n] >= 8 {
				n++
			}
			text, index := string(ops[1:n]), int(op>>3)%3
			ops = ops[n:]
			switch op & 7 {
			case 0:
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkText, Text: text})
			case 1:
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkReasoning, Text: text})
			case 2:
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkReasoning, Signature: "sig" + text})
			case 3:
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkReasoning, Redacted: "red" + text})
			case 4:
				sent[index] = ""
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkToolCallStart, Index: index, ID: text, Name: "f"})
			case 5:
				sent[index] += text
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkToolCallDelta, Index: index, Arguments: text})
			case 6:
				all := ""
				if text != "" {
					all = sent[index] + text
				}
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkToolCallEnd, Index: index, Arguments: all})
			case 7:
				chunks = append(chunks, chat.Chunk{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: int64(len(text))}},
					chat.Chunk{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}})
			}
		}
		var out bytes.Buffer
		if err := responses.EncodeStream(&out, nil, "m", "resp_f", 1, replay(chunks)); err != nil {
			t.Fatal(err)
		}
		checkEncodedStream(t, out.Bytes())
	})
}

// checkEncodedStream checks the events of a stream EncodeStream wrote
// (see FuzzEncodeStream).
func checkEncodedStream(t *testing.T, sse []byte) {
	t.Helper()
	type event struct {
		Type      string          `json:"type"`
		Seq       int             `json:"sequence_number"`
		ItemID    string          `json:"item_id"`
		Index     int             `json:"output_index"`
		Delta     string          `json:"delta"`
		Text      *string         `json:"text"`
		Arguments *string         `json:"arguments"`
		Item      json.RawMessage `json:"item"`
		Response  *struct {
			Output []json.RawMessage `json:"output"`
		} `json:"response"`
	}
	deltas := map[string]string{}
	var items []json.RawMessage
	seq := 0
	for line := range strings.Lines(string(sse)) {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]\n" {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if ev.Seq != seq {
			t.Fatalf("sequence_number %d, want %d", ev.Seq, seq)
		}
		seq++
		switch {
		case strings.HasSuffix(ev.Type, ".delta"):
			deltas[ev.ItemID] += ev.Delta
		case ev.Type == "response.output_text.done" || ev.Type == "response.reasoning_summary_text.done":
			if *ev.Text != deltas[ev.ItemID] {
				t.Fatalf("%s: %q, the deltas %q", ev.Type, *ev.Text, deltas[ev.ItemID])
			}
		case ev.Type == "response.function_call_arguments.done":
			if *ev.Arguments != deltas[ev.ItemID] {
				t.Fatalf("%s: %q, the deltas %q", ev.Type, *ev.Arguments, deltas[ev.ItemID])
			}
		case ev.Type == "response.output_item.done":
			for len(items) <= ev.Index {
				items = append(items, nil)
			}
			items[ev.Index] = ev.Item
		case ev.Response != nil && ev.Type != "response.created" && ev.Type != "response.in_progress":
			if len(ev.Response.Output) != len(items) {
				t.Fatalf("%d items in the output, %d done", len(ev.Response.Output), len(items))
			}
			for i, it := range ev.Response.Output {
				if !bytes.Equal(it, items[i]) {
					t.Fatalf("output[%d] %s, done %s", i, it, items[i])
				}
			}
		}
	}
}
