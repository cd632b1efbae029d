package cli_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeMaxConns: with --max-conns 16, three times as many idle
// keep-alive connections (each asked GET /health once, without a token)
// leave /health answered on a new connection, and the server holds no more
// than 16 of them.
func TestServeMaxConns(t *testing.T) {
	r := startServe(t, t.TempDir(), "--max-conns", "16")
	addr := strings.TrimPrefix(r.url, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 48 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for i := range 10 {
		resp, err := client.Get(r.url + "/health")
		if err != nil {
			t.Fatalf("GET /health %d with 48 idle connections open: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET /health %d: %d", i, resp.StatusCode)
		}
	}
	// The server closed what it could not hold: of the 48, at most 16 are
	// still open (a read waits instead of ending).
	open := make(chan bool, len(held))
	for _, c := range held {
		go func() {
			c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			_, err := c.Read(make([]byte, 1))
			ne, ok := err.(net.Error)
			open <- ok && ne.Timeout()
		}()
	}
	n := 0
	for range held {
		if <-open {
			n++
		}
	}
	if n > 16 {
		t.Errorf("%d idle connections still open; --max-conns is 16", n)
	}
	if code := r.stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, r.stderr)
	}
}

// TestServeLockFollowsLinks: the database file named through a symbolic
// link (to the file, or to its directory) is the same database, and a
// second serve on it is refused like one on the data directory itself.
func TestServeLockFollowsLinks(t *testing.T) {
	data := t.TempDir()
	startServe(t, data)
	links := t.TempDir()
	fileLink, dirLink := filepath.Join(links, "other.db"), filepath.Join(links, "dir")
	if err := os.Symlink(filepath.Join(data, "ctxkit.db"), fileLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, dirLink); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"--db", fileLink}, {"--db", "sqlite:" + fileLink}, {"--db", filepath.Join(dirLink, "ctxkit.db")}} {
		code, stderr := serveOnce(t, t.TempDir(), flags...)
		if code != 1 || !strings.Contains(stderr, "in use by another ctxkit serve") || !strings.Contains(stderr, fmt.Sprintf("pid %d", os.Getpid())) {
			t.Fatalf("serve %s on the served database: exit %d: %s", flags, code, stderr)
		}
	}
	if code, stderr := serveOnce(t, dirLink); code != 1 || !strings.Contains(stderr, "in use by another ctxkit serve") {
		t.Fatalf("serve --data through a link: exit %d: %s", code, stderr)
	}
}

// TestServeStreamsDoNotLockOut: event streams filling every connection
// slot of a server (one token may open as many as it likes) do not lock
// other clients out: a request on a new connection is served, and the
// oldest stream ends to make room (its client resumes with
// Last-Event-ID).
func TestServeStreamsDoNotLockOut(t *testing.T) {
	r := startServe(t, t.TempDir(), "--max-conns", "16")
	lines := strings.Split(strings.TrimSpace(r.stdout.String()), "\n")
	token := lines[len(lines)-1]
	addr := strings.TrimPrefix(r.url, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 16 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			break // the reserve's one answer, then closed
		}
		if resp.StatusCode != 200 {
			c.Close()
			break
		}
		held = append(held, c)
	}
	if len(held) < 14 {
		t.Fatalf("only %d streams opened", len(held))
	}
	for i := range 3 {
		code, body := call(t, "GET", r.url+"/breadcrumbs", token, "")
		if code != 200 {
			t.Fatalf("request %d with %d streams open: %d %s", i, len(held), code, body)
		}
	}
}

// TestServeBadDatabaseURLHidesPassword: a --db URL that does not parse is
// refused without repeating its password.
func TestServeBadDatabaseURLHidesPassword(t *testing.T) {
	for _, db := range []string{"postgres://u:sekrit%zz@127.0.0.1/db", "postgres://u:sekrit@127.0.0.1:port/db", "postgresql://u:sekrit@[::1/db"} {
		code, stderr := serveOnce(t, t.TempDir(), "--db", db)
		if code != 2 || strings.Contains(stderr, "sekrit") || !strings.Contains(stderr, "--db") {
			t.Fatalf("--db %s: exit %d: %s", db, code, stderr)
		}
	}
}
