package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/cli"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
)

// syncBuffer is a bytes.Buffer safe to write from the server goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type running struct {
	url            string
	stdout, stderr *syncBuffer
	stop           func() int
}

// startServe runs 'ctxkit serve' in-process on a free loopback port.
func startServe(t *testing.T, data string, flags ...string) running {
	t.Helper()
	return startServeArgs(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, flags...))
}

// startServeArgs runs ctxkit with args (a serve command line) in-process.
func startServeArgs(t *testing.T, args []string) running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, args, strings.NewReader(""), out, errOut)
	}()
	re := regexp.MustCompile(`ctxkit serving on (http://\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			stopped := false
			stop := func() int {
				if stopped {
					return 0
				}
				stopped = true
				cancel()
				select {
				case code := <-done:
					return code
				case <-time.After(20 * time.Second):
					t.Fatal("serve did not stop")
					return -1
				}
			}
			t.Cleanup(func() { stop() })
			return running{url: m[1], stdout: out, stderr: errOut, stop: stop}
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d: %s %s", code, out, errOut)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s %s", out, errOut)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mint(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Main(context.Background(), append([]string{"token"}, args...), nil, &out, &errOut); code != 0 {
		t.Fatalf("token %v: exit %d: %s", args, code, errOut.String())
	}
	tok := strings.TrimSpace(out.String())
	if strings.Count(tok, ".") != 2 || strings.Contains(tok, "\n") {
		t.Fatalf("token printed more than a token: %q", out.String())
	}
	return tok
}

func TestServeAndToken(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	lines := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "admin token") {
		t.Fatalf("first start should print the URL and an admin token:\n%s", s.stdout)
	}
	admin := lines[2]
	// The console link on standard error (written just after standard
	// output's banner: the test may read before it); its code works once.
	link := regexp.MustCompile(`console: ` + regexp.QuoteMeta(s.url) + `/ui/#login=(\S+) `)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; time.Sleep(10 * time.Millisecond) {
		if m = link.FindStringSubmatch(s.stderr.String()); m == nil && time.Now().After(deadline) {
			t.Fatalf("no console login link on standard error:\n%s", s.stderr)
		}
	}
	for i, want := range []int{200, 401} {
		if got, body := call(t, "POST", s.url+"/console/login", "", `{"code":"`+m[1]+`"}`); got != want {
			t.Fatalf("console login %d: %d %s; want %d", i+1, got, body, want)
		}
	}

	if code, _ := call(t, "GET", s.url+"/health", "", ""); code != 200 {
		t.Fatalf("health %d", code)
	}
	code, body := call(t, "POST", s.url+"/breadcrumbs", admin, `{"title":"hello","context":{"a":1,"secret":2},"llm_hints":{"exclude":["secret"]}}`)
	if code != 201 {
		t.Fatalf("create %d %s", code, body)
	}
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(body)[1]

	reader := mint(t, "--data", data, "--owner", "default", "--agent", "bot", "--roles", "subscriber,emitter", "--ttl", "1h")
	if code, body := call(t, "GET", s.url+"/breadcrumbs/"+id, reader, ""); code != 200 || strings.Contains(body, "secret") {
		t.Fatalf("view with a minted token: %d %s", code, body)
	}
	if code, _ := call(t, "DELETE", s.url+"/breadcrumbs/"+id, reader, ""); code != 403 {
		t.Fatalf("emitter delete: %d", code)
	}
	var errOut bytes.Buffer
	if code := cli.Main(context.Background(), []string{"token", "--data", data, "--owner", "o", "--agent", "a", "--roles", "emitter,god"}, nil, io.Discard, &errOut); code != 2 || !strings.Contains(errOut.String(), `unknown role "god"`) {
		t.Fatalf("bad role: exit %d %s", code, errOut.String())
	}
	other := mint(t, "--key", data+"/signing.key", "--owner", "other", "--agent", "x", "--roles", "curator")
	if code, _ := call(t, "GET", s.url+"/breadcrumbs/"+id, other, ""); code != 404 {
		t.Fatalf("other owner: %d", code)
	}
	// An open event stream does not hold up a graceful shutdown.
	req, _ := http.NewRequest("GET", s.url+"/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v", err)
	}
	defer resp.Body.Close()
	start := time.Now()
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exited %d after SIGINT-like cancel", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown with an open stream took %v", d)
	}

	// A second start keeps the key and the data, and prints no admin token.
	s2 := startServe(t, data)
	if strings.Contains(s2.stdout.String(), "admin token") {
		t.Fatalf("second start printed an admin token:\n%s", s2.stdout)
	}
	if code, _ := call(t, "GET", s2.url+"/breadcrumbs/"+id+"/full", reader, ""); code != 200 {
		t.Fatalf("after restart: %d", code)
	}
}

