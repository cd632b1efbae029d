package responses_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
)

type encodeCase struct {
	Name    string            `json:"name"`
	Input   json.RawMessage   `json:"input"`
	Options responses.Options `json:"options"`
	Error   string            `json:"error"`
}

type encoded struct {
	Request  *responses.Request `json:"request"`
	Warnings []string           `json:"warnings"`
}

// TestEncodeRequest encodes the canonical requests of
// testdata/encode.json, and every request of testdata/requests.json that
// a Responses client may send (the round trip dialect → canonical →
// upstream), and compares them with testdata/encode.golden.json.
func TestEncodeRequest(t *testing.T) {
	var cases []encodeCase
	data, err := os.ReadFile("testdata/encode.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	reqs := map[string]chat.Request{}
	for _, c := range cases {
		req, err := chat.DecodeRequest(c.Input)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if c.Name == "format and temperature" {
			req.Format = &chat.OutputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)}
			delete(req.Extra, "output_config")
		}
		reqs[c.Name] = req
	}
	for _, c := range readRequestCases(t) {
		if c.Error == "" {
			req, err := responses.DecodeRequest(c.body())
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			reqs["responses client: "+c.Name] = req
			cases = append(cases, encodeCase{Name: "responses client: " + c.Name})
		}
	}
	got := map[string]encoded{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			req := reqs[c.Name]
			before, _ := json.Marshal(req)
			out, warns, err := responses.EncodeRequest(req, c.Options)
			if c.Error != "" {
				if err == nil || !strings.Contains(err.Error(), c.Error) {
					t.Fatalf("got %v, want an error with %q", err, c.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(req); string(after) != string(before) {
				t.Errorf("the request changed")
			}
			e := encoded{Request: out, Warnings: []string{}}
			for _, w := range warns {
				e.Warnings = append(e.Warnings, w.String())
			}
			got[c.Name] = e
		})
	}
	out, _ := json.MarshalIndent(got, "", "  ")
	golden(t, "testdata/encode.golden.json", append(out, '\n'))
}

// writeCounter counts the writes it takes, and fails from write fail on
// (0: never).
type writeCounter struct {
	writes, fail int
	buf          bytes.Buffer
}

var errWrite = errors.New("the client went away")

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	if w.fail > 0 && w.writes >= w.fail {
		return 0, errWrite
	}
	return w.buf.Write(p)
}

// TestEncodeStreamWritesByChunk: the events a chunk makes leave in one
// write (the start's two, the first delta's item, part and delta, the
// end's done events, terminal event and [DONE]), and a write error ends
// the stream with that error.
func TestEncodeStreamWritesByChunk(t *testing.T) {
	chunks := []chat.Chunk{{Type: chat.ChunkText, Text: "Hi"}, {Type: chat.ChunkText, Text: " there"},
		{Type: chat.ChunkUsage, Usage: &chat.Usage{Input: 1, Output: 2}},
		{Type: chat.ChunkStop, Stop: &chat.Stop{Reason: chat.StopEndTurn}}}
	var w writeCounter
	if err := responses.EncodeStream(&w, nil, "m", "resp_w", 1, replay(chunks)); err != nil {
		t.Fatal(err)
	}
	if w.writes != 4 {
		t.Errorf("%d writes, want 4 (start, first delta, second delta, end)", w.writes)
	}
	if n := strings.Count(w.buf.String(), "\nevent: ") + 1; n != 10 {
		t.Errorf("%d events, want 10:\n%s", n, w.buf.String())
	}
	if !strings.HasSuffix(w.buf.String(), "data: [DONE]\n\n") {
		t.Errorf("the stream does not end with [DONE]:\n%s", w.buf.String())
	}
	for fail := 1; fail <= 4; fail++ {
		w := writeCounter{fail: fail}
		if err := responses.EncodeStream(&w, nil, "m", "resp_w", 1, replay(chunks)); !errors.Is(err, errWrite) {
			t.Errorf("write %d fails: EncodeStream returned %v", fail, err)
		}
		if w.writes != fail {
			t.Errorf("write %d fails: %d writes were tried", fail, w.writes)
		}
	}
}
