package responses_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// TestStreamsShareNoRoom encodes and forwards streams of every size at
// once, many times over, and checks each client stream against the one
// the same stream made alone: the memory an encoder's buffers start in
// passes from stream to stream, and no stream may see another's bytes
// (a short answer after one that outgrew the room, a call's arguments
// after a long text, an answer cut by a failed write).
func TestStreamsShareNoRoom(t *testing.T) {
	long := strings.Repeat("a long text that outgrows the room the buffers start in. ", 300)
	streams := map[string][]chat.Chunk{
		"short": {
			{Type: chat.ChunkText, Text: "Hi"},
			{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 3, Output: 1}},
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
		},
		"long": {
			{Type: chat.ChunkText, Text: long[:len(long)/2]},
			{Type: chat.ChunkText, Text: long[len(long)/2:]},
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}},
		},
		"calls": {
			{Type: chat.ChunkReasoning, Text: "think first"},
			{Type: chat.ChunkText, Text: "Calling."},
			{Type: chat.ChunkToolCallStart, Index: 0, ID: "call_1", Name: "get_weather"},
			{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `{"city":`},
			{Type: chat.ChunkToolCallDelta, Index: 0, Arguments: `"Paris"}`},
			{Type: chat.ChunkToolCallStart, Index: 1, ID: "call_2", Name: "get_weather"},
			{Type: chat.ChunkToolCallDelta, Index: 1, Arguments: `{"city":"` + strings.Repeat("x", 3000) + `"}`},
			{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopToolUse}},
		},
	}
	names := []string{"short", "long", "calls"}
	// What each stream's client reads, encoded and forwarded, made one at
	// a time.
	type way struct{ name, path string }
	want := map[way]string{}
	upstream := map[string][]byte{}
	encode := func(name string) (string, error) {
		var buf bytes.Buffer
		err := responses.EncodeStream(&buf, benchReq, "resp-bench", "resp_room", 1754000001, replay(streams[name]))
		return buf.String(), err
	}
	forward := func(name string) (string, error) {
		var buf bytes.Buffer
		out := wire.Outgoing{Request: benchReq, Model: "resp-bench", ID: "resp_room", Created: 1754000001}
		fw := responses.Dialect().Forward(out, wire.ForwardOptions{Chunks: true})
		err := fw.Stream(&buf, fw.Decode(bytes.NewReader(upstream[name])))
		return buf.String(), err
	}
	for _, name := range names {
		var up bytes.Buffer
		if err := responses.EncodeStream(&up, benchReq, "resp-up", "resp_up", 1754000000, replay(streams[name])); err != nil {
			t.Fatal(err)
		}
		upstream[name] = up.Bytes()
		for path, f := range map[string]func(string) (string, error){"encode": encode, "forward": forward} {
			got, err := f(name)
			if err != nil {
				t.Fatalf("%s %s: %v", path, name, err)
			}
			want[way{name, path}] = got
		}
	}
	if want[way{"long", "encode"}] != want[way{"long", "forward"}] {
		t.Fatal("a forwarded stream differs from the encoded one")
	}

	const workers, rounds = 4, 30
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds*2)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				name := names[(w+i)%len(names)]
				for path, f := range map[string]func(string) (string, error){"encode": encode, "forward": forward} {
					got, err := f(name)
					if err != nil || got != want[way{name, path}] {
						errs <- path + " " + name
					}
				}
				// A stream whose client went away ends at the failed
				// write, its room given back with something written.
				cut := failingWriter{n: 200}
				if err := responses.EncodeStream(&cut, benchReq, "resp-bench", "resp_cut", 1, replay(streams[name])); err == nil {
					errs <- "cut " + name + ": no error"
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s: the stream differs from the one made alone", e)
	}
}
