// Command upstream is the fake model provider of package fakeupstream as a
// process of its own, for benchmarks that run each hop apart: it answers
// the Chat Completions, Messages and Responses APIs with canned answers.
//
// It listens on a free loopback port, prints "upstream serving on URL",
// and exits when its standard input ends.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
	fmt.Printf("upstream serving on http://%s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	srv := &http.Server{Handler: http.HandlerFunc(fakeupstream.Handler), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}
