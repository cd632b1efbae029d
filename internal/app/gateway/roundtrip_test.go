package gateway_test

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
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/providers"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// TestEveryFixtureThroughEveryDialect: every provider's stream fixture that
// decodes cleanly, written out in the Anthropic and in the OpenAI dialect
// and read back, gives a client the same response: the same content
// blocks, the same final usage (input, output, cache reads and writes),
// the same stop reason and the same error. This is what the gateway does
// to every upstream stream.
func TestEveryFixtureThroughEveryDialect(t *testing.T) {
	// Every row of the provider table ctxkit calls, with its package's
	// stream fixtures.
	decoders := map[string]func(io.Reader) iter.Seq2[chat.Chunk, error]{}
	for _, p := range providers.All() {
		if p.Upstream != nil {
			decoders[p.Name] = p.Upstream.Decode
		}
	}
	dialects := map[string]struct {
		encode func(w io.Writer, chunks iter.Seq2[chat.Chunk, error]) error
		decode func(io.Reader) iter.Seq2[chat.Chunk, error]
	}{
		"anthropic": {func(w io.Writer, c iter.Seq2[chat.Chunk, error]) error {
			return anthropic.EncodeStream(w, func() {}, "m", "msg_1", c)
		}, anthropic.DecodeStream},
		"openai": {func(w io.Writer, c iter.Seq2[chat.Chunk, error]) error {
			return openai.EncodeStream(w, func() {}, "m", "chatcmpl-1", 1, c)
		}, openai.DecodeStream},
	}
	n := 0
	for pkg, decode := range decoders {
		files, _ := filepath.Glob(filepath.Join("..", "..", "..", "wire", pkg, "testdata", "stream", "*"))
		for _, f := range files {
			if strings.HasSuffix(f, ".chunks.json") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var chunks []chat.Chunk
			clean := true
			for c, err := range decode(bytes.NewReader(data)) {
				if err != nil {
					clean = false
					break
				}
				chunks = append(chunks, c)
			}
			if !clean {
				continue // a stream that fails to decode is the decoder's own test
			}
			for name, d := range dialects {
				t.Run(pkg+"/"+filepath.Base(f)+"/"+name, func(t *testing.T) {
					var buf bytes.Buffer
					if err := d.encode(&buf, seq(chunks)); err != nil {
						t.Fatalf("encode: %v", err)
					}
					var back []chat.Chunk
					for c, err := range d.decode(&buf) {
						if err != nil {
							t.Fatalf("decoding our own %s output: %v\n%s", name, err, buf.String())
						}
						back = append(back, c)
					}
					up := chunks
					if name == "openai" {
						// A Chat Completions stream writes a turn's
						// signed reasoning in its last delta.
						up = wiretest.SignedLast(chunks)
					}
					if got, want := collect(t, back, name, up), collect(t, up, name, up); got != want {
						t.Errorf("a %s client would see\n%s\nbut the upstream said\n%s", name, got, want)
					}
				})
				n++
			}
		}
	}
	if n < 60 {
		t.Fatalf("only %d fixture/dialect pairs checked", n)
	}
}

func seq(chunks []chat.Chunk) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// collect is what a client of the dialect makes of a stream, as
// comparable JSON. What the dialects cannot tell apart is compared as one:
// an error is compared by its presence (each dialect has its own error
// types; an upstream that stops in error is an error event for Anthropic),
// OpenAI's finish_reason "stop" covers both end_turn and stop_sequence, and
// an OpenAI client gets an id for a tool call the upstream sent without
// one. A stream cut inside a tool call (no stop) ends that call with the
// fragment received in the OpenAI dialect, which has no per-call end
// marker, so tool inputs are compared only when the stream was not cut.
func collect(t *testing.T, chunks []chat.Chunk, dialect string, upstream []chat.Chunk) string {
	t.Helper()
	r, err := chat.Collect(seq(chunks))
	if err != nil {
		t.Fatal(err)
	}
	up, _ := chat.Collect(seq(upstream))
	hasError := r.Error != nil || r.Stop.Reason == chat.StopError
	stop := r.Stop.Reason
	if stop == chat.StopError {
		stop = ""
	}
	if dialect == "openai" && stop == chat.StopSequence {
		stop = chat.StopEndTurn
	}
	content := make([]chat.Block, len(r.Content))
	copy(content, r.Content)
	for i := range content {
		b := &content[i]
		if b.Type != chat.TypeToolUse {
			continue
		}
		if dialect == "openai" && i < len(up.Content) && up.Content[i].ID == "" {
			b.ID = ""
		}
		if dialect == "openai" && up.Stop.Reason == "" {
			b.Input = nil
		}
	}
	out, err := json.Marshal(map[string]any{
		"content": content,
		"usage":   [4]int64{r.Usage.Input, r.Usage.Output, r.Usage.CacheRead, r.Usage.CacheWrite},
		"stop":    stop,
		"error":   hasError,
	})
	if err != nil {
		t.Fatalf("the client could not read the response: %v", err)
	}
	return string(out)
}
