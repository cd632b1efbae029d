package responses_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/providers"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// TestEveryUpstreamFixture answers every stream fixture of every row of
// the provider table in the Responses dialect and reads the answer back
// as a Responses client would: the same content blocks (text, signed and
// redacted reasoning, calls and their arguments), the same usage but the
// cost (the dialect has none), the same kind of stop, and an error that
// is retryable exactly when the upstream's was.
func TestEveryUpstreamFixture(t *testing.T) {
	n := 0
	for _, p := range providers.All() {
		if p.Upstream == nil {
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
			chunks, err := wiretest.DecodeAll(p.Upstream.Decode, bytes.NewReader(data))
			if err != nil || !has(chunks, chat.ChunkStop) && !has(chunks, chat.ChunkError) {
				continue // a failing or cut stream is its decoder's own test
			}
			n++
			t.Run(p.Name+"/"+filepath.Base(f), func(t *testing.T) {
				var buf bytes.Buffer
				out := wire.Outgoing{Model: "m", ID: "resp_1", Created: 1}
				if err := responses.EncodeStream(&buf, nil, "m", "resp_1", 1, replay(chunks)); err != nil {
					t.Fatal(err)
				}
				readEvents(t, buf.Bytes())
				back, err := wiretest.DecodeAll(responses.DecodeStream, &buf)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := chat.Collect(replay(chunks))
				got, _ := chat.Collect(replay(back))
				want.Usage.Cost = nil
				if want.Stop.Reason == chat.StopSequence {
					want.Stop.Reason = chat.StopEndTurn
				}
				if want.Stop.Reason == chat.StopError && want.Error == nil {
					// A failure with no error of its own is
					// response.failed, whose error is retryable.
					want.Error = &chat.StreamError{Retryable: true}
				}
				for i := range want.Content {
					if b := &want.Content[i]; b.Type == chat.TypeToolUse && b.ID == "" && i < len(got.Content) {
						// A call without an id gets one: the client must
						// name it in its output.
						if !strings.HasPrefix(got.Content[i].ID, "call_") {
							t.Errorf("content[%d]: id %q", i, got.Content[i].ID)
						}
						got.Content[i].ID = ""
					}
				}
				if want.Error != nil {
					want.Stop = chat.Stop{Reason: chat.StopError}
					want.Error = &chat.StreamError{Retryable: want.Error.Retryable}
					if got.Error != nil {
						got.Error = &chat.StreamError{Retryable: got.Error.Retryable}
					}
				}
				want.Stop.Raw, got.Stop.Raw = "", ""
				wj, _ := json.Marshal(want)
				gj, _ := json.Marshal(got)
				if d := wiretest.Diff(wj, gj); d != "" {
					t.Errorf("%s\n got: %s\nwant: %s", d, gj, wj)
				}
				if _, err := responses.Dialect().Response(want, out); err != nil {
					t.Errorf("Response: %v", err)
				}
			})
		}
	}
	if n < 20 {
		t.Errorf("only %d fixtures", n)
	}
}
