package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/connlimit"
	"github.com/ctxkit/ctxkit/store"
)

// stream serves GET /events/stream: Server-Sent Events of the changes the
// caller may see that pass its selector (streamSelector). Each
// event's id is its sequence number; a client that reconnects with
// Last-Event-ID gets what it missed from the store's backlog. Without one,
// the stream starts with the next change. A ping event keeps idle
// connections open. The store filters (its feed hands each stream only the
// changes it passes), so a change wakes only the streams it is for.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, p Principal) error {
	after := int64(-1)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	if last != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
		if err != nil || n < 0 {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, "Last-Event-ID", "%q is not an event id", last)
		}
		after = n
	}
	if after < 0 {
		// Fix the starting point before answering, so a change made right
		// after the client sees the response is never missed.
		latest, err := s.opts.Store.LatestSeq(r.Context())
		if err != nil {
			return err
		}
		after = latest
	}
	filter, err := s.streamSelector(r, p)
	if err != nil {
		return err
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("response writer cannot flush")
	}

	ctx := r.Context()
	type item struct {
		e   store.Event
		err error
	}
	// Buffered, so that changes that arrive together go out in one write.
	events := make(chan item, maxCoalesced)
	go func() {
		defer close(events)
		for e, err := range s.opts.Store.Events(ctx, actor(p), after, filter) {
			select {
			case events <- item{e, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": ctxkit event stream\n\n")
	flusher.Flush()
	// The client resumes with Last-Event-ID: a server at its bound on
	// connections may end the stream rather than refuse others.
	connlimit.Resumable(ctx)

	ping := time.NewTicker(s.opts.PingEvery)
	defer ping.Stop()
	// The token is checked again as often as revocations are refreshed:
	// a stream ends within about a second of its token's revocation or
	// expiry (the client's reconnect then gets the 401 saying why).
	recheck := time.NewTicker(RevocationRefresh)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.streams.Done():
			return nil
		case <-recheck.C:
			var ae *Error
			if _, err := s.authenticate(r); errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
				return nil
			}
		case <-ping.C:
			fmt.Fprintf(w, "event: ping\ndata: {}\n\n")
			flusher.Flush()
		case it, ok := <-events:
			// Write what is waiting besides this change, then flush once:
			// a stream that is behind catches up in fewer, larger writes.
			for n := 1; ; n++ {
				if !ok {
					flusher.Flush()
					return nil
				}
				if it.err != nil {
					flusher.Flush()
					s.opts.Logger.Error("event stream", "err", it.err)
					return nil // the response has started; the client reconnects with Last-Event-ID
				}
				w.Write(s.frame(&it.e))
				if n == maxCoalesced {
					break
				}
				select {
				case it, ok = <-events:
					continue
				default:
				}
				break
			}
			flusher.Flush()
		}
	}
}

// streamSelector is the selector of an event stream: the JSON of the
// selector parameter, the caller's stored subscription named by the
// subscription parameter, or the shorthand of tag (all must match) and
// schema_name; nil (every change) with none of them. Only one of the three
// ways may be used.
func (s *Server) streamSelector(r *http.Request, p Principal) (*store.Selector, error) {
	q := r.URL.Query()
	ways := 0
	for _, set := range []bool{q.Has("selector"), q.Has("subscription"), q.Has("tag") || q.Has("schema_name")} {
		if set {
			ways++
		}
	}
	if ways > 1 {
		return nil, errorAt(http.StatusBadRequest, store.CodeInvalid, "selector", "give one of selector, subscription, or tag and schema_name")
	}
	switch {
	case q.Has("selector"):
		sel, err := store.ParseSelector([]byte(q.Get("selector")))
		if err != nil {
			return nil, selectorError("selector", err)
		}
		return sel, nil
	case q.Has("subscription"):
		sub, err := s.opts.Store.Subscription(r.Context(), actor(p), q.Get("subscription"))
		if err != nil {
			return nil, err
		}
		return sub.Selector, nil
	case ways == 0:
		return nil, nil
	}
	// The shorthand keeps its own parameter names in its errors.
	sel, err := (&store.Selector{AllTags: q["tag"], SchemaName: q.Get("schema_name")}).Compile()
	var se *store.Error
	if errors.As(err, &se) && strings.HasPrefix(se.Path, "all_tags") {
		return nil, errorAt(http.StatusBadRequest, store.CodeInvalid, "tag", "%s", se.Msg)
	}
	return sel, err
}

// selectorError places a selector's error under the parameter or field
// that held it (selector.context_match[1].op).
func selectorError(field string, err error) error {
	var se *store.Error
	if !errors.As(err, &se) {
		return err
	}
	path := field
	if se.Path != "" {
		path += "." + se.Path
	}
	// A selector over its size is still a fault of its text: 400, as an
	// invalid one, with the store's code (too_large).
	return &Error{Status: http.StatusBadRequest, Code: Code(se.Code), Path: path, Msg: path + ": " + se.Msg, Err: se}
}

// frame is the Server-Sent Events frame of a change. A change goes to every
// stream that may see it, and a sequence number always names the same
// change: it is encoded once.
func (s *Server) frame(e *store.Event) []byte {
	if f, ok := s.frames.Get(e.Seq); ok {
		return f
	}
	data, _ := json.Marshal(e)
	f := fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, data)
	s.frames.Add(e.Seq, f)
	return f
}

// maxCoalesced is how many changes one write to an event stream carries at
// most: about what fills net/http's 4 KiB response buffer.
const maxCoalesced = 16
