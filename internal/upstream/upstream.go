// Package upstream is ctxkit's HTTP client for the model providers it
// calls (the gateway's upstreams, the server `ctxkit scaffold` asks).
//
// The threat it guards against is the provider's key going somewhere else
// or coming back out: a request carries the key in a header, so
//   - a redirect is never followed (the key would go to another host, and
//     the POST would turn into a GET);
//   - a proxy from the environment is used for https upstreams only, where
//     it tunnels the connection and sees no header; a plain http upstream
//     is always reached directly;
//   - the text of a failed exchange (the transport's error names the URL,
//     a redirect's its Location) goes through the caller's redaction;
//   - an error response is read only up to a bound, and a body that goes
//     quiet for longer than the idle timeout is closed.
package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// Options tune a Client. The zero value is a client with net/http's
// default timeouts and no idle timeout.
type Options struct {
	DialTimeout           time.Duration // default 30 s
	TLSHandshakeTimeout   time.Duration // default 10 s
	ResponseHeaderTimeout time.Duration // 0: none
	IdleConnTimeout       time.Duration // default 90 s
	MaxIdleConnsPerHost   int           // 0: net/http's default
	HTTP2                 bool          // attempt HTTP/2 over TLS
	// Redirect is the error a request that is redirected to `to` fails
	// with; nil: the redirect is the answer (an error status).
	Redirect func(to *url.URL) error
	// MaxErrorBody is how much of an error response is read (default 64 KiB).
	MaxErrorBody int64
	// IdleTimeout ends a response body that sends nothing for this long
	// (0: never); Body.Idled tells a read that failed for it.
	IdleTimeout time.Duration
	// HTTP, when set, sends the requests instead of a client made of the
	// fields above (which then apply only as MaxErrorBody and IdleTimeout).
	HTTP *http.Client
}

// Client sends requests to providers. It is safe for concurrent use.
type Client struct {
	http         *http.Client
	maxErrorBody int64
	idle         time.Duration
}

// New is a client with o.
func New(o Options) *Client {
	if o.MaxErrorBody <= 0 {
		o.MaxErrorBody = 64 << 10
	}
	c := &Client{http: o.HTTP, maxErrorBody: o.MaxErrorBody, idle: o.IdleTimeout}
	if c.http == nil {
		c.http = newHTTPClient(o)
	}
	return c
}

func newHTTPClient(o Options) *http.Client {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 30 * time.Second
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = 10 * time.Second
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	redirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if o.Redirect != nil {
		redirect = func(r *http.Request, _ []*http.Request) error { return o.Redirect(r.URL) }
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 Proxy,
			DialContext:           dialer(o.DialTimeout),
			ForceAttemptHTTP2:     o.HTTP2,
			TLSHandshakeTimeout:   o.TLSHandshakeTimeout,
			ResponseHeaderTimeout: o.ResponseHeaderTimeout,
			MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
			IdleConnTimeout:       o.IdleConnTimeout,
		},
		CheckRedirect: redirect,
	}
}

// dialer dials within the request's Request.ConnectTimeout when it has
// one, else within def: one transport (one pool of connections) serves
// upstreams with different connect timeouts.
func dialer(def time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: def, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if t, ok := ctx.Value(connectKey{}).(time.Duration); ok && t > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, t)
			defer cancel()
		}
		return d.DialContext(ctx, network, addr)
	}
}

// connectKey carries a request's connect timeout to the dialer (the
// transport dials with a context that keeps the request's values).
type connectKey struct{}

// Proxy is the proxy from the environment for an https upstream, and none
// for a plain http one: the key would travel to the proxy in clear text.
func Proxy(r *http.Request) (*url.URL, error) {
	if r.URL.Scheme != "https" {
		return nil, nil
	}
	return http.ProxyFromEnvironment(r)
}

// Request is one call.
type Request struct {
	Method string
	URL    string
	// Header is added to the request's headers (the key's among them).
	// Its values are shared, not copied: a caller may build it once and
	// send it with every request, and must not change it meanwhile.
	Header http.Header
	Body   []byte // sent as application/json; nil: no body
	// Redact takes the key out of the text of a failure (nil: nothing
	// to take out).
	Redact func(string) string
	// ConnectTimeout bounds dialing a new connection (0: the client's
	// DialTimeout). It applies to the clients New makes, not to
	// Options.HTTP.
	ConnectTimeout time.Duration
	// FirstByte, when > 0, bounds the time until the response's headers
	// and the first byte of a 2xx body have come: Do returns only once that
	// byte is in (or the body ended), so that a caller knows the upstream
	// is answering before it commits to anything. Past it, Do fails with
	// an *Error of CodeTransport wrapping ErrFirstByte.
	FirstByte time.Duration
	// Idle, when > 0, replaces the client's IdleTimeout for this request.
	Idle time.Duration
}

// ErrFirstByte is the cause of a request whose answer did not begin
// within Request.FirstByte.
var ErrFirstByte = errors.New("the upstream sent no first byte in time")

// Response is a 2xx answer.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       Body // the caller closes it
}

