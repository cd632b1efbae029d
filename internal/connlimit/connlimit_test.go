package connlimit_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/connlimit"
)

// counting counts the connections its listener has open, to check the
// bound from outside the limiter.
type counting struct {
	net.Listener
	open, peak atomic.Int64
}

func (c *counting) Accept() (net.Conn, error) {
	nc, err := c.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := c.open.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	return &countedConn{Conn: nc, c: c}, nil
}

type countedConn struct {
	net.Conn
	c    *counting
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.Conn.Close()
}

func isHealth(r *http.Request) bool { return r.Method == "GET" && r.URL.Path == "/health" }

// serve starts an http.Server on loopback bounded by opts; /slow waits
// until release is closed.
func serve(t testing.TB, opts connlimit.Options, release chan struct{}) (string, *connlimit.Listener, *counting) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &counting{Listener: raw}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"status":"ok"}`) })
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := &http.Server{Handler: mux, IdleTimeout: time.Minute}
	if opts.Admit == nil {
		opts.Admit = isHealth
	}
	l := connlimit.Wrap(srv, ln, opts)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return raw.Addr().String(), l, ln
}

// keepAlive opens a connection, asks GET /health on it and keeps it open.
func keepAlive(addr string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	return c, nil
}

// health asks GET /health on a new connection within a second.
func health(addr, path string) (int, http.Header, error) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

// TestIdleFloodLeavesRoomForHealth: as many idle keep-alive connections as
// the process's descriptors allow (both ends are in this process), against
// a bound of half of them: /health is answered all along and afterwards,
// and the server never holds more connections than the bound.
func TestIdleFloodLeavesRoomForHealth(t *testing.T) {
	nofile, err := connlimit.FileLimit()
	if err != nil {
		t.Fatal(err)
	}
	n := (int(nofile) - 256) / 2 // each connection is two descriptors here
	if testing.Short() {
		n = min(n, 2000)
	}
	if n < 100 {
		t.Skipf("the descriptor limit %d is too low", nofile)
	}
	max := n / 2
	addr, l, ln := serve(t, connlimit.Options{Max: max}, nil)

	var (
		mu    sync.Mutex
		held  []net.Conn
		next  atomic.Int64
		wg    sync.WaitGroup
		fails atomic.Int64
	)
	for range 32 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				c, err := keepAlive(addr)
				if err != nil {
					fails.Add(1) // closed to make room for a newer one: expected
					continue
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	// Health checks while the flood goes on.
	probeErr := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			if st, _, err := health(addr, "/health"); err != nil || st != 200 {
				probeErr <- fmt.Errorf("GET /health during the flood: %d %v", st, err)
				return
			}
		}
		probeErr <- nil
	}()
	wg.Wait()
	if err := <-probeErr; err != nil {
		t.Error(err)
	}
	for i := range 20 {
		if st, _, err := health(addr, "/health"); err != nil || st != 200 {
			t.Fatalf("GET /health %d after %d idle connections: %d %v", i, n, st, err)
		}
	}
	st := l.Stats()
	t.Logf("%d connections opened against a bound of %d: %d open (%d waiting), peak %d, %d evicted, %d refused; raw peak %d",
		n, max, st.Open, st.Waiting, st.Peak, st.Evicted, st.Refused, ln.peak.Load())
	if st.Peak > max {
		t.Errorf("peak %d connections, over the bound %d", st.Peak, max)
	}
	// One more may be open for a moment below the limiter: the one just
	// accepted, before the connection it replaces is closed.
	if p := ln.peak.Load(); p > int64(max)+1 {
		t.Errorf("the listener held %d connections at once; the bound is %d", p, max)
	}
	for _, c := range held {
		c.Close()
	}
}

// TestReserveAnswersHealthWhenAllAreBusy: with every normal slot serving a
// request, a new connection still gets /health (and is closed after it),
// any other request is 503 with Retry-After, and with the reserve full too
// a connection is closed at once rather than left waiting.
func TestReserveAnswersHealthWhenAllAreBusy(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	addr, l, _ := serve(t, connlimit.Options{Max: 6, Reserve: 2}, release)
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	waitFor(t, func() bool { return l.Stats().Waiting == 0 && l.Stats().Open == 4 })

	st, _, err := health(addr, "/health")
	if err != nil || st != 200 {
		t.Fatalf("GET /health with every slot busy: %d %v", st, err)
	}
	st, h, err := health(addr, "/slow")
	if err != nil || st != 503 || h.Get("Retry-After") == "" {
		t.Fatalf("GET /slow on a reserve connection: %d %v %v", st, h, err)
	}
	// The two requests' reserve connections are released once the server
	// sees them closed: until then they hold the reserve the next two
	// would fill, and a slot freed after those two arrive would go to the
	// one past the bound.
	waitFor(t, func() bool { return l.Stats().Reserve == 0 })
	// Two silent connections fill the reserve; the next is closed at once.
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	waitFor(t, func() bool { return l.Stats().Reserve == 2 })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a connection past the bound: read %v, want it closed at once", err)
	}
	if s := l.Stats(); s.Open > 6 || s.Refused == 0 || s.Rejected != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestIdleClosedNearTheBound: past three quarters of the bound, idle
// keep-alive connections are closed, so the server keeps free slots.
func TestIdleClosedNearTheBound(t *testing.T) {
	addr, l, _ := serve(t, connlimit.Options{Max: 21, Reserve: 1}, nil) // 20 slots, pressure past 15
	for range 15 {
		c, err := keepAlive(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	if s := l.Stats(); s.Open != 15 || s.Evicted != 0 {
		t.Fatalf("below three quarters nothing is closed: %+v", s)
	}
	for range 5 {
		if c, err := keepAlive(addr); err == nil {
			defer c.Close()
		}
	}
	waitFor(t, func() bool { return l.Stats().Open <= 15 })
	if s := l.Stats(); s.Evicted == 0 {
		t.Errorf("no idle connection was closed near the bound: %+v", s)
	}
}

func TestDefault(t *testing.T) {
	for nofile, want := range map[uint64]int{20000: 17436, 1024: 832, 256: 160, 10: 2, 1 << 40: 939524032} {
		if got := connlimit.Default(nofile); got != want {
			t.Errorf("Default(%d) = %d, want %d", nofile, got, want)
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStalledBodyIsEvictable: connections that ask for /health (no token
// needed) and promise a request body they never send fill every slot: the
// handler is done, but net/http waits for the body to discard it before
// the connection may serve another request, for as long as the server's
// ReadTimeout. Such a connection waits for its client, not for the
// server, so it gives its slot to a connection that comes: requests are
// still served, not answered 503 busy. So does one whose headers never
// end.
func TestStalledBodyIsEvictable(t *testing.T) {
	const max = 8
	addr, l, _ := serve(t, connlimit.Options{Max: max, Reserve: 1}, nil)
	for _, req := range []string{
		"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
		"POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
		// Headers trickled and never finished (a slow loris).
		"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: a",
	} {
		var held []net.Conn
		for range 2 * max {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
			io.WriteString(c, req)
		}
		time.Sleep(200 * time.Millisecond)
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for i := range 3 {
			resp, err := client.Get("http://" + addr + "/slowless")
			if err != nil {
				t.Fatalf("%q held %d times: request %d: %v", req, len(held), i, err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				t.Fatalf("%q held %d times: request %d answered 503 (%+v)", req, len(held), i, l.Stats())
			}
		}
		for _, c := range held {
			c.Close()
		}
	}
}

// TestResumableStreamsGiveWay: long-lived responses that the client can
// resume (event streams) filling every slot do not lock other clients out:
// a connection that comes takes the oldest stream's slot, and that stream
// ends (its client reconnects and resumes). Without the mark, the streams
// hold their slots and others are answered 503.
func TestResumableStreamsGiveWay(t *testing.T) {
	for _, resumable := range []bool{true, false} {
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var ended atomic.Int64
		mux := http.NewServeMux()
		mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
			if resumable {
				connlimit.Resumable(r.Context())
			}
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			ended.Add(1)
		})
		mux.HandleFunc("GET /x", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		srv := &http.Server{Handler: mux}
		const max = 8
		l := connlimit.Wrap(srv, raw, connlimit.Options{Max: max, Reserve: 1, Admit: isHealth})
		go srv.Serve(l)
		addr := raw.Addr().String()
		var held []net.Conn
		for range max - 1 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
			io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
				t.Fatalf("stream: %v", err)
			}
		}
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + addr + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resumable && resp.StatusCode != 200 {
			t.Fatalf("with %d resumable streams open: %d (%+v)", max-1, resp.StatusCode, l.Stats())
		}
		if !resumable && resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("with %d streams open, none resumable: %d; want 503", max-1, resp.StatusCode)
		}
		if resumable {
			deadline := time.Now().Add(2 * time.Second)
			for ended.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if ended.Load() != 1 {
				t.Errorf("%d streams ended to make room; want 1", ended.Load())
			}
		}
		for _, c := range held {
			c.Close()
		}
		srv.Close()
	}
}
