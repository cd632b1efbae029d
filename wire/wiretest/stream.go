package wiretest

import (
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
)

// Decoder is a wire package's stream decoder.
type Decoder func(r io.Reader) iter.Seq2[chat.Chunk, error]

// StreamResult is what a fixture's ".chunks.json" file holds: the chunks
// the stream decodes to and, when the stream must end in a decode error,
// a substring of that error.
type StreamResult struct {
	Chunks []chat.Chunk `json:"chunks"`
	Error  string       `json:"error,omitempty"`
}

// RunStreamFixtures decodes every fixture in dir (files ending in ext,
// such as ".sse" or ".eventstream") and compares the chunks with the
// StreamResult in the file beside it (name + ".chunks.json"). It needs at
// least min fixtures. The decoder must also close a body it is given when
// the consumer stops early.
func RunStreamFixtures(t *testing.T, dir, ext string, min int, decode Decoder) {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".chunks.json") {
			files = append(files, f)
		}
	}
	if len(files) < min {
		t.Errorf("%s: %d %s fixtures, want at least %d", dir, len(files), ext, min)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ext)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, err := os.ReadFile(strings.TrimSuffix(f, ext) + ".chunks.json")
			if err != nil {
				t.Fatal(err)
			}
			var want StreamResult
			dec := json.NewDecoder(bytes.NewReader(wantJSON))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&want); err != nil {
				t.Fatalf("%s.chunks.json: %v", name, err)
			}
			got, gotErr := DecodeAll(decode, bytes.NewReader(in))
			gj, _ := json.Marshal(StreamResult{Chunks: got})
			wj, _ := json.Marshal(StreamResult{Chunks: want.Chunks})
			if d := Diff(wj, gj); d != "" {
				t.Errorf("chunks differ: %s\n got: %s\nwant: %s", d, gj, wj)
			}
			switch {
			case want.Error == "" && gotErr != nil:
				t.Errorf("unexpected decode error: %v", gotErr)
			case want.Error != "" && (gotErr == nil || !strings.Contains(gotErr.Error(), want.Error)):
				t.Errorf("decode error %v, want one containing %q", gotErr, want.Error)
			}
			// Stopping early closes the body.
			body := &closeRecorder{Reader: bytes.NewReader(in)}
			for range decode(body) {
				break
			}
			if !body.closed {
				t.Errorf("stopping after the first chunk did not close the body")
			}
		})
	}
}

// DecodeAll collects a stream's chunks up to its end or its first error.
func DecodeAll(decode Decoder, r io.Reader) ([]chat.Chunk, error) {
	out := []chat.Chunk{}
	for c, err := range decode(r) {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// BenchDecode measures decoding the fixture at path, against a bare
// json.Unmarshal (into any) of the same event payloads in the same run,
// and reports ns per event for both and the ratio "x-unmarshal" (target:
// at most 1.5). payloads are the JSON payloads of the fixture's events.
func BenchDecode(b *testing.B, path string, decode Decoder, payloads [][]byte) {
	in, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if len(payloads) == 0 {
		b.Fatal("no payloads to compare with")
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	var dec, base int64
	for b.Loop() {
		t0 := nanotime()
		for _, p := range payloads {
			var v any
			if err := json.Unmarshal(p, &v); err != nil {
				b.Fatal(err)
			}
		}
		t1 := nanotime()
		for _, err := range decode(bytes.NewReader(in)) {
			if err != nil {
				b.Fatal(err)
			}
		}
		t2 := nanotime()
		base += t1 - t0
		dec += t2 - t1
	}
	n := float64(b.N) * float64(len(payloads))
	b.ReportMetric(float64(dec)/n, "ns/event")
	b.ReportMetric(float64(base)/n, "unmarshal-ns/event")
	b.ReportMetric(float64(dec)/float64(base), "x-unmarshal")
}

// SignedLast moves the signed reasoning chunks (a signature, redacted
// data) of cs after the others, in their order, their text left where it
// was as a reasoning chunk of its own: where a Chat Completions stream
// writes a turn's reasoning_details, so what a round trip through that
// dialect gives back is compared with SignedLast of what went in.
func SignedLast(cs []chat.Chunk) []chat.Chunk {
	var rest, signed []chat.Chunk
	for _, c := range cs {
		if c.Type == chat.ChunkReasoning && (c.Signature != "" || c.Redacted != "") {
			if c.Text != "" {
				rest = append(rest, chat.Chunk{Type: chat.ChunkReasoning, Text: c.Text})
			}
			c.Text = ""
			signed = append(signed, c)
			continue
		}
		rest = append(rest, c)
	}
	return append(rest, signed...)
}