// Do sends r. An answer with another status than 2xx is an *Error of
// CodeStatus (its body read up to MaxErrorBody and closed); no answer is
// an *Error of CodeTransport.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	if r.ConnectTimeout > 0 {
		ctx = context.WithValue(ctx, connectKey{}, r.ConnectTimeout)
	}
	// The first-byte clock ends the request through its context; the
	// context lives as long as the body (Close cancels it).
	var (
		cancel context.CancelCauseFunc
		clock  *time.Timer
	)
	if r.FirstByte > 0 {
		ctx, cancel = context.WithCancelCause(ctx)
		clock = time.AfterFunc(r.FirstByte, func() { cancel(ErrFirstByte) })
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		if cancel != nil {
			clock.Stop()
			cancel(nil)
		}
		return nil, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if r.Body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if cancel != nil {
			clock.Stop()
			cancel(nil)
			if errors.Is(context.Cause(ctx), ErrFirstByte) {
				err = ErrFirstByte
			}
		}
		return nil, transportError(err, r.Redact)
	}
	idle := c.idle
	if r.Idle > 0 {
		idle = r.Idle
	}
	out := &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: Body{rc: resp.Body, idle: idle}}
	b := &out.Body
	b.cancel = cancel
	if idle > 0 {
		b.timer = time.AfterFunc(idle, func() {
			b.idled.Store(true)
			resp.Body.Close()
		})
	}
	if resp.StatusCode/100 != 2 {
		if clock != nil {
			clock.Stop()
		}
		defer b.Close()
		data, _ := io.ReadAll(io.LimitReader(b, c.maxErrorBody))
		return nil, &Error{Code: CodeStatus, Msg: "the upstream answered " + resp.Status,
			StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, Body: data}
	}
	if clock != nil {
		if err := b.peek(); err != nil || !clock.Stop() {
			// The clock ran out (the read failed for it, or it ran out
			// as the byte came: the body is cancelled either way), or the
			// connection failed before the first byte.
			b.Close()
			if errors.Is(context.Cause(ctx), ErrFirstByte) {
				err = ErrFirstByte
			}
			return nil, transportError(&url.Error{Op: r.Method, URL: r.URL, Err: err}, r.Redact)
		}
	}
	return out, nil
}

// Code is the kind of an Error.
type Code string

// Codes of Error.
const (
	// CodeStatus: the upstream answered with another status than 2xx.
	CodeStatus Code = "UPSTREAM_STATUS"
	// CodeTransport: no answer (the connection failed, the context
	// ended, a redirect was refused).
	CodeTransport Code = "UPSTREAM_TRANSPORT"
)

// Error is a failed exchange with an upstream.
type Error struct {
	Code Code
	Path string // always "": the fault is the exchange's, not a place in the request
	// Msg is the failure as said to a log: for CodeTransport the
	// transport's error (method, URL and cause) after the caller's
	// redaction; for CodeStatus "the upstream answered " and the status.
	Msg string
	// Err is the cause of a CodeTransport error (a *url.Error's Err): a
	// network error, the context's error, the error of Options.Redirect.
	// Its text is not redacted.
	Err error

	// Of a CodeStatus error: the status, its text ("429 Too Many
	// Requests"), the headers and the start of the body as sent (the
	// provider's parser reads it; whoever shows any of it redacts it
	// first).
	StatusCode int
	Status     string
	Header     http.Header
	Body       []byte
}

func transportError(err error, redact func(string) string) *Error {
	msg := err.Error()
	if redact != nil {
		msg = redact(msg)
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	return &Error{Code: CodeTransport, Msg: msg, Err: cause}
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// Body is a response body (not to be copied) that ends when it goes quiet for longer than
// the idle timeout, and that is drained (up to a bound) before it is
// closed, so that its connection goes back to the pool: decoders stop at
// the stream's end marker, before EOF.
type Body struct {
	rc     io.ReadCloser
	idled  atomic.Bool // the idle timer closed the body
	closed bool
	eof    bool // read to its end: nothing to drain
	idle   time.Duration
	timer  *time.Timer
	before func()
	cancel context.CancelCauseFunc // ends the request's context; nil: none of its own
	// head holds the bytes read ahead by peek, served before the rest.
	head    [512]byte
	headOff int
	headLen int
}

// peek reads the first bytes of the body into head. The end of an empty
// body is not an error: the reader of the body finds it.
func (b *Body) peek() error {
	n, err := b.rc.Read(b.head[:])
	for n == 0 && err == nil {
		n, err = b.rc.Read(b.head[:])
	}
	b.headLen = n
	if n > 0 && b.timer != nil {
		b.timer.Reset(b.idle)
	}
	if err == io.EOF {
		b.eof = true
		return nil
	}
	if n > 0 {
		// What failed after the first bytes fails again on the next read.
		return nil
	}
	return err
}

// Head is what the body has read ahead of its reader (the first bytes,
// up to 512, that came with the first-byte check) and not yet served: a
// look at the start of the answer that takes nothing from it.
func (b *Body) Head() []byte { return b.head[b.headOff:b.headLen] }

// Idled reports whether the idle timeout closed the body (the read that
// failed failed for that).
func (b *Body) Idled() bool { return b.idled.Load() }

// BeforeRead sets a function run before every read of the body (a read
// may wait for the upstream). Set it before the first read.
func (b *Body) BeforeRead(f func()) { b.before = f }

func (b *Body) Read(p []byte) (int, error) {
	if b.before != nil {
		b.before()
	}
	if b.headOff < b.headLen {
		n := copy(p, b.head[b.headOff:b.headLen])
		b.headOff += n
		return n, nil
	}
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if n > 0 && b.timer != nil {
		b.timer.Reset(b.idle)
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close drains what is left (64 KiB at most, for 50 ms at most) and
// closes the body. Closing twice does nothing.
func (b *Body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	if b.cancel != nil {
		defer b.cancel(nil)
	}
	// An upstream that keeps the connection open after the stream's end
	// (or after an error) must not hold the caller: the drain gets a
	// moment, then the body is closed (and the connection dropped).
	if !b.eof {
		stop := time.AfterFunc(50*time.Millisecond, func() { b.rc.Close() }) // unblocks the read
		io.CopyN(io.Discard, b.rc, 64<<10)
		stop.Stop()
	}
	return b.rc.Close()
}
