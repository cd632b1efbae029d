package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/app/cli"
)

const scaffoldMain = `package main

import "fmt"

func greet(name string) string {
	return "hello " + name
}

func main() {
	fmt.Println(greet("world"))
}
`

const scaffoldWant = `package main

import "fmt"

func greet(name string) string {
	return "hello, " + name + "!"
}

func main() {
	fmt.Println(greet("world"))
}
`

const scaffoldTask = "Make greet add a comma after hello and an exclamation mark at the end."

func sum256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// upstreamRequest is a request the fake upstream got.
type upstreamRequest struct {
	method, path, auth string
	body               []byte
}

// fakeUpstream is an OpenAI-compatible server on loopback: it lists
// models and streams reply, split into several chunks.
type fakeUpstream struct {
	models       []string
	reply        string
	modelsStatus int // when non-zero, GET /models answers this status
	chatStatus   int // when non-zero, POST /chat/completions answers this status
	hang         bool

	mu   sync.Mutex
	reqs []upstreamRequest
	srv  *httptest.Server
}

func newFakeUpstream(t *testing.T, f *fakeUpstream) *fakeUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: f}}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) url() string { return f.srv.URL + "/v1" }

func (f *fakeUpstream) requests() []upstreamRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]upstreamRequest(nil), f.reqs...)
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, upstreamRequest{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), body: body})
	f.mu.Unlock()
	fail := func(status int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"fake upstream says %d","type":"test"}}`, status)
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		if f.modelsStatus != 0 {
			fail(f.modelsStatus)
			return
		}
		var data []map[string]string
		for _, m := range f.models {
			data = append(data, map[string]string{"id": m, "object": "model"})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		if f.chatStatus != 0 {
			fail(f.chatStatus)
			return
		}
		if f.hang {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// Several chunks, cut at arbitrary places (inside the fence, the
		// JSON and its strings).
		const pieces = 7
		step := len(f.reply)/pieces + 1
		for i := 0; i < len(f.reply); i += step {
			piece := f.reply[i:min(len(f.reply), i+step)]
			delta, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": piece}}}})
			fmt.Fprintf(w, "data: %s\n\n", delta)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	default:
		http.NotFound(w, r)
	}
}

// scaffoldRepo is a temporary repository holding src/main.go and a task.
func scaffoldRepo(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "repo", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"repo/src/main.go": scaffoldMain, "task.md": scaffoldTask + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type planDiff struct {
	Path        string `json:"path"`
	Checksum    string `json:"checksum"`
	UnifiedDiff string `json:"unified_diff"`
}

// replyWith is a model's reply: prose around a fenced plan.
func replyWith(diffs []planDiff, commands ...[]string) string {
	p := map[string]any{"diffs": diffs}
	if len(commands) > 0 {
		var cmds []map[string]any
		for _, c := range commands {
			cmds = append(cmds, map[string]any{"program": c[0], "args": c[1:], "timeout_ms": 10000})
		}
		p["post"] = map[string]any{"commands": cmds}
	}
	js, _ := json.MarshalIndent(p, "", "  ")
	return "Here is the plan:\n\n```json\n" + string(js) + "\n```\n\nIt changes greet.\n"
}

var greetDiff = planDiff{
	Path:        "src/main.go",
	Checksum:    sum256(scaffoldMain),
	UnifiedDiff: "--- a/src/main.go\n+++ b/src/main.go\n@@ -5,3 +5,3 @@\n func greet(name string) string {\n-\treturn \"hello \" + name\n+\treturn \"hello, \" + name + \"!\"\n }\n",
}

func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScaffold(t *testing.T) {
	t.Setenv("CTXKIT_TEST_KEY", "sk-test-123")
	dir := scaffoldRepo(t)
	up := newFakeUpstream(t, &fakeUpstream{
		models: []string{"fake-small", "fake-coder"},
		reply:  replyWith([]planDiff{greetDiff}, []string{"touch", "verified.stamp"}),
	})
	record := filepath.Join(dir, "audit.jsonl")
	code, stdout, stderr := runMain(t, "scaffold", filepath.Join(dir, "task.md"), "--model", "fake-coder",
		"--upstream", up.url(), "--api-key-env", "CTXKIT_TEST_KEY", "--root", filepath.Join(dir, "repo"),
		"--context", "src/main.go", "--record", record)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if got := mustRead(t, filepath.Join(dir, "repo", "src", "main.go")); got != scaffoldWant {
		t.Errorf("src/main.go is\n%s\nwant\n%s", got, scaffoldWant)
	}
	if _, err := os.Stat(filepath.Join(dir, "repo", "verified.stamp")); err != nil {
		t.Errorf("the verify command did not run: %v", err)
	}
	for _, want := range []string{"src/main.go", "1 applied, 0 noop, 0 failed; dry run: nothing written", "1 applied, 0 noop, 0 failed; written", "touch verified.stamp"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// The reply was echoed on stderr as it came.
	if !strings.Contains(stderr, "It changes greet.") || !strings.Contains(stderr, "asking fake-coder at "+up.url()) {
		t.Errorf("stderr:\n%s", stderr)
	}

	reqs := up.requests()
	if len(reqs) != 2 || reqs[0].path != "/v1/models" || reqs[1].path != "/v1/chat/completions" {
		t.Fatalf("the upstream got %+v", reqs)
	}
	for _, r := range reqs {
		if r.auth != "Bearer sk-test-123" {
			t.Errorf("%s %s: Authorization %q", r.method, r.path, r.auth)
		}
	}
	var sent struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].body, &sent); err != nil {
		t.Fatalf("the request is not JSON: %v\n%s", err, reqs[1].body)
	}
	if sent.Model != "fake-coder" || !sent.Stream {
		t.Errorf("model %q, stream %v", sent.Model, sent.Stream)
	}
	var prompt strings.Builder
	for _, m := range sent.Messages {
		prompt.WriteString(m.Role + ": " + m.Content + "\n")
	}
	for _, want := range []string{
		scaffoldTask,
		`{"diffs":[{"path":"src/main.go","checksum":"<sha256 hex of the preimage>","unified_diff":"--- a/src/main.go\n+++ b/src/main.go\n@@ … @@\n…"}], "post":{"commands":[{"program":"go","args":["vet","./..."],"timeout_ms":60000}]}}`,
		"### src/main.go\nsha256: " + sum256(scaffoldMain) + "\n```\n" + scaffoldMain + "```\n",
	} {
		if !strings.Contains(prompt.String(), want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt.String())
		}
	}
	if sent.Messages[0].Role != "system" || sent.Messages[1].Role != "user" {
		t.Errorf("roles %q, %q", sent.Messages[0].Role, sent.Messages[1].Role)
	}

	var rec struct {
		Strategy string `json:"strategy"`
		Written  bool   `json:"written"`
		Verified bool   `json:"verified"`
		OK       bool   `json:"ok"`
		Commands []struct {
			Status string `json:"status"`
		} `json:"commands"`
		Origin struct {
			Upstream    string `json:"upstream"`
			Model       string `json:"model"`
			TaskSHA256  string `json:"task_sha256"`
			ReplySHA256 string `json:"reply_sha256"`
			Context     []struct {
				Path, SHA256 string
			} `json:"context"`
		} `json:"origin"`
	}
	lines := strings.Split(strings.TrimSpace(mustRead(t, record)), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d record lines", len(lines))
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.OK || !rec.Written || !rec.Verified || rec.Strategy != "write" || len(rec.Commands) != 1 || rec.Commands[0].Status != "ok" {
		t.Errorf("record: %s", lines[0])
	}
	if rec.Origin.Model != "fake-coder" || rec.Origin.Upstream != up.url() || rec.Origin.TaskSHA256 != sum256(scaffoldTask+"\n") ||
		rec.Origin.ReplySHA256 != sum256(up.reply) || len(rec.Origin.Context) != 1 || rec.Origin.Context[0].SHA256 != sum256(scaffoldMain) {
		t.Errorf("record origin: %s", lines[0])
	}
	if strings.Contains(lines[0], "sk-test-123") {
		t.Error("the record holds the API key")
	}
}

func TestScaffoldDryRunAndBackup(t *testing.T) {
	dir := scaffoldRepo(t)
	up := newFakeUpstream(t, &fakeUpstream{models: []string{"m"}, reply: replyWith([]planDiff{greetDiff}, []string{"touch", "verified.stamp"})})
	root := filepath.Join(dir, "repo")
	code, stdout, stderr := runMain(t, "scaffold", "--model", "m", "--upstream", up.url(), "--root", root, "--dry-run", "--quiet", filepath.Join(dir, "task.md"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "dry run: nothing written") || strings.Contains(stdout, "; written") {
		t.Errorf("stdout:\n%s", stdout)
	}
	if strings.Contains(stderr, "It changes greet.") {
		t.Errorf("--quiet echoed the reply:\n%s", stderr)
	}
	if got := mustRead(t, filepath.Join(root, "src", "main.go")); got != scaffoldMain {
		t.Error("--dry-run wrote the file")
	}
	if _, err := os.Stat(filepath.Join(root, "verified.stamp")); err == nil {
		t.Error("--dry-run ran the verify command")
	}
	if r := up.requests(); len(r) != 2 || r[0].auth != "" {
		t.Errorf("without a key: %+v", r)
	}

	code, _, stderr = runMain(t, "scaffold", "--model", "m", "--upstream", up.url(), "--root", root, "--backup", ".orig", "--no-verify", filepath.Join(dir, "task.md"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if mustRead(t, filepath.Join(root, "src", "main.go")) != scaffoldWant || mustRead(t, filepath.Join(root, "src", "main.go.orig")) != scaffoldMain {
		t.Error("--backup: wrong files")
	}
	if _, err := os.Stat(filepath.Join(root, "verified.stamp")); err == nil {
		t.Error("--no-verify ran the verify command")
	}
}

func TestScaffoldFailures(t *testing.T) {
	badDiff := planDiff{
		Path:        "src/main.go",
		Checksum:    sum256(scaffoldMain),
		UnifiedDiff: "--- a/src/main.go\n+++ b/src/main.go\n@@ -5,3 +5,3 @@\n func farewell(name string) string {\n-\treturn \"bye \" + name\n+\treturn \"bye, \" + name\n }\n",
	}
	newFile := planDiff{
		Path:        "docs/notes.md",
		Checksum:    sum256(""),
		UnifiedDiff: "--- /dev/null\n+++ b/docs/notes.md\n@@ -0,0 +1 @@\n+notes\n",
	}
	for _, tc := range []struct {
		name     string
		up       *fakeUpstream
		args     []string
		stderr   []string
		code     string // the record's code
		chatReqs int    // requests to /chat/completions
	}{
		{
			name:   "unknown model",
			up:     &fakeUpstream{models: []string{"alpha", "beta"}},
			stderr: []string{`does not list the model "fake-coder"; it lists: alpha, beta`},
			code:   "model_not_listed",
		},
		{
			name:     "no plan in the reply",
			up:       &fakeUpstream{models: []string{"fake-coder"}, reply: "I would rather not write a plan today."},
			stderr:   []string{"plan: the reply holds no JSON object"},
			code:     "no_plan_in_reply",
			chatReqs: 1,
		},
		{
			name:     "invalid plan",
			up:       &fakeUpstream{models: []string{"fake-coder"}, reply: "```json\n{\"diffs\":[{\"path\":\"../x\",\"checksum\":\"" + sum256("") + "\",\"unified_diff\":\"x\"}]}\n```"},
			stderr:   []string{`plan: diffs[0].path (../x): must stay inside the root`},
			code:     "path_rejected",
			chatReqs: 1,
		},
		{
			name:     "a diff does not apply",
			up:       &fakeUpstream{models: []string{"fake-coder"}, reply: replyWith([]planDiff{newFile, badDiff}, []string{"touch", "verified.stamp"})},
			stderr:   []string{"diffs[1] (src/main.go): hunk 1", "its old lines are not in the file"},
			code:     "hunk_not_found",
			chatReqs: 1,
		},
		{
			name:     "upstream 500",
			up:       &fakeUpstream{models: []string{"fake-coder"}, chatStatus: 500},
			stderr:   []string{"POST URL/chat/completions: the upstream answered 500 Internal Server Error (fake upstream says 500)"},
			code:     "upstream_error",
			chatReqs: 1,
		},
		{
			name:   "upstream 401",
			up:     &fakeUpstream{models: []string{"fake-coder"}, modelsStatus: 401},
			stderr: []string{"GET URL/models: the upstream answered 401 Unauthorized (fake upstream says 401): check the API key"},
			code:   "upstream_error",
		},
		{
			name:     "timeout",
			up:       &fakeUpstream{models: []string{"fake-coder"}, hang: true},
			args:     []string{"--timeout", "300ms"},
			stderr:   []string{"URL/chat/completions: no answer within --timeout"},
			code:     "upstream_error",
			chatReqs: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := scaffoldRepo(t)
			up := newFakeUpstream(t, tc.up)
			record := filepath.Join(dir, "audit.jsonl")
			args := append([]string{"scaffold", filepath.Join(dir, "task.md"), "--model", "fake-coder", "--upstream", up.url(),
				"--root", filepath.Join(dir, "repo"), "--record", record}, tc.args...)
			code, stdout, stderr := runMain(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "ctxkit scaffold: ") {
				t.Errorf("the last line of stderr is %q", last)
			}
			for _, want := range tc.stderr {
				if want = strings.ReplaceAll(want, "URL", up.url()); !strings.Contains(last, want) {
					t.Errorf("stderr's last line\n%s\nlacks\n%s", last, want)
				}
			}
			// Nothing was written, no command ran.
			if got := mustRead(t, filepath.Join(dir, "repo", "src", "main.go")); got != scaffoldMain {
				t.Error("src/main.go changed")
			}
			for _, name := range []string{"docs", "verified.stamp"} {
				if _, err := os.Stat(filepath.Join(dir, "repo", name)); err == nil {
					t.Errorf("%s exists", name)
				}
			}
			n := 0
			for _, r := range up.requests() {
				if r.path == "/v1/chat/completions" {
					n++
				}
			}
			if n != tc.chatReqs {
				t.Errorf("%d chat requests, want %d", n, tc.chatReqs)
			}
			var rec struct {
				OK   bool   `json:"ok"`
				Code string `json:"code"`
			}
			if err := json.Unmarshal([]byte(mustRead(t, record)), &rec); err != nil || rec.OK || rec.Code != tc.code {
				t.Errorf("record %s (%v); want code %s", mustRead(t, record), err, tc.code)
			}
		})
	}
}

