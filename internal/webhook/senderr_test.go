package webhook

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"unicode/utf8"
)

// TestSendErrValidUTF8: a receiver whose answer has a header line
// that is not valid UTF-8 gets an attempt whose Err quotes that line's
// bytes as they came (net/textproto's "malformed MIME header line"),
// and that Err is kept as the attempt's error text, which PostgreSQL's
// text refuses: the settle group holding it fails whole, other owners'
// settles with it.
func TestSendErrValidUTF8(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		conn.Write([]byte("HTTP/1.1 200 OK\r\nX-Bad \xff\xfe\xe9\r\nContent-Length: 0\r\n\r\n"))
	}()
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true})
	a := c.Send(context.Background(), "http://"+ln.Addr().String()+"/", Message{ID: "d1", Body: []byte(`{}`)})
	<-done
	if a.Err == "" {
		t.Fatalf("attempt %+v: want a transport error", a)
	}
	if !utf8.ValidString(a.Err) {
		t.Fatalf("attempt error %q is not valid UTF-8 (class %s)", a.Err, a.Class)
	}
}
