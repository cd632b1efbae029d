package webhook

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// receiver is a loopback endpoint that verifies what it gets with secret.
type receiver struct {
	srv    *httptest.Server
	secret Secret
	got    atomic.Int64
	bad    atomic.Int64
	ids    chan string
}

func newReceiver(t *testing.T, tlsOn bool, h func(w http.ResponseWriter, r *http.Request, body []byte) bool) *receiver {
	t.Helper()
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{secret: s, ids: make(chan string, 1024)}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := Verify(r.Header, body, time.Now(), 0, rc.secret); err != nil {
			rc.bad.Add(1)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if h != nil && !h(w, r, body) {
			return
		}
		rc.got.Add(1)
		select {
		case rc.ids <- r.Header.Get(HeaderID):
		default:
		}
	})
	if tlsOn {
		rc.srv = httptest.NewTLSServer(handler)
	} else {
		rc.srv = httptest.NewServer(handler)
	}
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) tls() *tls.Config {
	return rc.srv.Client().Transport.(*http.Transport).TLSClientConfig
}

func (rc *receiver) message(id string) Message {
	return Message{ID: id, Body: []byte(`{"kind":"created","seq":1}`), Secrets: []Secret{rc.secret}}
}

func TestSendSigned(t *testing.T) {
	rc := newReceiver(t, true, nil)
	c := NewClient(ClientOptions{AllowPrivate: true, TLS: rc.tls()})
	defer c.Close()
	a := c.Send(context.Background(), rc.srv.URL+"/hook", rc.message("msg_1"))
	if a.Class != ClassOK || a.Status != http.StatusOK || a.Latency <= 0 || rc.got.Load() != 1 {
		t.Fatalf("attempt %+v, receiver got %d", a, rc.got.Load())
	}
	if id := <-rc.ids; id != "msg_1" {
		t.Fatalf("webhook-id %q", id)
	}
}

// TestAddressRuleOnLoopback: without AllowPrivate, a loopback target is
// refused, by CheckURL for an IP literal and at connect for a name.
func TestAddressRuleOnLoopback(t *testing.T) {
	rc := newReceiver(t, true, nil)
	c := NewClient(ClientOptions{TLS: rc.tls()})
	defer c.Close()
	a := c.Send(context.Background(), rc.srv.URL, rc.message("msg_1"))
	if a.Class != ClassURL || !strings.Contains(a.Err, "loopback") {
		t.Fatalf("IP literal: %+v, want a url refusal naming loopback", a)
	}
	port := rc.srv.Listener.Addr().(*net.TCPAddr).Port
	a = c.Send(context.Background(), "https://localhost:"+itoa(port), rc.message("msg_1"))
	if a.Class != ClassAddress || rc.got.Load() != 0 {
		t.Fatalf("localhost: %+v, want an address refusal at connect", a)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// fakeDNS answers every A question with addr, every other with nothing,
// over the stream framing Go's resolver uses on a non-packet connection.
func fakeDNS(addr netip.Addr, asked *atomic.Int64) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			for {
				var n uint16
				if binary.Read(server, binary.BigEndian, &n) != nil {
					return
				}
				q := make([]byte, n)
				if _, err := io.ReadFull(server, q); err != nil || len(q) < 12 {
					return
				}
				asked.Add(1)
				end := 12
				for end < len(q) && q[end] != 0 {
					end += int(q[end]) + 1
				}
				end += 5 // root label, type, class
				if end > len(q) {
					return
				}
				qtype := binary.BigEndian.Uint16(q[end-4:])
				resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:end]...)
				if qtype == 1 {
					resp[7] = 1
					a4 := addr.As4()
					resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
					resp = append(resp, a4[:]...)
				}
				out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
				if _, err := server.Write(append(out, resp...)); err != nil {
					return
				}
			}
		}()
		return client, nil
	}}
}

// TestNameResolvingToPrivate: a public-looking name whose DNS answer is a
// private address is refused at connect, with the address in the error;
// the same name with AllowPrivate reaches the server, so the refusal is
// the rule's and not a failed lookup.
func TestNameResolvingToPrivate(t *testing.T) {
	rc := newReceiver(t, false, nil)
	port := itoa(rc.srv.Listener.Addr().(*net.TCPAddr).Port)
	var asked atomic.Int64
	res := fakeDNS(netip.MustParseAddr("127.0.0.1"), &asked)
	target := "http://hooks.rebind.example:" + port + "/in"

	strict := NewClient(ClientOptions{AllowHTTP: true, Resolver: res})
	defer strict.Close()
	a := strict.Send(context.Background(), target, rc.message("msg_1"))
	if a.Class != ClassAddress || !strings.Contains(a.Err, "127.0.0.1") || rc.got.Load() != 0 {
		t.Fatalf("strict: %+v, want an address refusal naming 127.0.0.1", a)
	}
	if asked.Load() == 0 {
		t.Fatal("the fake resolver was never asked")
	}
	open := NewClient(ClientOptions{AllowHTTP: true, AllowPrivate: true, Resolver: res})
	defer open.Close()
	if a := open.Send(context.Background(), target, rc.message("msg_2")); a.Class != ClassOK || rc.got.Load() != 1 {
		t.Fatalf("AllowPrivate: %+v", a)
	}
}

