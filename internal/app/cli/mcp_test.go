package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/cli"
)

// TestMCPStdioAnswersAllBeforeExit: a client that writes its requests and
// closes its end at once (as a script piping a file does) gets an answer
// to every request 'ctxkit mcp' read, then the command exits 0.
func TestMCPStdioAnswersAllBeforeExit(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	tok := mint(t, "--data", data, "--owner", "acme", "--agent", "bot", "--roles", "emitter")
	const n = 20
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= n; i++ {
		if i%2 == 0 {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"breadcrumb_create","arguments":{"title":"t%d","context":{"i":%d}}}}`+"\n", i, i, i)
		} else {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"breadcrumb_list","arguments":{}}}`+"\n", i)
		}
	}
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), []string{"mcp", "--server", s.url, "--token", tok}, strings.NewReader(in.String()), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	answered := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.ID == nil {
			continue // a notification from the server
		}
		if m.Result == nil || strings.Contains(string(m.Result), `"isError":true`) {
			t.Errorf("request %d: %s", *m.ID, line)
		}
		answered[*m.ID] = true
	}
	for i := 0; i <= n; i++ {
		if !answered[i] {
			t.Errorf("request %d got no answer before exit", i)
		}
	}
	if code, body := call(t, "GET", s.url+"/breadcrumbs?limit=100", tok, ""); code != 200 || strings.Count(body, `"title":"t`) != n/2 {
		t.Fatalf("breadcrumbs created: %d %s", code, body)
	}
}
