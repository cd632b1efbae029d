// Package connlimit bounds the connections an http.Server holds open, so
// that idle keep-alive connections cannot use up the process's file
// descriptors, and keeps room to answer health checks at the bound.
//
// Up to Max connections are open at once. Of them, Reserve are kept for
// connections that arrive when every other slot is busy serving a request:
// such a connection answers one request (a health check, as Options.Admit
// says, else 503) and is closed. A connection that arrives at the bound
// first takes the slot of the oldest connection waiting for its client (idle
// keep-alive, new and silent, or answered but still owing the request body
// it announced), which is closed; when every slot serves a request, the
// oldest stream marked Resumable gives way. Past three quarters of
// the bound, a connection is closed as soon as it goes idle. A connection
// that finds no room at all is accepted and closed at once rather than left
// waiting in the listen backlog.
package connlimit

import (
	"container/list"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a bound; Max is required.
type Options struct {
	// Max bounds the open connections, reserve included; at least 2.
	// Default gives one from the process's file-descriptor limit.
	Max int
	// Reserve is how many of Max are kept for connections that arrive when
	// the others are all serving requests; default Max/64, at least 1 and
	// at most 64.
	Reserve int
	// Admit says which requests a reserve connection serves (a health
	// check); nil: none.
	Admit func(*http.Request) bool
	// Reject answers the other requests on a reserve connection; default a
	// 503 with Retry-After and ctxkit's JSON error.
	Reject http.Handler
	// ReserveTimeout bounds a reserve connection's life; default 5s.
	ReserveTimeout time.Duration
}

// Stats are a Listener's counts.
type Stats struct {
	Open     int    // connections open, reserve included
	Reserve  int    // reserve connections open
	Waiting  int    // connections waiting for a request (idle or new)
	Peak     int    // most connections open at once
	Evicted  uint64 // waiting connections closed to make room or under pressure
	Rejected uint64 // requests on reserve connections answered 503
	Refused  uint64 // connections closed on arrival: no room at all
}

// Listener is a net.Listener that bounds its open connections.
type Listener struct {
	net.Listener
	opts      Options
	normal    int // Max - Reserve
	highWater int // past it, idle connections are closed

	mu      sync.Mutex
	open    int       // normal connections open
	reserve int       // reserve connections open
	fresh   list.List // *conn accepted and not yet sending, oldest first
	idle    list.List // *conn idle between requests, oldest first
	streams list.List // *conn serving a resumable stream, oldest first
	peak    int

	evicted, rejected, refused atomic.Uint64
}

type conn struct {
	net.Conn
	l       *Listener
	reserve bool
	el      *list.Element // in l.fresh or l.idle; nil when serving a request
	since   time.Time     // when it began waiting
	closed  bool          // under l.mu
	// hijacked: taken over by its handler (under l.mu); never evicted.
	hijacked bool
	once     sync.Once
}

func (c *conn) Close() error {
	c.once.Do(c.l.release(c))
	return c.Conn.Close()
}

type connKey struct{}

// Wrap bounds the connections srv serves from ln: serve srv on the Listener
// it returns. It sets srv.ConnState (calling the one set before) and
// srv.ConnContext, and wraps srv.Handler for the reserve connections. opts.Max
// must be at least 2.
func Wrap(srv *http.Server, ln net.Listener, opts Options) *Listener {
	if opts.Max < 2 {
		opts.Max = 2
	}
	if opts.Reserve <= 0 {
		opts.Reserve = min(max(opts.Max/64, 1), 64)
	}
	opts.Reserve = min(opts.Reserve, opts.Max-1)
	if opts.ReserveTimeout <= 0 {
		opts.ReserveTimeout = 5 * time.Second
	}
	if opts.Reject == nil {
		opts.Reject = http.HandlerFunc(busy)
	}
	l := &Listener{Listener: ln, opts: opts, normal: opts.Max - opts.Reserve}
	l.highWater = l.normal * 3 / 4
	prevState := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		l.connState(c, s)
		if prevState != nil {
			prevState(c, s)
		}
	}
	prevCtx := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		return context.WithValue(ctx, connKey{}, c)
	}
	next := srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		if !c.reserve {
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			body := &watchedBody{ReadCloser: r.Body, want: r.ContentLength}
			r.Body = body
			next.ServeHTTP(w, r)
			if !body.done {
				// net/http now reads the rest of the body to discard
				// it, for as long as the client takes to send it (up to
				// the server's ReadTimeout): the connection waits for its
				// client, like an idle one, and may give its slot up.
				l.draining(c)
			}
			return
		}
		// One request, then the slot is given back.
		w.Header().Set("Connection", "close")
		if l.opts.Admit != nil && l.opts.Admit(r) {
			next.ServeHTTP(w, r)
			return
		}
		l.rejected.Add(1)
		l.opts.Reject.ServeHTTP(w, r)
	})
	return l
}

// watchedBody notes whether a handler read its request body to the end.
type watchedBody struct {
	io.ReadCloser
	want, got int64 // want: the Content-Length, or -1
	done      bool  // read by the handler's goroutine only
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.got += int64(n)
	if err == io.EOF || (b.want >= 0 && b.got >= b.want) {
		b.done = true
	}
	return n, err
}