// TestScaffoldRefusesRedirect: a redirect is not followed, so the key
// never reaches the server it points to.
func TestScaffoldRefusesRedirect(t *testing.T) {
	t.Setenv("CTXKIT_API_KEY", "sk-secret")
	dir := scaffoldRepo(t)
	other := newFakeUpstream(t, &fakeUpstream{models: []string{"m"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirect := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.url()+"/models", http.StatusFound)
	})}}
	redirect.Start()
	defer redirect.Close()
	code, _, stderr := runMain(t, "scaffold", filepath.Join(dir, "task.md"), "--model", "m", "--upstream", redirect.URL+"/v1", "--root", filepath.Join(dir, "repo"))
	if code != 1 || !strings.Contains(stderr, "the upstream redirected to "+other.url()+"/models: ctxkit follows no redirect") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if r := other.requests(); len(r) != 0 {
		t.Errorf("the redirect target got %+v", r)
	}
}

func TestScaffoldUsage(t *testing.T) {
	dir := scaffoldRepo(t)
	task := filepath.Join(dir, "task.md")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "ftp://127.0.0.1/v1"}, "must be an http or https URL"},
		{[]string{"--upstream", "http://user:pw@127.0.0.1/v1"}, "holds credentials"},
		{[]string{"--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"--api-key-env", ""}, "is not an environment variable name"},
	} {
		code, _, stderr := runMain(t, append([]string{"scaffold", task, "--model", "m"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, stderr)
		}
	}
	// Context files stay inside the root and must be text.
	if err := os.WriteFile(filepath.Join(dir, "repo", "bin.dat"), []byte{0, 1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	up := newFakeUpstream(t, &fakeUpstream{models: []string{"m"}})
	for _, tc := range []struct{ ctx, want string }{
		{"../task.md", "must stay inside the root"},
		{"bin.dat", "only text files"},
		{"missing.go", "no such file"},
	} {
		code, _, stderr := runMain(t, "scaffold", task, "--model", "m", "--upstream", up.url(), "--root", filepath.Join(dir, "repo"), "--context", tc.ctx)
		if code != 1 || !strings.Contains(stderr, "--context "+tc.ctx+": ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("--context %s: exit %d, stderr %s", tc.ctx, code, stderr)
		}
	}
	if r := up.requests(); len(r) != 0 {
		t.Errorf("the upstream was asked despite bad context files: %+v", r)
	}
}

// scriptedUpstream lists the model m and answers POST /chat/completions
// with chat: the tests of what the upstream may send back.
func scriptedUpstream(t *testing.T, chat http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		chat(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// sseText is the SSE events of a streamed reply made of pieces.
func sseText(w http.ResponseWriter, pieces ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, p := range pieces {
		delta, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": p}}}})
		fmt.Fprintf(w, "data: %s\n\n", delta)
		w.(http.Flusher).Flush()
	}
}

// TestScaffoldRedactsKey: whatever the upstream sends back that quotes the
// API key (an error status, an error in the stream, data that does not
// decode, the reply's text) reaches neither stdout, stderr nor the record.
func TestScaffoldRedactsKey(t *testing.T) {
	const key = "sk-scaffold-SECRET-0123456789"
	for _, tc := range []struct {
		name  string
		key   string
		chat  http.HandlerFunc
		code  int
		rcode string   // the record's code
		want  []string // on stderr
		keep  []string // on stderr: text that is not the key
	}{
		{
			name: "error status quoting the bearer header",
			key:  key,
			chat: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":{"message":"bad key %s (key %s)"}}`, r.Header.Get("Authorization"), key)
			},
			code: 1, rcode: "upstream_error",
			want: []string{"401 Unauthorized (bad key Bearer [redacted] (key [redacted]))"},
		},
		{
			name: "error status with a plain body",
			key:  key,
			chat: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadGateway)
				fmt.Fprintf(w, "upstream of the upstream refused %s", key)
			},
			code: 1, rcode: "upstream_error",
			want: []string{"502 Bad Gateway (upstream of the upstream refused [redacted])"},
		},
		{
			// The message is cut to 300 bytes after the key is redacted,
			// not before: no start of the key is left.
			name: "a long error message",
			key:  key,
			chat: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprintf(w, `{"error":{"message":"%s %s"}}`, strings.Repeat("x", 280), key)
			},
			code: 1, rcode: "upstream_error",
			want: []string{strings.Repeat("x", 280) + " [redacted])"},
		},
		{
			name: "error in the stream",
			key:  key,
			chat: func(w http.ResponseWriter, r *http.Request) {
				sseText(w, "Thinking")
				fmt.Fprintf(w, "data: {\"error\":{\"type\":\"auth_error\",\"message\":\"key %s revoked\"}}\n\n", key)
			},
			code: 1, rcode: "upstream_error",
			want: []string{"the upstream reported an error in the reply: auth_error: key [redacted] revoked"},
		},
		{
			name: "data that is not JSON",
			key:  key,
			chat: func(w http.ResponseWriter, r *http.Request) {
				sseText(w, "Thinking")
				fmt.Fprintf(w, "data: {oops %s\n\ndata: [DONE]\n\n", key)
			},
			code: 1, rcode: "upstream_error",
			want: []string{"reading the reply: "},
		},
		{
			name: "the reply's text, the key cut between chunks",
			key:  key,
			chat: func(w http.ResponseWriter, r *http.Request) {
				sseText(w, "your key is "+key[:5], key[5:12], key[12:]+" and no plan")
			},
			code: 1, rcode: "no_plan_in_reply",
			want: []string{"your key is [redacted] and no plan"},
		},
		{
			// A key of fewer than 8 bytes is redacted only in its bearer
			// form: other text that holds it stays as it is.
			name: "a short key",
			key:  "k-42",
			chat: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprintf(w, `{"error":{"message":"no access for %s; ask k-42's owner"}}`, r.Header.Get("Authorization"))
			},
			code: 1, rcode: "upstream_error",
			want: []string{"(no access for Bearer [redacted]; ask k-42's owner)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CTXKIT_TEST_KEY", tc.key)
			dir := scaffoldRepo(t)
			url := scriptedUpstream(t, tc.chat)
			record := filepath.Join(dir, "audit.jsonl")
			code, stdout, stderr := runMain(t, "scaffold", filepath.Join(dir, "task.md"), "--model", "m", "--upstream", url,
				"--api-key-env", "CTXKIT_TEST_KEY", "--root", filepath.Join(dir, "repo"), "--record", record)
			rec := mustRead(t, record)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			secret := tc.key[:min(len(tc.key), 10)] // the key's start: no part of it is shown
			if len(tc.key) < 8 {
				secret = "Bearer " + tc.key
			}
			for name, text := range map[string]string{"stdout": stdout, "stderr": stderr, "the record": rec} {
				if strings.Contains(text, secret) {
					t.Errorf("%s holds the API key:\n%s", name, text)
				}
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if !strings.Contains(rec, `"code":"`+tc.rcode+`"`) {
				t.Errorf("the record's code is not %s: %s", tc.rcode, rec)
			}
			if tc.rcode == "upstream_error" && !strings.Contains(rec, "[redacted]") {
				t.Errorf("the record's error does not show where the key was: %s", rec)
			}
		})
	}
}

