// Command bareproxy is the least an HTTP hop can be, for comparison with
// ctxkit's gateway: a reverse proxy of the standard library
// (net/http/httputil) to one loopback upstream, with nothing else linked
// in, so that its memory and latency are the floor of a Go proxy hop.
//
//	bareproxy -target http://127.0.0.1:PORT
//
// It listens on a free loopback port, prints "bareproxy serving on URL",
// and exits when its standard input ends.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// maxBody bounds a request body, as the gateway's own limit does.
const maxBody = 1 << 20

func main() {
	target := flag.String("target", "", "the upstream's base URL (loopback only)")
	flag.Parse()
	if err := run(*target); err != nil {
		fmt.Fprintln(os.Stderr, "bareproxy:", err)
		os.Exit(1)
	}
}

func run(target string) error {
	h, err := proxy(target)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("bareproxy serving on http://%s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	return srv.Serve(ln)
}

// proxy is the hop: every request goes on to target, its answer comes
// back as it comes.
func proxy(target string) (http.Handler, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("-target %q: want an http:// URL", target)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("-target %q: only a loopback address is allowed", target)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // a stream's events pass at once, as through the gateway
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // as the gateway's upstream client keeps
	rp.Transport = tr
	// The body is read before it is forwarded, as the gateway does:
	// forwarding it as it comes races with the server closing it once the
	// answer has begun (the upstream answers before the transport has read
	// the body's end), which cuts a stream now and then.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			status := http.StatusBadRequest
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, err.Error(), status)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}), nil
}