// draining lists c among the connections waiting for their client: its
// handler is done, and the request body it left unread is still to come.
func (l *Listener) draining(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed || c.hijacked || c.el != nil {
		return
	}
	c.since = time.Now()
	c.el = l.fresh.PushBack(c)
}

// Resumable marks the connection serving ctx's request as one that may be
// closed when a connection comes and every slot is busy: its response is
// a long-lived stream its client resumes where it left off (an event
// stream and its Last-Event-ID), so streams cannot hold every slot and
// lock other clients out. The oldest stream gives way first. A no-op for
// a connection no Listener bounds.
func Resumable(ctx context.Context) {
	c, _ := ctx.Value(connKey{}).(*conn)
	if c == nil || c.reserve {
		return
	}
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed || c.hijacked || c.el != nil {
		return
	}
	c.since = time.Now()
	c.el = l.streams.PushBack(c)
}

func busy(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(`{"error":{"code":"busy","message":"the server holds as many connections as it may; retry shortly"}}` + "\n"))
}

// Accept returns the next connection there is room for.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(nc); c != nil {
			return c, nil
		}
		l.refused.Add(1)
		nc.Close()
	}
}

// admit finds a slot for nc: a free one, the oldest waiting connection's,
// or one of the reserve; nil when there is none.
func (l *Listener) admit(nc net.Conn) net.Conn {
	for {
		l.mu.Lock()
		if l.open < l.normal {
			l.open++
			c := &conn{Conn: nc, l: l, since: time.Now()}
			c.el = l.fresh.PushBack(c)
			l.notePeak()
			var victim *conn
			if l.open > l.highWater {
				// Near the bound: one idle keep-alive connection goes for
				// each that comes.
				victim = l.pop(&l.idle)
			}
			l.mu.Unlock()
			if victim != nil {
				l.evicted.Add(1)
				victim.Close()
			}
			return c
		}
		victim := l.popOldest()
		if victim == nil {
			// Every slot serves a request: a resumable stream gives way
			// rather than the newcomer being turned away.
			victim = l.pop(&l.streams)
		}
		if victim != nil {
			l.mu.Unlock()
			l.evicted.Add(1)
			victim.Close() // gives its slot back
			continue
		}
		if l.reserve < l.opts.Reserve {
			l.reserve++
			l.notePeak()
			l.mu.Unlock()
			nc.SetDeadline(time.Now().Add(l.opts.ReserveTimeout))
			return &conn{Conn: nc, l: l, reserve: true}
		}
		l.mu.Unlock()
		return nil
	}
}

func (l *Listener) notePeak() {
	if n := l.open + l.reserve; n > l.peak {
		l.peak = n
	}
}

// pop takes the oldest connection off list, or returns nil; l.mu is held.
func (l *Listener) pop(list *list.List) *conn {
	el := list.Front()
	if el == nil {
		return nil
	}
	c := list.Remove(el).(*conn)
	c.el = nil
	return c
}

// popOldest takes the connection that has waited longest for a request,
// idle or fresh, off its list; l.mu is held.
func (l *Listener) popOldest() *conn {
	f, i := l.fresh.Front(), l.idle.Front()
	if f != nil && (i == nil || f.Value.(*conn).since.Before(i.Value.(*conn).since)) {
		return l.pop(&l.fresh)
	}
	return l.pop(&l.idle)
}

// unlist takes c off the list it is on; l.mu is held.
func (l *Listener) unlist(c *conn) {
	if c.el != nil {
		// Remove is a no-op on the lists c is not on.
		l.fresh.Remove(c.el)
		l.idle.Remove(c.el)
		l.streams.Remove(c.el)
		c.el = nil
	}
}

func (l *Listener) release(c *conn) func() {
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.unlist(c)
		c.closed = true
		if c.reserve {
			l.reserve--
		} else {
			l.open--
		}
	}
}

func (l *Listener) connState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || c.reserve {
		return
	}
	l.mu.Lock()
	switch s {
	case http.StateActive:
		l.unlist(c)
	case http.StateHijacked:
		l.unlist(c)
		c.hijacked = true
	case http.StateIdle:
		if c.closed {
			break
		}
		l.unlist(c) // listed while its unread request body was discarded
		if l.open > l.highWater {
			l.mu.Unlock()
			l.evicted.Add(1)
			c.Close()
			return
		}
		c.since = time.Now()
		c.el = l.idle.PushBack(c)
	}
	l.mu.Unlock()
}

// Stats returns the listener's counts.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Open: l.open + l.reserve, Reserve: l.reserve, Waiting: l.fresh.Len() + l.idle.Len(), Peak: l.peak,
		Evicted: l.evicted.Load(), Rejected: l.rejected.Load(), Refused: l.refused.Load()}
}

// Default is the bound for a process that may open nofile descriptors: what
// is left after a headroom for the database, files, upstream connections
// and the listener (64, plus an eighth of the limit).
func Default(nofile uint64) int {
	n := int(min(nofile, 1<<30))
	return max(n-64-n/8, 2)
}
