package mcpserver_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/internal/app/cli"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/ctxkit/ctxkit/workspace"
)

type fixture struct {
	url, workspace string
	key            ed25519.PrivateKey
}

func start(t *testing.T) *fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ctxkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	ws := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n// handleOrders serves orders\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "untracked.go"), []byte("// handleOrders in a file nobody tracks\n"), 0o644)
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	// The manifest lists the files a disk scan may read.
	if err := workspace.WriteManifest(root, workspace.Manifest{Files: map[string]workspace.ManifestEntry{"main.go": {}}}); err != nil {
		t.Fatal(err)
	}
	api := server.New(server.Options{Store: db, Key: key, Workspaces: []string{ws}})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { api.StopStreams(); srv.Close(); db.Close() })
	return &fixture{url: srv.URL, workspace: ws, key: key}
}

func (f *fixture) token(t *testing.T, owner string, roles ...string) string {
	tok, err := server.Mint(f.key, server.Principal{OwnerID: owner, AgentID: "agent", Roles: roles}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects the SDK's client to /mcp with a token.
func (f *fixture) httpSession(t *testing.T, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
}

// stdioSession runs 'ctxkit mcp' in-process on pipes and connects to it.
func (f *fixture) stdioSession(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		done <- cli.Main(ctx, []string{"mcp", "--server", f.url, "--token", token}, inR, outW, &stderr)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		inW.Close()
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("ctxkit mcp exited %d: %s", code, stderr.String())
		}
	})
	return s
}

type reply struct {
	isError bool
	env     envelope.Result[json.RawMessage]
	text    string
}

func call(t *testing.T, s *mcp.ClientSession, name string, args any) reply {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var r reply
	r.isError = res.IsError
	if err := json.Unmarshal(data, &r.env); err != nil {
		t.Fatalf("%s: structured content is not an envelope: %s", name, data)
	}
	if err := r.env.Validate(); err != nil {
		t.Fatalf("%s: %v: %s", name, err, data)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks", name, len(res.Content))
	}
	r.text = res.Content[0].(*mcp.TextContent).Text
	var fromText envelope.Result[json.RawMessage]
	if err := json.Unmarshal([]byte(r.text), &fromText); err != nil || fromText.Meta.Status != r.env.Meta.Status {
		t.Fatalf("%s: text copy is not the envelope: %s", name, r.text)
	}
	if r.isError != (r.env.Meta.Status == envelope.StatusError) {
		t.Fatalf("%s: isError %v with status %s", name, r.isError, r.env.Meta.Status)
	}
	return r
}

func wantStatus(t *testing.T, r reply, status envelope.Status, code string) {
	t.Helper()
	if r.env.Meta.Status != status || r.env.Meta.ErrorCode != code {
		t.Fatalf("got %s %q (%s), want %s %q", r.env.Meta.Status, r.env.Meta.ErrorCode, r.env.Meta.Message, status, code)
	}
}

