package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
)

// outcomes tallies the replies of a load run against a server whose
// database goes away: every reply must be a success or a 503 unavailable
// with Retry-After; anything else is recorded as a failure.
type outcomes struct {
	mu       sync.Mutex
	byStatus map[int]int
	bad      []string
	ok503    atomic.Int64
}

func (o *outcomes) add(method, path string, status int, h http.Header, body []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byStatus == nil {
		o.byStatus = map[int]int{}
	}
	o.byStatus[status]++
	switch {
	case status < 500:
	case status == http.StatusServiceUnavailable && h.Get("Retry-After") != "" && bytes.Contains(body, []byte(`"code":"unavailable"`)):
		o.ok503.Add(1)
	default:
		if len(o.bad) < 20 {
			o.bad = append(o.bad, fmt.Sprintf("%s %s: %d Retry-After=%q %s", method, path, status, h.Get("Retry-After"), body))
		}
	}
}

// runLoad runs writers and readers against e until stop is closed: creates,
// patches, lists, reads, histories and searches.
func runLoad(t *testing.T, e *env, tok string, workers int, stop <-chan struct{}, o *outcomes) *sync.WaitGroup {
	client := &http.Client{Timeout: 60 * time.Second}
	call := func(method, path, body string) (int, []byte) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, e.url+path, rd)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			o.mu.Lock()
			o.bad = append(o.bad, fmt.Sprintf("%s %s: %v", method, path, err))
			o.mu.Unlock()
			return 0, nil
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		o.add(method, path, resp.StatusCode, resp.Header, data)
		return resp.StatusCode, data
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ids []string
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				status, body := call("POST", "/breadcrumbs", fmt.Sprintf(`{"title":"w%d-%d","tags":["load"],"context":{"n":%d,"text":"alpha beta gamma"}}`, w, i, i))
				if status == http.StatusCreated {
					var b struct{ ID string }
					json.Unmarshal(body, &b)
					ids = append(ids, b.ID)
				}
				if len(ids) > 0 {
					id := ids[i%len(ids)]
					call("PATCH", "/breadcrumbs/"+id, `{"context":{"patched":true}}`)
					call("GET", "/breadcrumbs/"+id, "")
					call("GET", "/breadcrumbs/"+id+"/history", "")
				}
				call("GET", "/breadcrumbs?tag=load&limit=20", "")
				call("GET", "/breadcrumbs/search?q=alpha", "")
			}
		}()
	}
	return &wg
}

// waitWritable waits until a create succeeds, then checks that the next
// ones do too: writes resume once the database is back.
func waitWritable(t *testing.T, e *env, tok string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := e.do("POST", "/breadcrumbs", tok, `{"title":"after","context":{}}`)
		if r.status == http.StatusCreated {
			break
		}
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("writes did not resume: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 20 {
		if r := e.do("POST", "/breadcrumbs", tok, fmt.Sprintf(`{"title":"after %d","context":{}}`, i)); r.status != http.StatusCreated {
			t.Fatalf("write %d after recovery: %d %s", i, r.status, r.body)
		}
	}
}

func (o *outcomes) check(t *testing.T, what string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	t.Logf("%s: replies by status %v", what, o.byStatus)
	for _, b := range o.bad {
		t.Errorf("%s: %s", what, b)
	}
	if o.ok503.Load() == 0 {
		t.Errorf("%s: no request saw the database away (no 503): the test did not test it", what)
	}
}

