package anthropic_test

import (
	"bytes"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/internal/sse"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// sdkUsage is the usage a client built on Anthropic's SDKs ends with: its
// stream accumulator takes message_start's usage, then overwrites
// output_tokens from every message_delta and the other counts from the
// message_deltas that carry them (non-null). It also returns the usage of
// message_start alone, which simpler clients keep for the input. Only the
// token counts are kept (cost_usd, a ctxkit field, is not a count).
func sdkUsage(t *testing.T, stream []byte) (final, start map[string]int64) {
	t.Helper()
	for ev, err := range sse.Read(bytes.NewReader(stream), 0) {
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Message struct {
				Usage map[string]*json.Number `json:"usage"`
			} `json:"message"`
			Usage map[string]*json.Number `json:"usage"`
		}
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			t.Fatalf("%s: %v", ev.Data, err)
		}
		switch ev.Name {
		case "message_start":
			start, final = map[string]int64{}, map[string]int64{}
			for k, n := range v.Message.Usage {
				if i, ok := tokenCount(n); ok {
					start[k], final[k] = i, i
				}
			}
		case "message_delta":
			for k, n := range v.Usage {
				if i, ok := tokenCount(n); ok {
					final[k] = i
				}
			}
		}
	}
	return final, start
}

// tokenCount is n as a token count; false for null or a number that is not
// an integer.
func tokenCount(n *json.Number) (int64, bool) {
	if n == nil {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// anthropicUsage is a canonical usage in the API's fields.
func anthropicUsage(u chat.Usage) map[string]int64 {
	return map[string]int64{
		"input_tokens":                max(u.Input-u.CacheRead-u.CacheWrite, 0),
		"cache_read_input_tokens":     u.CacheRead,
		"cache_creation_input_tokens": u.CacheWrite,
		"output_tokens":               u.Output,
	}
}

func sameUsage(a, b map[string]int64) bool {
	for _, k := range []string{"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"} {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

func chunksOf(cs []chat.Chunk) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		for _, c := range cs {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// TestUsageFromEveryUpstream: a client of the Anthropic dialect that
// reads a stream from any other upstream ends with the upstream's usage —
// the input tokens too, though those upstreams report them only at or
// after the first content and Anthropic's own stream has them in
// message_start — because every message_delta carries the whole usage
// and the SDKs take the counts it carries.
func TestUsageFromEveryUpstream(t *testing.T) {
	n := 0
	for _, p := range providers.All() {
		if p.Upstream == nil || p.Name == "anthropic" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", p.Name, "testdata", "stream", "*"))
		for _, f := range files {
			if strings.HasSuffix(f, ".chunks.json") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var cs []chat.Chunk
			failed := false
			for c, err := range p.Upstream.Decode(bytes.NewReader(data)) {
				if err != nil {
					failed = true
					break
				}
				cs = append(cs, c)
			}
			want, _ := chat.Collect(chunksOf(cs))
			if failed || want.Error != nil || want.Usage == (chat.Usage{}) {
				continue // no usage to end with
			}
			n++
			var buf bytes.Buffer
			if err := anthropic.EncodeStream(&buf, nil, "m", "msg_1", chunksOf(cs)); err != nil {
				t.Fatal(err)
			}
			final, start := sdkUsage(t, buf.Bytes())
			if w := anthropicUsage(want.Usage); !sameUsage(final, w) {
				t.Errorf("%s/%s: the client ends with %v, the upstream reported %v\n%s", p.Name, filepath.Base(f), final, w, buf.String())
			}
			// Input tokens reported with or before the first content
			// (Gemini's first chunk carries both) are in message_start.
			if first := firstUsage(cs); first != nil {
				if w := anthropicUsage(*first)["input_tokens"]; start["input_tokens"] != w {
					t.Errorf("%s/%s: message_start has input_tokens %d, the upstream reported %d before its content\n%s", p.Name, filepath.Base(f), start["input_tokens"], w, buf.String())
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d fixtures with usage", n)
	}
}

// TestUsageInMessageStart: input tokens the upstream reports before the
// first content are in message_start, as Anthropic's own stream has
// them, for clients that read the input there; the final counts still
// come in message_delta.
func TestUsageInMessageStart(t *testing.T) {
	cs := []chat.Chunk{
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 120, CacheRead: 100}},
		{Type: chat.ChunkText, Text: "Hi"},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 120, CacheRead: 100, Output: 9}},
	}
	var buf bytes.Buffer
	if err := anthropic.EncodeStream(&buf, nil, "m", "msg_1", chunksOf(cs)); err != nil {
		t.Fatal(err)
	}
	final, start := sdkUsage(t, buf.Bytes())
	if start["input_tokens"] != 20 || start["cache_read_input_tokens"] != 100 || start["output_tokens"] != 0 {
		t.Fatalf("message_start usage %v", start)
	}
	if !sameUsage(final, anthropicUsage(*cs[3].Usage)) {
		t.Fatalf("final usage %v", final)
	}
}

// firstUsage is the usage chunks report before any content, nil when
// content comes first.
func firstUsage(cs []chat.Chunk) *chat.Usage {
	for _, c := range cs {
		switch c.Type {
		case chat.ChunkUsage:
			return c.Usage
		case chat.ChunkText, chat.ChunkReasoning, chat.ChunkToolCallStart:
			return nil
		}
	}
	return nil
}