// TestServeReplicasOnPostgres: three servers on one PostgreSQL database, one
// with its own key file, one with --key naming it, one with a copy of the
// first's data directory. Tokens minted for one work on all; a write
// through one is read through the others, and a view is never served from
// a cache for an older version. A superuser connection gets a warning.
func TestServeReplicasOnPostgres(t *testing.T) {
	pg := pgtest.Shared(t)
	dbURL := pg.NewDatabase(t)
	dirA, dirB, dirC := t.TempDir(), t.TempDir(), t.TempDir()
	a := startServe(t, dirA, "--db", dbURL)
	if strings.Contains(a.stderr.String(), "superuser") {
		t.Fatalf("ordinary role warned about: %s", a.stderr)
	}
	if strings.Contains(a.stderr.String(), "ctxkit@") || strings.Contains(a.stderr.String(), ":ctxkit") {
		t.Fatalf("the log shows the database password: %s", a.stderr)
	}
	lines := strings.Split(strings.TrimSpace(a.stdout.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("first start should print an admin token:\n%s", a.stdout)
	}
	admin := lines[2]
	b := startServe(t, dirB, "--db", dbURL, "--key", filepath.Join(dirA, "signing.key"))
	if strings.Contains(b.stdout.String(), "admin token") {
		t.Fatalf("a replica with an existing key printed a new admin token:\n%s", b.stdout)
	}
	key, err := os.ReadFile(filepath.Join(dirA, "signing.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirC, "signing.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServe(t, dirC, "--db", dbURL)

	code, body := call(t, "POST", a.url+"/breadcrumbs", admin, `{"title":"plan","context":{"step":1,"secret":"s"},"llm_hints":{"exclude":["secret"]}}`)
	if code != 201 {
		t.Fatalf("create on A: %d %s", code, body)
	}
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(body)[1]
	reader := mint(t, "--key", filepath.Join(dirC, "signing.key"), "--owner", "default", "--agent", "bot", "--roles", "subscriber")
	for step := 1; step <= 3; step++ {
		for _, r := range []running{a, b, c} {
			code, body := call(t, "GET", r.url+"/breadcrumbs/"+id, reader, "")
			if code != 200 || !strings.Contains(body, fmt.Sprintf(`"step":%d`, step)) || strings.Contains(body, `"s"`) {
				t.Fatalf("step %d: view on %s: %d %s", step, r.url, code, body)
			}
		}
		// Update through a different replica each time.
		w := []running{b, c, a}[step-1]
		code, body := call(t, "PATCH", w.url+"/breadcrumbs/"+id, admin, fmt.Sprintf(`{"context":{"step":%d}}`, step+1))
		if code != 200 {
			t.Fatalf("update through %s: %d %s", w.url, code, body)
		}
	}

	su := startServe(t, t.TempDir(), "--db", strings.Replace(pg.AdminURL, "/postgres?", "/"+path.Base(strings.Split(dbURL, "?")[0])+"?", 1))
	if !strings.Contains(su.stderr.String(), "superuser") {
		t.Fatalf("no warning for a superuser connection: %s", su.stderr)
	}
}

// serveOnce runs 'ctxkit serve' that is expected to exit on its own (a
// refusal to start) and returns its exit status and standard error.
func serveOnce(t *testing.T, data string, flags ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	code := cli.Main(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, flags...), strings.NewReader(""), &out, &errOut)
	if ctx.Err() != nil {
		t.Fatalf("serve did not exit on its own: %s %s", &out, &errOut)
	}
	return code, errOut.String()
}

// TestServeLocksDataDirectory: a second serve on a data directory one
// already serves exits 1 naming the directory and the first one's pid
// (two servers on one SQLite file would split the event stream); once the
// first stops, the directory is free again.
func TestServeLocksDataDirectory(t *testing.T) {
	data := t.TempDir()
	first := startServe(t, data)
	code, stderr := serveOnce(t, data)
	if code != 1 || !strings.Contains(stderr, data) || !strings.Contains(stderr, fmt.Sprintf("pid %d", os.Getpid())) ||
		!strings.Contains(stderr, "in use by another ctxkit serve") {
		t.Fatalf("second serve: exit %d: %s", code, stderr)
	}
	// The same file named through --db is the same database.
	if code, stderr := serveOnce(t, t.TempDir(), "--db", "sqlite:"+filepath.Join(data, "ctxkit.db")); code != 1 || !strings.Contains(stderr, "in use") {
		t.Fatalf("second serve through --db: exit %d: %s", code, stderr)
	}
	if code, _ := call(t, "GET", first.url+"/health", "", ""); code != 200 {
		t.Fatalf("the first server after the refused second: %d", code)
	}
	if code := first.stop(); code != 0 {
		t.Fatalf("first serve exited %d", code)
	}
	again := startServe(t, data)
	if code, _ := call(t, "GET", again.url+"/health", "", ""); code != 200 {
		t.Fatalf("after the first stopped: %d", code)
	}
}

// TestServeRefusesLostDatabase: an empty database file beside an existing
// signing key (data lost or truncated by accident) and a damaged database
// file are refused at start, exit 1, with the file and what to do.
func TestServeRefusesLostDatabase(t *testing.T) {
	data := t.TempDir()
	db := filepath.Join(data, "ctxkit.db")
	s := startServe(t, data)
	admin := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")[2]
	for i := range 200 {
		if code, body := call(t, "POST", s.url+"/breadcrumbs", admin, fmt.Sprintf(`{"title":"r%d","context":{"text":%q}}`, i, strings.Repeat("lorem ", 200))); code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	s.stop()
	saved, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	code, stderr := serveOnce(t, data)
	if code != 1 || !strings.Contains(stderr, db) || !strings.Contains(stderr, "empty (0 bytes)") || !strings.Contains(stderr, "signing.key") {
		t.Fatalf("serve on an empty database beside a key: exit %d: %s", code, stderr)
	}
	if st, _ := os.Stat(db); st.Size() != 0 {
		t.Fatal("the refused start wrote to the database")
	}

	// Damage in the middle of the file.
	damaged := append([]byte(nil), saved...)
	for i := len(damaged) / 3; i < 2*len(damaged)/3; i++ {
		damaged[i] = 0xff
	}
	if err := os.WriteFile(db, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr = serveOnce(t, data)
	if code != 1 || !strings.Contains(stderr, db) || !strings.Contains(stderr, "damaged") || !strings.Contains(stderr, ".recover") {
		t.Fatalf("serve on a damaged database: exit %d: %s", code, stderr)
	}

	// Restored from the backup, it starts and serves the data.
	if err := os.WriteFile(db, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, data)
	if code, body := call(t, "GET", s.url+"/breadcrumbs?limit=500", admin, ""); code != 200 || strings.Count(body, `"title":"r`) != 200 {
		t.Fatalf("after restoring: %d, %d records", code, strings.Count(body, `"title":"r`))
	}

	// An empty file without a key is a fresh start, as before.
	fresh := t.TempDir()
	os.WriteFile(filepath.Join(fresh, "ctxkit.db"), nil, 0o600)
	startServe(t, fresh)
}

// TestServeDamageLoggedOnce: damage found while serving is logged once,
// not once per request or per expiry round, and writes are refused.
func TestServeDamageLoggedOnce(t *testing.T) {
	data := t.TempDir()
	db := filepath.Join(data, "ctxkit.db")
	s := startServe(t, data)
	admin := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")[2]
	for i := range 200 {
		if code, body := call(t, "POST", s.url+"/breadcrumbs", admin, fmt.Sprintf(`{"title":"r%d","context":{"text":%q}}`, i, strings.Repeat("lorem ", 200))); code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	s.stop() // every page is in the file now
	s = startServe(t, data, "--expire-every", "10ms")
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	junk := bytes.Repeat([]byte{0xff}, int(st.Size()/3))
	f.WriteAt(junk, st.Size()/3)
	f.Close()
	if code, body := call(t, "GET", s.url+"/breadcrumbs?limit=500", admin, ""); code != 500 || !strings.Contains(body, "store_corrupt") {
		t.Fatalf("list over damaged pages: %d %s", code, body)
	}
	for range 3 {
		if code, body := call(t, "POST", s.url+"/breadcrumbs", admin, `{"title":"x","context":{}}`); code != 500 || !strings.Contains(body, "store_corrupt") {
			t.Fatalf("write after the damage: %d %s", code, body)
		}
	}
	time.Sleep(300 * time.Millisecond) // some thirty expiry rounds
	s.stop()
	api, expiry := strings.Count(s.stderr.String(), "the store is damaged"), strings.Count(s.stderr.String(), "expiring breadcrumbs")
	if api != 1 || expiry != 1 {
		t.Fatalf("the damage was logged %d times by the API and %d by expiry, want once each:\n%s", api, expiry, s.stderr)
	}
}

// TestServeNeverLosesTheAdminToken: a start that fails for a reason the
// user must fix (a bad --config, a key variable unset, the port taken)
// creates nothing, so the start after the fix is the one that creates the
// key and prints the token. The data directory serve creates holds a
// .gitignore; later starts say how to mint an admin token, and 'ctxkit
// token --admin' mints one that works.
func TestServeNeverLosesTheAdminToken(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"providers": [{"name": "x", "type": "nope"}]}`), 0o600)
	unset := filepath.Join(dir, "unset.json")
	os.WriteFile(unset, []byte(`{"providers": [{"name": "o", "type": "openai", "base_url": "http://127.0.0.1:9", "api_key_env": "CTXKIT_TEST_UNSET_KEY", "models": ["m"]}]}`), 0o600)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, c := range []struct {
		name  string
		flags []string
		msg   string
	}{
		{"bad config", []string{"--config", bad}, "--config"},
		{"key variable unset", []string{"--config", unset}, "CTXKIT_TEST_UNSET_KEY"},
		{"port taken", []string{"--addr", taken.Addr().String()}, "--addr"},
	} {
		code, stderr := serveOnce(t, data, c.flags...)
		if code == 0 || !strings.Contains(stderr, c.msg) {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if _, err := os.Stat(data); err == nil {
			t.Fatalf("%s: the failed start created %s", c.name, data)
		}
	}

	s := startServe(t, data)
	if !strings.Contains(s.stdout.String(), "admin token") {
		t.Fatalf("the first start that succeeds prints the token:\n%s", s.stdout)
	}
	if ignore, err := os.ReadFile(filepath.Join(data, ".gitignore")); err != nil || !strings.Contains(string(ignore), "*") {
		t.Fatalf(".gitignore: %q %v", ignore, err)
	}
	s.stop()
	s = startServe(t, data)
	want := "tokens: ctxkit token --admin --key " + filepath.Join(data, "signing.key")
	if !strings.Contains(s.stdout.String(), want) {
		t.Fatalf("a later start says how to get a token (%q):\n%s", want, s.stdout)
	}
	admin := mint(t, "--admin", "--data", data)
	if code, body := call(t, "POST", s.url+"/breadcrumbs", admin, `{"title":"t","context":{}}`); code != 201 {
		t.Fatalf("admin token: %d %s", code, body)
	}
	if code, body := call(t, "DELETE", s.url+"/breadcrumbs/x", admin, ""); code != 404 {
		t.Fatalf("admin token is a curator's: %d %s", code, body)
	}
	var errOut bytes.Buffer
	if code := cli.Main(context.Background(), []string{"token", "--admin", "--data", data, "--roles", "emitter"}, nil, io.Discard, &errOut); code != 2 {
		t.Fatalf("--admin with --roles: exit %d %s", code, errOut.String())
	}
}

// TestServeCreatesNoDataDirectoryItDoesNotUse: with --db and --key given,
// nothing lives in the data directory, so none is created.
func TestServeCreatesNoDataDirectoryItDoesNotUse(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "unused")
	s := startServe(t, data, "--db", filepath.Join(dir, "x.db"), "--key", filepath.Join(dir, "k.key"))
	if _, err := os.Stat(data); err == nil {
		t.Fatalf("created %s", data)
	}
	if !strings.Contains(s.stdout.String(), "admin token") {
		t.Fatalf("first start: %s", s.stdout)
	}
}

// TestServeFlagsFromEnvironment: every serve flag may come from its
// CTXKIT_ variable; the command line wins; a bad value names the variable.
func TestServeFlagsFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CTXKIT_ADDR", "127.0.0.1:0")
	t.Setenv("CTXKIT_DATA", filepath.Join(dir, "d"))
	s := startServeArgs(t, []string{"serve"})
	if !strings.Contains(s.stdout.String(), filepath.Join(dir, "d")) {
		t.Fatalf("CTXKIT_DATA: %s", s.stdout)
	}
	s.stop()
	t.Setenv("CTXKIT_VIEW_MEMORY", "lots")
	code, stderr := serveOnce(t, filepath.Join(dir, "d"))
	if code != 2 || !strings.Contains(stderr, `CTXKIT_VIEW_MEMORY="lots"`) {
		t.Fatalf("bad variable: exit %d %s", code, stderr)
	}
	code, stderr = serveOnce(t, filepath.Join(dir, "d"), "--view-memory", "64MiB", "--addr", "256.0.0.1:1")
	if code == 0 || strings.Contains(stderr, "CTXKIT_VIEW_MEMORY") {
		t.Fatalf("the command line wins: exit %d %s", code, stderr)
	}
}
