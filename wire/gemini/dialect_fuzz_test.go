package gemini_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/gemini"
)

// FuzzDialectDecode: any body is read or refused with a *chat.Error,
// never a panic; what is read encodes to JSON, and to a Gemini request.
func FuzzDialectDecode(f *testing.F) {
	for _, c := range loadRequestCases(f) {
		f.Add(c.body())
	}
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"parts":[{"function_response":{"name":"f","response":{"output":"x"}}}]}]}`))
	// A thought part holding sealed redacted thinking, and one with text.
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"thought":true,"thoughtSignature":"` + wire.SealRedactedFor(wire.HomeBedrock, "ZW5j") + `"},{"thought":true,"text":"t","thoughtSignature":"Y3R4awFyZW5j"},{"thought":true,"text":"` + gemini.RedactedThought + `","thoughtSignature":"Y3R4awFyZW5j"},{"text":"a"}]}]}`))
	// The placeholder come back without its envelope, alone in its turn.
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"thought":true,"text":"` + gemini.RedactedThought + `"}]}]}`))
	d := gemini.Dialect()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := d.Decode(body, wire.Incoming{Model: "gemini-3-pro-preview"})
		if err != nil {
			var ce *chat.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T %v", err, err)
			}
			return
		}
		if _, err := json.Marshal(req); err != nil {
			t.Fatalf("marshal: %v", err)
		}
		for _, m := range req.Messages {
			for _, b := range m.Content.Blocks {
				if b.Type == chat.TypeToolUse && b.ID == "" || b.Type == chat.TypeToolResult && b.ToolUseID == "" {
					t.Fatalf("a block without its id: %+v", b)
				}
			}
		}
		_, _, _ = gemini.EncodeRequest(req, gemini.Options{})
	})
}

// FuzzDialectStream: whatever an upstream stream decodes to, the
// dialect's JSON-array stream is one valid JSON array, and its SSE stream
// ends with a blank line.
func FuzzDialectStream(f *testing.F) {
	for _, name := range []string{"text.sse", "function-call.sse", "thoughts.sse", "error.sse", "parallel-calls.sse", "array-text.array.json"} {
		data, err := os.ReadFile("testdata/stream/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	d := gemini.Dialect()
	f.Fuzz(func(t *testing.T, upstream []byte) {
		var arr bytes.Buffer
		_ = d.Stream(&arr, outgoing(false), gemini.DecodeStream(bytes.NewReader(upstream)))
		if !json.Valid(arr.Bytes()) || arr.Bytes()[0] != '[' {
			t.Fatalf("not a JSON array: %q", arr.Bytes())
		}
		var sse bytes.Buffer
		_ = d.Stream(&sse, outgoing(true), gemini.DecodeStream(bytes.NewReader(upstream)))
		if sse.Len() > 0 && !strings.HasSuffix(sse.String(), "\r\n\r\n") {
			t.Fatalf("no blank line at the end: %q", sse.Bytes())
		}
		if _, apiErr, rest := readLikeSDK(sse.Bytes()); rest != "" || (apiErr != nil && apiErr.Code == 0) {
			t.Fatalf("an SDK cannot read it: %+v %q", apiErr, rest)
		}
	})
}
