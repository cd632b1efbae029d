package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

const (
	// DefaultTimeout bounds one attempt, from dialling to the last byte read.
	DefaultTimeout = 10 * time.Second
	// ExcerptLimit is how much of a response body an Attempt keeps.
	ExcerptLimit = 1024
	maxURLLen    = 2048
	// After the excerpt, this much more is read so the connection can be
	// reused; a longer body costs the connection instead.
	drainLimit = 64 << 10
	// maxRetryAfterLen bounds the Retry-After value an Attempt keeps.
	maxRetryAfterLen = 64
	// maxHeaderBytes bounds a response's header block.
	maxHeaderBytes = 64 << 10
)

// ClientOptions tune a Client; the zero value is the safe default: https
// only, public addresses only, 10 s per attempt.
type ClientOptions struct {
	// AllowPrivate lifts the address rule (AddrRefused), for tests and
	// internal networks.
	AllowPrivate bool
	// AllowHTTP accepts plain http targets.
	AllowHTTP bool
	Timeout   time.Duration // per attempt; 0: DefaultTimeout
	TLS       *tls.Config   // nil: the system's roots
	// Resolver looks up target hosts (nil: net.DefaultResolver). Whatever
	// it answers, the address connected to is the one checked.
	Resolver  *net.Resolver
	UserAgent string // default "ctxkit-webhook"
}

// Client sends signed webhook requests. It never uses a proxy from the
// environment (the proxy would connect on our behalf, past the address
// rule), never follows a redirect, and checks every address it connects
// to at the moment of connecting, so a DNS answer that changes between a
// check and the dial cannot point it at a private network. Safe for
// concurrent use.
type Client struct {
	http *http.Client
	o    ClientOptions
}

