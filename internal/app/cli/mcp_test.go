package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// TestMCPChecksServerAndTokenAtStart: a wrong URL or token is an error
// at start, exit 1 naming the flag, before any MCP message is read.
func TestMCPChecksServerAndTokenAtStart(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	for _, c := range []struct {
		name, server, token, want string
	}{
		{"refused token", s.url, "not.a.token", "--token: the server at " + s.url + " refused it"},
		{"unreachable", "http://127.0.0.1:1", "t", "--server http://127.0.0.1:1: not reachable"},
		{"not ctxkit", s.url + "/nothing", mint(t, "--data", data, "--owner", "o", "--agent", "a", "--roles", "subscriber"), "not a ctxkit server's answer"},
	} {
		var out, errOut bytes.Buffer
		code := cli.Main(context.Background(), []string{"mcp", "--server", c.server, "--token", c.token}, strings.NewReader(""), &out, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), c.want) || out.Len() != 0 {
			t.Errorf("%s: exit %d: %s %s", c.name, code, errOut.String(), out.String())
		}
	}
}

// TestVersionIsOneString: ctxkit version, GET /health and the MCP
// serverInfo over stdio and over HTTP all say the same version.
func TestVersionIsOneString(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	tok := mint(t, "--data", data, "--owner", "acme", "--agent", "bot", "--roles", "emitter")
	var vout bytes.Buffer
	if code := cli.Main(context.Background(), []string{"version"}, nil, &vout, io.Discard); code != 0 {
		t.Fatal(code)
	}
	long := strings.TrimSpace(vout.String())
	code, body := call(t, "GET", s.url+"/health", "", "")
	var h struct{ Status, Version string }
	if code != 200 || json.Unmarshal([]byte(body), &h) != nil || h.Version == "" || !strings.HasPrefix(long, "ctxkit "+h.Version) {
		t.Fatalf("health %d %s; version %q", code, body, long)
	}
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	var out bytes.Buffer
	if code := cli.Main(context.Background(), []string{"mcp", "--server", s.url, "--token", tok}, strings.NewReader(initialize+"\n"), &out, io.Discard); code != 0 {
		t.Fatalf("mcp exit %d", code)
	}
	if want := `"serverInfo":{"name":"ctxkit","version":"` + h.Version + `"}`; !strings.Contains(out.String(), want) {
		t.Fatalf("stdio: want %s in %s", want, out.String())
	}
	req, _ := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(initialize))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want := `"serverInfo":{"name":"ctxkit","version":"` + h.Version + `"}`; !strings.Contains(string(b), want) {
		t.Fatalf("HTTP: want %s in %s", want, b)
	}
}
