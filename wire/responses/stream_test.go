package responses_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
