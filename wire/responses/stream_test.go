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
