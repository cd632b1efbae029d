package responses_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// FuzzDecodeRequest: any body either decodes, and then encodes for the
// Responses upstream without an error, or is refused with a *chat.Error.
func FuzzDecodeRequest(f *testing.F) {
	for _, c := range readRequestCases(f) {
		f.Add(c.body())
	}
	f.Add([]byte(`{"input":[{"type":"reasoning","summary":[],"encrypted_content":"ctxkit.redacted_thinking:x"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := responses.DecodeRequest(body)
		if err != nil {
			var ce *chat.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T %v is not a *chat.Error", err, err)
			}
			return
		}
		out, _, err := responses.EncodeRequest(req, responses.Options{})
		if err != nil {
			t.Fatalf("a decoded request does not encode: %v", err)
		}
		sameAsEncodingJSON(t, out)
		if _, err := json.Marshal(req); err != nil {
			t.Fatalf("a decoded request does not marshal: %v", err)
		}
	})
}

// FuzzDecodeStream: any stream decodes to chunks (and perhaps an error)
// that the dialect writes as a stream and a response without failing.
func FuzzDecodeStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var chunks []chat.Chunk
		for c, err := range responses.DecodeStream(bytes.NewReader(in)) {
			if err != nil {
				break
			}
			chunks = append(chunks, c)
		}
		if err := responses.EncodeStream(io.Discard, nil, "m", "resp_f", 1, replay(chunks)); err != nil {
			t.Fatalf("EncodeStream: %v", err)
		}
		res, err := chat.Collect(replay(chunks))
		if err != nil {
			t.Fatal(err)
		}
		body, err := responses.EncodeResponse(res, nil, "m", "resp_f", 1)
		if err != nil {
			t.Fatalf("EncodeResponse: %v", err)
		}
		if !json.Valid(body) {
			t.Fatalf("EncodeResponse wrote invalid JSON: %s", body)
		}
	})
}
