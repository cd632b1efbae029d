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