func TestCheckURL(t *testing.T) {
	strict := NewClient(ClientOptions{})
	httpOK := NewClient(ClientOptions{AllowHTTP: true})
	for _, c := range []struct {
		c    *Client
		url  string
		want string // "" accepted
	}{
		{strict, "https://hooks.example.com/x?y=1", ""},
		{strict, "https://[2606:4700::1]:8443/x", ""},
		{strict, "http://hooks.example.com/", "must be https"},
		{httpOK, "http://hooks.example.com/", ""},
		{strict, "ftp://hooks.example.com/", "scheme must be https"},
		{strict, "hooks.example.com/x", "scheme must be https"},
		{strict, "https:///path", "needs a host"},
		{strict, "https:opaque", "needs a host"},
		{strict, "https://user:pw@hooks.example.com/", "user information"},
		{strict, "https://hooks.example.com/#frag", "fragment"},
		{strict, "https://169.254.169.254/latest/meta-data", "link-local"},
		{strict, "https://[::ffff:10.0.0.1]/", "private"},
		{strict, "https://10.0.0.1/", "private"},
		{strict, "https://h.example.com/" + strings.Repeat("a", 2100), "longer than"},
		{strict, "https://h.example.com/%zz", "not a URL"},
	} {
		_, err := c.c.CheckURL(c.url)
		if c.want == "" {
			if err != nil {
				t.Errorf("CheckURL(%.40q): %v", c.url, err)
			}
			continue
		}
		var ue *URLError
		if !errors.As(err, &ue) || ue.Field != "url" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckURL(%.40q) = %v, want a url error saying %q", c.url, err, c.want)
		}
	}
}

// TestNoRedirectNoProxy: a redirect is the answer (a 3xx, final), the
// other host never hears of it, and a proxy from the environment is not
// used.
func TestNoRedirectNoProxy(t *testing.T) {
	var otherHit atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHit.Add(1) }))
	defer other.Close()
	t.Setenv("HTTP_PROXY", other.URL)
	t.Setenv("HTTPS_PROXY", other.URL)
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		http.Redirect(w, r, other.URL+"/stolen", http.StatusTemporaryRedirect)
		return false
	})
	c := NewClient(ClientOptions{AllowHTTP: true, AllowPrivate: true})
	defer c.Close()
	a := c.Send(context.Background(), rc.srv.URL, rc.message("msg_1"))
	if a.Class != ClassStatus || a.Status != http.StatusTemporaryRedirect || Retryable(a) {
		t.Fatalf("%+v, want a final 307", a)
	}
	if otherHit.Load() != 0 {
		t.Fatal("the redirect target or the proxy was contacted")
	}
}

func TestResponseExcerpt(t *testing.T) {
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusServiceUnavailable)
		// 1023 ASCII bytes and a 3-byte rune across the 1 KiB line.
		io.WriteString(w, strings.Repeat("a", 1023)+"€"+strings.Repeat("b", 100_000))
		return false
	})
	c := NewClient(ClientOptions{AllowHTTP: true, AllowPrivate: true})
	defer c.Close()
	a := c.Send(context.Background(), rc.srv.URL, rc.message("msg_1"))
	if a.Status != 503 || a.RetryAfter != "7" || !Retryable(a) {
		t.Fatalf("%+v", a)
	}
	if len(a.Excerpt) > ExcerptLimit || a.Excerpt != strings.Repeat("a", 1023) {
		t.Fatalf("excerpt of %d bytes ending %q", len(a.Excerpt), a.Excerpt[max(0, len(a.Excerpt)-5):])
	}
}

func TestTimeoutAndRefused(t *testing.T) {
	release := make(chan struct{})
	slow := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	defer close(release)
	c := NewClient(ClientOptions{AllowHTTP: true, AllowPrivate: true, Timeout: 200 * time.Millisecond})
	defer c.Close()
	a := c.Send(context.Background(), slow.srv.URL+"/secret-token-in-path", slow.message("msg_1"))
	if a.Class != ClassTimeout || !Retryable(a) || strings.Contains(a.Err, "secret-token") {
		t.Fatalf("slow: %+v, want a retryable timeout not naming the URL", a)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	a = c.Send(context.Background(), dead, slow.message("msg_1"))
	if a.Class != ClassConnect || !Retryable(a) {
		t.Fatalf("dead: %+v, want a retryable connect failure", a)
	}
}
