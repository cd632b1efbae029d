package server_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

var mcpHeaders = []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18"}

const toolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// TestMCPOrigin: MCP's rule against DNS rebinding on a server listening on
// loopback: no Origin (no browser) and loopback origins pass, configured
// origins pass, any other Origin is 403 forbidden_origin, before the token
// is even looked at.
func TestMCPOrigin(t *testing.T) {
	e := newEnv(t, func(o *server.Options) { o.MCPOrigins = []string{"https://app.example.com/"} })
	tok := e.token("acme", "a", server.RoleEmitter)
	u, _ := url.Parse(e.url)
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{e.url, true},
		{"http://localhost:5173", true},
		{"http://LOCALHOST", true},
		{"http://127.9.9.9:1", true},
		{"http://[::1]:8700", true},
		{"https://app.example.com", true},
		{"http://evil.example", false},
		{"http://evil.example:" + u.Port(), false},
		{"http://127.0.0.1.evil.example", false},
		{"http://localhost.evil.example", false},
		{"https://app.example.com.evil.example", false},
		{"http://app.example.com", false},
		{"null", false},
		{"file://", false},
		{"http://localhost/path", false},
		{"http://user@localhost", false},
		{"not a url", false},
		{"http://%zz", false},
	} {
		h := mcpHeaders
		if tc.origin != "" {
			h = append(append([]string{}, mcpHeaders...), "Origin", tc.origin)
		}
		r := e.do("POST", "/mcp", tok, toolsList, h...)
		if tc.ok && (r.status != 200 || !strings.Contains(string(r.body), "breadcrumb_get")) {
			t.Errorf("Origin %q: %d %s", tc.origin, r.status, r.body)
		}
		if !tc.ok && (r.status != 403 || !strings.Contains(string(r.body), `"forbidden_origin"`)) {
			t.Errorf("Origin %q: %d %s; want 403 forbidden_origin", tc.origin, r.status, r.body)
		}
	}
	// Refused before authentication: a page gets no hint about tokens.
	want(t, e.do("POST", "/mcp", "", toolsList, append(append([]string{}, mcpHeaders...), "Origin", "http://evil.example")...), 403, "forbidden_origin")
	// An empty Origin header is an origin that is not this server's.
	want(t, e.do("POST", "/mcp", tok, toolsList, append(append([]string{}, mcpHeaders...), "Origin", "")...), 403, "forbidden_origin")
}

// TestMCPUnknownNotifications: a notification the server does not know is
// accepted and ignored (202, no body), as JSON-RPC has a server do with
// any notification; requests and malformed messages are answered as before.
func TestMCPUnknownNotifications(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/whatever"}`,
		`{"jsonrpc":"2.0","method":"notifications/whatever","params":{"x":[1,2]}}`,
		`{"jsonrpc":"2.0","method":"x-vendor/ping","params":[]}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
	} {
		r := e.do("POST", "/mcp", tok, body, mcpHeaders...)
		if r.status != 202 || len(r.body) != 0 {
			t.Errorf("%s: %d %s; want 202 and no body", body, r.status, r.body)
		}
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"notifications/whatever"}`, // a request: it gets an answer
		`{"jsonrpc":"2.0","id":null,"method":"whatever"}`,
		`{"jsonrpc":"2.0","method":"notifications/whatever","params":5}`,
		`{"method":"notifications/whatever"}`,
		`[{"jsonrpc":"2.0","method":"notifications/whatever"}]`,
		`{"jsonrpc":"2.0","method":`,
	} {
		if r := e.do("POST", "/mcp", tok, body, mcpHeaders...); r.status/100 == 2 {
			t.Errorf("%s: %d %s; want an error", body, r.status, r.body)
		}
	}
	// Still authenticated, and a known request still answered.
	want(t, e.do("POST", "/mcp", "", `{"jsonrpc":"2.0","method":"notifications/whatever"}`, mcpHeaders...), 401, "unauthorized")
	want(t, e.do("POST", "/mcp", tok, toolsList, mcpHeaders...), 200, "breadcrumb_list")
}
