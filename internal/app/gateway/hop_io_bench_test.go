package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

// ioCount counts the reads and writes of the connections it wraps: on
// loopback each is a system call, and how many a hop makes per request
// is what its latency follows most (a wake-up of the reader on the other
// side each).
type ioCount struct{ reads, writes atomic.Int64 }

type countedConn struct {
	net.Conn
	c *ioCount
}

func (c countedConn) Read(p []byte) (int, error) {
	c.c.reads.Add(1)
	return c.Conn.Read(p)
}

func (c countedConn) Write(p []byte) (int, error) {
	c.c.writes.Add(1)
	return c.Conn.Write(p)
}

type countedListener struct {
	net.Listener
	c *ioCount
}

func (l countedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{conn, l.c}, nil
}

// countedServer is an httptest server of h whose accepted connections
// count into c.
func countedServer(b *testing.B, h http.Handler, c *ioCount) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	s.Listener = countedListener{s.Listener, c}
	s.Start()
	return s
}

// countedTransport dials connections that count into c.
func countedTransport(c *ioCount) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	d := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countedConn{conn, c}, nil
	}
	return tr
}

// BenchmarkHopIO counts what BenchmarkProxyHop's hops do on their
// sockets per request (streamed and not, every client dialect): the
// reads and writes of the connection to the client ("cl-writes/req",
// "cl-reads/req") and of the connection to the upstream
// ("up-reads/req", "up-writes/req"), for the bare reverse proxy and for
// ctxkit's gateway side by side. Unlike latency, these counts do not
// depend on what else the machine runs.
//
//	go test ./internal/app/gateway -run '^$' -bench HopIO -benchtime 500x
func BenchmarkHopIO(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(fakeupstream.Handler))
	defer up.Close()
	// [0] the bare proxy's, [1] the gateway's; client side and upstream
	// side.
	var cl, upc [2]ioCount
	b.Setenv("CTXKIT_BENCH_KEY", "k")
	cfg := writeConfigB(b, fmt.Sprintf(`{"providers":[
		{"name":"oai","type":"openai","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["gpt-bench"]},
		{"name":"ant","type":"anthropic","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["claude-bench"]},
		{"name":"resp","type":"openai","api":"responses","base_url":%q,"api_key_env":"CTXKIT_BENCH_KEY","models":["resp-bench"]}]}`, up.URL+"/v1", up.URL, up.URL+"/v1"))
	c, err := gateway.LoadConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// The gateway's own client but for the counting dialer: no redirect
	// is followed, as the gateway's.
	g := gateway.New(c, gateway.Options{Client: &http.Client{Transport: countedTransport(&upc[1]),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	mux.HandleFunc("POST /v1/responses", g.Responses)
	gw := countedServer(b, mux, &cl[1])
	defer gw.Close()
	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.Transport = countedTransport(&upc[0])
	bare := countedServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}), &cl[0])
	defer bare.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, d := range fakeupstream.Clients {
		for _, stream := range []bool{false, true} {
			name := d.Name + "/plain"
			if stream {
				name = d.Name + "/stream"
			}
			body := d.Body(stream)
			b.Run(name, func(b *testing.B) {
				paths := [2]string{bare.URL + d.Path, gw.URL + d.Path}
				for _, p := range paths {
					benchRequest(b, client, p, body, d.Header) // warm the connections
				}
				var start [2][4]int64
				for i := range paths {
					start[i] = [4]int64{cl[i].reads.Load(), cl[i].writes.Load(), upc[i].reads.Load(), upc[i].writes.Load()}
				}
				n := 0
				for b.Loop() {
					for _, p := range paths {
						benchRequest(b, client, p, body, d.Header)
					}
					n++
				}
				per := func(i, k int) float64 {
					now := [4]int64{cl[i].reads.Load(), cl[i].writes.Load(), upc[i].reads.Load(), upc[i].writes.Load()}
					return float64(now[k]-start[i][k]) / float64(n)
				}
				for i, who := range [2]string{"bare", "ctxkit"} {
					b.ReportMetric(per(i, 0), who+"-cl-reads/req")
					b.ReportMetric(per(i, 1), who+"-cl-writes/req")
					b.ReportMetric(per(i, 2), who+"-up-reads/req")
					b.ReportMetric(per(i, 3), who+"-up-writes/req")
				}
			})
		}
	}
}