// logSink collects what the server logs, to show alongside failures.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestPostgresTerminatedBackendsAre503: backends ended by the
// administrator (pg_terminate_backend) in the middle of statements, while
// requests run through the HTTP server, give 503 with Retry-After, never a
// 500; writes go on afterwards.
func TestPostgresTerminatedBackendsAre503(t *testing.T) {
	pg := pgtest.Shared(t)
	dbURL := pg.NewDatabase(t)
	logs := &logSink{}
	e := newEnvOn(t, openPostgres(t, dbURL), nil, func(o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	tok := e.token("acme", "w", server.RoleEmitter, server.RoleCurator)

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)

	stop := make(chan struct{})
	o := &outcomes{}
	wg := runLoad(t, e, tok, 6, stop, o)
	cut := 0
	for range 40 {
		time.Sleep(30 * time.Millisecond)
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid() AND state = 'active'`, strings.TrimPrefix(mustURL(dbURL).Path, "/")).Scan(&n); err != nil {
			t.Fatal(err)
		}
		cut += n
	}
	close(stop)
	wg.Wait()
	t.Logf("terminated %d backends mid-statement", cut)
	o.check(t, "pg_terminate_backend")
	if t.Failed() {
		t.Logf("server log:\n%s", logs)
	}
	waitWritable(t, e, tok, 10*time.Second)
}

// TestPostgresRestartIs503: an immediate shutdown (pg_ctl -m immediate)
// drops every connection mid-statement, and while the server is down new
// connections are refused, then refused with "the database system is
// starting up" during recovery: each is 503 with Retry-After, never a 500,
// and writes resume when the database is back.
func TestPostgresRestartIs503(t *testing.T) {
	pg := pgtest.Start(t)
	dbURL := pg.NewDatabase(t)
	logs := &logSink{}
	e := newEnvOn(t, openPostgres(t, dbURL), nil, func(o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	tok := e.token("acme", "w", server.RoleEmitter, server.RoleCurator)

	stop := make(chan struct{})
	o := &outcomes{}
	wg := runLoad(t, e, tok, 6, stop, o)
	for range 2 {
		time.Sleep(300 * time.Millisecond)
		pg.Restart(t, time.Second)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	o.check(t, "restart -m immediate")
	if t.Failed() {
		t.Logf("server log:\n%s", logs)
	}
	waitWritable(t, e, tok, 20*time.Second)
}

// cutter is a TCP proxy on loopback between ctxkit and PostgreSQL whose
// connections can be cut at once (reset, as a network failure does).
type cutter struct {
	l     net.Listener
	to    string
	mu    sync.Mutex
	conns []*net.TCPConn
	down  atomic.Bool // refuse (reset) new connections
}

func newCutter(t *testing.T, to string) *cutter {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{l: l, to: to}
	t.Cleanup(func() { l.Close(); c.cut() })
	go c.serve()
	return c
}

func (c *cutter) serve() {
	for {
		in, err := c.l.Accept()
		if err != nil {
			return
		}
		if c.down.Load() {
			in.(*net.TCPConn).SetLinger(0)
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", c.to)
		if err != nil {
			in.Close()
			continue
		}
		c.mu.Lock()
		c.conns = append(c.conns, in.(*net.TCPConn), out.(*net.TCPConn))
		c.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	}
}

// cut resets every proxied connection.
func (c *cutter) cut() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.conns)
	for _, conn := range c.conns {
		conn.SetLinger(0)
		conn.Close()
	}
	c.conns = nil
	return n
}

// TestPostgresNetworkCutIs503: connections reset under running statements
// (a network failure between ctxkit and PostgreSQL), and then refused for
// a while, give 503 with Retry-After, never a 500; writes resume after.
func TestPostgresNetworkCutIs503(t *testing.T) {
	pg := pgtest.Shared(t)
	dbURL := pg.NewDatabase(t)
	u, _ := url.Parse(dbURL)
	proxy := newCutter(t, u.Host)
	u.Host = proxy.l.Addr().String()
	logs := &logSink{}
	e := newEnvOn(t, openPostgres(t, u.String()), nil, func(o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	tok := e.token("acme", "w", server.RoleEmitter, server.RoleCurator)

	stop := make(chan struct{})
	o := &outcomes{}
	wg := runLoad(t, e, tok, 6, stop, o)
	cut := 0
	for i := range 30 {
		time.Sleep(40 * time.Millisecond)
		proxy.down.Store(i%10 >= 7) // now and then the network stays down a while
		cut += proxy.cut()
	}
	proxy.down.Store(false)
	close(stop)
	wg.Wait()
	t.Logf("cut %d connections", cut)
	o.check(t, "network cut")
	if t.Failed() {
		t.Logf("server log:\n%s", logs)
	}
	waitWritable(t, e, tok, 10*time.Second)
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// cancelledPatch finds the cancelled PATCHes among the requests counted:
// a client's error (499, in the class 4xx).
var cancelledPatch = regexp.MustCompile(`(?m)^ctxkit_http_requests_total\{.*method="PATCH".*status="4`)

// TestClientCancelIsNotUnavailable: a client that gives up on a request
// waiting for the database (here on a row lock) is not the database
// being away: no 5xx in the metrics, no store failure, nothing logged.
func TestClientCancelIsNotUnavailable(t *testing.T) {
	pg := pgtest.Shared(t)
	dbURL := pg.NewDatabase(t)
	logs := &logSink{}
	e := newEnvOn(t, openPostgres(t, dbURL), nil, func(o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	tok := e.token("acme", "w", server.RoleEmitter, server.RoleCurator)
	id := e.create(tok, `{"title":"locked","context":{}}`)

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.AdminURL[:strings.LastIndex(pg.AdminURL, "/")]+mustURL(dbURL).Path+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM breadcrumbs WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(rctx, "PATCH", e.url+"/breadcrumbs/"+id, strings.NewReader(`{"title":"x"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("the PATCH was answered %d while the row was locked", resp.StatusCode)
		}
		cancel()
	}
	tx.Rollback(ctx)
	want(t, e.do("PATCH", "/breadcrumbs/"+id, tok, `{"title":"after"}`), 200, `"after"`)

	// The server notices a client gone at its next read of the
	// connection; give the handlers a moment to finish.
	deadline := time.Now().Add(5 * time.Second)
	var metrics string
	for {
		metrics = string(e.do("GET", "/metrics", tok, nil).body)
		if cancelledPatch.MatchString(metrics) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !cancelledPatch.MatchString(metrics) {
		t.Errorf("no cancelled request in the metrics:\n%s", metrics)
	}
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "ctxkit_http_requests_total") && strings.Contains(line, `status="5`) {
			t.Errorf("a cancelled request counted as a server error: %s", line)
		}
		if strings.HasPrefix(line, "ctxkit_store_errors_total ") && !strings.HasSuffix(line, " 0") {
			t.Errorf("a cancelled request counted as a store failure: %s", line)
		}
	}
	if strings.Contains(logs.String(), "request failed") {
		t.Errorf("a cancelled request was logged as a failure:\n%s", logs)
	}
}