// NewClient is a client with o.
func NewClient(o ClientOptions) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = "ctxkit-webhook"
	}
	d := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second, Resolver: o.Resolver}
	if !o.AllowPrivate {
		d.Control = controlAddr
	}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        o.TLS,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    o.Timeout,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  o.Timeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	return &Client{
		o: o,
		http: &http.Client{
			Transport:     t,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Close drops the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// AddrError is a connection the address rule refused.
type AddrError struct {
	Addr   netip.Addr
	Reason string
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("webhook: address %s refused: %s (serve --webhook-allow-private lifts this)", e.Addr, e.Reason)
}

// controlAddr runs after the name is resolved and before connect(2), on
// the very address dialled.
func controlAddr(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &AddrError{Reason: "unparseable address " + address}
	}
	if r := AddrRefused(ap.Addr()); r != "" {
		return &AddrError{Addr: ap.Addr(), Reason: r}
	}
	return nil
}

// URLError says what is wrong with a target URL.
type URLError struct {
	Field  string // "url"
	Reason string
}

func (e *URLError) Error() string { return "webhook: " + e.Field + ": " + e.Reason }

// CheckURL validates a target as a registration should, before anything
// is sent: absolute https (http only with AllowHTTP), a host, no user
// information, at most 2048 bytes, and, when the host is an IP literal,
// an address the rule allows. A host name is checked again at each
// connection, on the addresses it resolves to then.
func (c *Client) CheckURL(raw string) (*url.URL, error) {
	bad := func(r string) (*url.URL, error) { return nil, &URLError{Field: "url", Reason: r} }
	if len(raw) > maxURLLen {
		return bad(fmt.Sprintf("longer than %d bytes", maxURLLen))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not a URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && c.o.AllowHTTP:
	case u.Scheme == "http":
		return bad("must be https")
	default:
		return bad("scheme must be https, not " + strconvQuote(u.Scheme))
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return bad("needs a host (https://host/path)")
	}
	if u.User != nil {
		return bad("must not carry user information; authenticate with the signature")
	}
	if u.Fragment != "" {
		return bad("must not have a fragment")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !c.o.AllowPrivate {
		if r := AddrRefused(ip); r != "" {
			return bad("address " + ip.String() + " refused: " + r)
		}
	}
	return u, nil
}

func strconvQuote(s string) string {
	if len(s) > 32 {
		s = s[:32]
	}
	return fmt.Sprintf("%q", s)
}

// Class sorts an attempt's outcome; the set is closed, so it is safe as a
// metric label.
type Class string

const (
	ClassOK        Class = "ok"        // 2xx
	ClassStatus    Class = "status"    // another status; see Attempt.Status
	ClassTimeout   Class = "timeout"   // the attempt's time ran out
	ClassConnect   Class = "connect"   // refused, reset, unreachable
	ClassDNS       Class = "dns"       // the host did not resolve
	ClassTLS       Class = "tls"       // handshake or certificate
	ClassAddress   Class = "address"   // the address rule refused the target
	ClassURL       Class = "url"       // the target URL is not acceptable
	ClassTransport Class = "transport" // any other failure of the exchange
	ClassCanceled  Class = "canceled"  // the dispatcher stopped mid-attempt
)

// Message is what one attempt sends.
type Message struct {
	ID      string   // webhook-id: stable per event and endpoint
	Body    []byte   // JSON
	Secrets []Secret // the endpoint's active secrets, each signs
}

// Attempt is the record of one request.
type Attempt struct {
	Start      time.Time
	Latency    time.Duration
	Status     int // 0 when no response came
	Class      Class
	Err        string // what failed, without the URL (it may hold a token)
	Excerpt    string // the response body's first ExcerptLimit bytes, valid UTF-8
	RetryAfter string // the response's Retry-After, if any
}

// Send makes one attempt at delivering m to target. It never returns an
// error: every failure is an Attempt's Class and Err.
func (c *Client) Send(ctx context.Context, target string, m Message) (a Attempt) {
	a.Start = time.Now()
	defer func() { a.Latency = time.Since(a.Start) }()
	u, err := c.CheckURL(target)
	if err != nil {
		a.Class, a.Err = ClassURL, err.Error()
		return a
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(m.Body))
	if err != nil {
		a.Class, a.Err = ClassURL, "webhook: url: "+err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", c.o.UserAgent)
	SetHeaders(req.Header, m.ID, a.Start, m.Body, m.Secrets...)
	resp, err := c.http.Do(req)
	if err != nil {
		a.Class, a.Err = classify(ctx, err)
		return a
	}
	defer resp.Body.Close()
	a.Status = resp.StatusCode
	a.Class = ClassOK
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.Class = ClassStatus
	}
	if ra := resp.Header.Get("Retry-After"); len(ra) <= maxRetryAfterLen {
		a.RetryAfter = ra
	}
	buf := make([]byte, ExcerptLimit)
	n, err := io.ReadFull(resp.Body, buf)
	a.Excerpt = excerpt(buf[:n], n == ExcerptLimit)
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && a.Class == ClassOK {
		// The status is the endpoint's answer; a body cut short after a
		// 2xx is still an answer, so it stays a success.
		a.Err = "reading the response: " + err.Error()
	}
	return a
}

// excerpt is b as valid UTF-8, without a rune the cut split in two.
func excerpt(b []byte, cut bool) string {
	if cut {
		for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
			r, size := utf8.DecodeLastRune(b)
			if r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// classify sorts a failed exchange and says what failed without the URL.
func classify(ctx context.Context, err error) (Class, string) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ae *AddrError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var ne net.Error
	switch {
	case errors.As(err, &ae):
		return ClassAddress, ae.Error()
	case errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ClassCanceled, "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout, "no answer within the attempt's time"
	case errors.As(err, &dnsErr):
		return ClassDNS, "resolving " + dnsErr.Name + ": " + dnsErr.Err
	case errors.As(err, &certErr), errors.As(err, &recErr):
		return ClassTLS, err.Error()
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ClassConnect, err.Error()
	case strings.Contains(err.Error(), "tls:"):
		return ClassTLS, err.Error()
	}
	return ClassTransport, err.Error()
}