// TestScaffoldEchoDropsControls: the reply's text and the upstream's error
// messages reach the terminal without control characters (C0 but \n and
// \t, DEL, C1): an escape sequence from the upstream cannot drive the
// operator's terminal. The printable text around them is kept.
func TestScaffoldEchoDropsControls(t *testing.T) {
	controls := func(t *testing.T, stderr string) {
		t.Helper()
		for _, r := range stderr {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
				t.Errorf("stderr holds the control character %U:\n%q", r, stderr)
				return
			}
		}
		if !utf8.ValidString(stderr) {
			t.Errorf("stderr holds invalid UTF-8 (a lone 0x9b is CSI to some terminals):\n%q", stderr)
		}
	}
	t.Run("reply", func(t *testing.T) {
		dir := scaffoldRepo(t)
		url := scriptedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			sseText(w, "\x1b[31mred\x1b[0m and ", "\u009b2J cleared\x07\x7f; tab\there\n", "\x1b]0;owned\x1b\\title, ", "\u0090dcs\u009c no plan")
			fmt.Fprint(w, "data: [DONE]\n\n")
		})
		code, _, stderr := runMain(t, "scaffold", filepath.Join(dir, "task.md"), "--model", "m", "--upstream", url,
			"--root", filepath.Join(dir, "repo"))
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		controls(t, stderr)
		if !strings.Contains(stderr, "[31mred[0m and 2J cleared; tab\there\n]0;owned\\title, dcs no plan\n") {
			t.Errorf("stderr lost the reply's printable text:\n%q", stderr)
		}
	})
	t.Run("error", func(t *testing.T) {
		dir := scaffoldRepo(t)
		url := scriptedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"\u001b[2J\u001b]0;owned\u0007bad \u009b1mrequest\u007f"}}`)
		})
		code, _, stderr := runMain(t, "scaffold", filepath.Join(dir, "task.md"), "--model", "m", "--upstream", url,
			"--root", filepath.Join(dir, "repo"))
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		controls(t, stderr)
		if !strings.Contains(stderr, "400 Bad Request ([2J]0;ownedbad 1mrequest)") {
			t.Errorf("stderr lost the error's printable text:\n%q", stderr)
		}
	})
	t.Run("stream error", func(t *testing.T) {
		dir := scaffoldRepo(t)
		url := scriptedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			sseText(w, "ok ")
			fmt.Fprint(w, "data: {\"error\":{\"type\":\"x\",\"message\":\"\\u001b[5mblink\\u009b\"}}\n\n")
		})
		code, _, stderr := runMain(t, "scaffold", filepath.Join(dir, "task.md"), "--model", "m", "--upstream", url,
			"--root", filepath.Join(dir, "repo"))
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		controls(t, stderr)
		if !strings.Contains(stderr, "in the reply: x: [5mblink") {
			t.Errorf("stderr lost the error's printable text:\n%q", stderr)
		}
	})
}
