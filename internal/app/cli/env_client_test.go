package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/cli"
)

// TestClientFlagsFromEnv: 'ctxkit index' writing to a server takes the
// server, the token and --json from CTXKIT_SERVER, CTXKIT_TOKEN and
// CTXKIT_JSON; a --token on the command line wins over CTXKIT_TOKEN.
func TestClientFlagsFromEnv(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	tok := mint(t, "--data", data, "--admin")
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("from the environment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	index := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"index", "--repo", repo}, args...), strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	t.Setenv("CTXKIT_SERVER", s.url)
	t.Setenv("CTXKIT_TOKEN", tok)
	t.Setenv("CTXKIT_JSON", "true")
	code, out, errOut := index()
	if code != 0 {
		t.Fatalf("index from the environment: exit %d: %s", code, errOut)
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(out), &summary); err != nil {
		t.Fatalf("CTXKIT_JSON=true: the summary is not JSON: %v: %q", err, out)
	}
	if code, body := call(t, "GET", s.url+"/breadcrumbs?limit=10", tok, ""); code != 200 || !strings.Contains(body, "notes.txt") {
		t.Fatalf("the server holds no breadcrumb of notes.txt: %d %s", code, body)
	}

	// The command line wins, either way round.
	t.Setenv("CTXKIT_TOKEN", "not-a-token")
	if code, _, errOut := index("--token", tok); code != 0 {
		t.Fatalf("--token over a bad CTXKIT_TOKEN: exit %d: %s", code, errOut)
	}
	// A change, so that the run has something to write.
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CTXKIT_TOKEN", tok)
	if code, _, errOut := index("--token", "not-a-token"); code != 1 || !strings.Contains(errOut, "401") && !strings.Contains(strings.ToLower(errOut), "token") {
		t.Fatalf("a bad --token over a good CTXKIT_TOKEN: exit %d: %s", code, errOut)
	}
	if code, out, errOut := index("--json=false"); code != 0 || out == "" || strings.HasPrefix(out, "{") {
		t.Fatalf("--json=false over CTXKIT_JSON=true: exit %d: %q %s", code, out, errOut)
	}
}