// exercise runs the same checks over any transport.
func exercise(t *testing.T, f *fixture, s *mcp.ClientSession, other *mcp.ClientSession) {
	ctx := context.Background()
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.OutputSchema == nil || tl.InputSchema == nil {
			t.Errorf("%s: no output or input schema", tl.Name)
		}
	}
	if strings.Join(names, ",") != "breadcrumb_create,breadcrumb_get,breadcrumb_list,breadcrumb_search,breadcrumb_update,workspace_search" {
		t.Fatalf("tools %v", names)
	}

	r := call(t, s, "breadcrumb_create", map[string]any{"title": "Orders service", "context": map[string]any{"owner": "team-a", "secret": "hunter2"},
		"llm_hints": map[string]any{"exclude": []string{"secret"}}, "tags": []string{"svc"}})
	wantStatus(t, r, envelope.StatusOK, "")
	var created struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
	}
	json.Unmarshal(r.env.Items[0], &created)
	if created.ID == "" || created.Version != 1 || r.env.Meta.Source != envelope.SourceStore {
		t.Fatalf("create: %s", r.text)
	}

	r = call(t, s, "breadcrumb_get", map[string]any{"id": created.ID})
	wantStatus(t, r, envelope.StatusOK, "")
	if r.env.Meta.Source != envelope.SourceView || strings.Contains(r.text, "hunter2") || !strings.Contains(r.text, "team-a") {
		t.Fatalf("get is not the view: %s", r.text)
	}

	// A view whose rules fail falls back, and says so.
	r = call(t, s, "breadcrumb_create", map[string]any{"title": "Spinning orders", "context": map[string]any{"k": "v"},
		"llm_hints": map[string]any{"transform": map[string]any{"spin": map[string]any{"type": "jq", "query": "def f: f; f"}}}, "tags": []string{"spin"}})
	var spun struct {
		ID string `json:"id"`
	}
	json.Unmarshal(r.env.Items[0], &spun)
	r = call(t, s, "breadcrumb_get", map[string]any{"id": spun.ID})
	if r.env.Meta.Status != envelope.StatusFallback || r.env.Meta.Source != envelope.SourceLocalFallback || !strings.Contains(r.env.Meta.Message, "view") {
		t.Fatalf("a fallen-back view reported as %s/%s: %s", r.env.Meta.Status, r.env.Meta.Source, r.text)
	}
	r = call(t, s, "breadcrumb_search", map[string]any{"q": "orders", "tags": []string{"spin"}})
	if len(r.env.Items) != 1 || !strings.Contains(r.env.Meta.Message, spun.ID) || !strings.Contains(r.text, `"view_status":"FALLBACK"`) {
		t.Fatalf("search does not name the fallen-back view: %s", r.text)
	}

	r = call(t, s, "breadcrumb_search", map[string]any{"q": "orders", "tags": []string{"svc"}})
	wantStatus(t, r, envelope.StatusOK, "")
	if len(r.env.Items) != 1 || r.env.Meta.Source != envelope.SourceStore || !strings.Contains(r.text, `"score"`) {
		t.Fatalf("search: %s", r.text)
	}
	if r := call(t, s, "breadcrumb_search", map[string]any{"q": "hunter2"}); len(r.env.Items) != 0 {
		t.Fatalf("a hidden field was found: %s", r.text)
	}

	r = call(t, s, "breadcrumb_list", map[string]any{"limit": 5, "tags": []string{"svc"}})
	wantStatus(t, r, envelope.StatusOK, "")
	if len(r.env.Items) != 1 {
		t.Fatalf("list: %s", r.text)
	}

	r = call(t, s, "breadcrumb_update", map[string]any{"id": created.ID, "expected_version": 1, "title": "Orders service v2"})
	wantStatus(t, r, envelope.StatusOK, "")
	if !strings.Contains(r.text, `"version":2`) {
		t.Fatalf("update: %s", r.text)
	}
	// Errors are results carrying an ERROR envelope, with isError.
	wantStatus(t, call(t, s, "breadcrumb_update", map[string]any{"id": created.ID, "expected_version": 1, "title": "x"}), envelope.StatusError, "version_mismatch")
	wantStatus(t, call(t, s, "breadcrumb_update", map[string]any{"id": created.ID, "title": "x"}), envelope.StatusError, "invalid_arguments")
	wantStatus(t, call(t, s, "breadcrumb_get", map[string]any{"id": "01900000-0000-7000-8000-000000000000"}), envelope.StatusError, "not_found")
	wantStatus(t, call(t, s, "breadcrumb_get", map[string]any{"id": created.ID, "extra": 1}), envelope.StatusError, "invalid_arguments")
	wantStatus(t, call(t, s, "breadcrumb_get", map[string]any{"id": 7}), envelope.StatusError, "invalid_arguments")
	wantStatus(t, call(t, s, "breadcrumb_search", map[string]any{"q": ""}), envelope.StatusError, "invalid")
	wantStatus(t, call(t, s, "breadcrumb_search", map[string]any{"q": strings.Repeat("x", 2000)}), envelope.StatusError, "invalid")
	wantStatus(t, call(t, s, "breadcrumb_create", map[string]any{"title": "no context"}), envelope.StatusError, "invalid_arguments")
	wantStatus(t, call(t, s, "workspace_search", map[string]any{"repo": "../etc", "q": "x"}), envelope.StatusError, "invalid")
	wantStatus(t, call(t, s, "workspace_search", map[string]any{"repo": "nope", "q": "x"}), envelope.StatusError, "unknown_repo")

	// A workspace without a fresh index: a FALLBACK from disk (its tracked
	// files only), not an error.
	r = call(t, s, "workspace_search", map[string]any{"repo": "proj", "q": "handleorders"})
	wantStatus(t, r, envelope.StatusFallback, "")
	if r.isError || r.env.Meta.FreshnessState != envelope.Unknown || len(r.env.Items) != 1 || !strings.Contains(r.text, "main.go") {
		t.Fatalf("workspace search: %s", r.text)
	}

	// An unknown tool is a protocol error.
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool was called")
	}

	// Another owner sees none of it.
	wantStatus(t, call(t, other, "breadcrumb_get", map[string]any{"id": created.ID}), envelope.StatusError, "not_found")
	if r := call(t, other, "breadcrumb_search", map[string]any{"q": "orders"}); len(r.env.Items) != 0 {
		t.Fatalf("another owner found %s", r.text)
	}
}

func TestStreamableHTTP(t *testing.T) {
	f := start(t)
	s, err := f.httpSession(t, f.token(t, "acme", server.RoleEmitter))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := f.httpSession(t, f.token(t, "evil", server.RoleCurator))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	exercise(t, f, s, other)

	// Without a valid token there is no session.
	if s, err := f.httpSession(t, "garbage"); err == nil {
		s.Close()
		t.Fatal("connected without a valid token")
	}
	resp, err := http.Post(f.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without a token: %d", resp.StatusCode)
	}
	// A subscriber may read but not write, through MCP as over HTTP.
	ro, err := f.httpSession(t, f.token(t, "acme", server.RoleSubscriber))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	wantStatus(t, call(t, ro, "breadcrumb_create", map[string]any{"title": "x", "context": map[string]any{}}), envelope.StatusError, "forbidden")
}

func TestStdio(t *testing.T) {
	f := start(t)
	s := f.stdioSession(t, f.token(t, "acme", server.RoleEmitter))
	other := f.stdioSession(t, f.token(t, "evil", server.RoleCurator))
	exercise(t, f, s, other)
	// A server that goes down after ctxkit mcp checked it at start: an
	// ERROR envelope, not a crash.
	var answered atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answered.Add(1) == 1 {
			w.Write([]byte(`{"items":[]}`))
			return
		}
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close()
		}
	}))
	defer flaky.Close()
	down := &fixture{url: flaky.URL, key: f.key}
	s2 := down.stdioSession(t, "tok")
	wantStatus(t, call(t, s2, "breadcrumb_list", map[string]any{}), envelope.StatusError, "unavailable")
}
