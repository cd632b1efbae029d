package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/relay"
)

// relayRequest is a POST /relay body: a pipeline (an object, or a string
// holding a JSON or YAML pipeline file), a relay context, and whether to
// assemble the result into a canonical chat request.
type relayRequest struct {
	Pipeline json.RawMessage `json:"pipeline"`
	Context  json.RawMessage `json:"context"`
	Assemble bool            `json:"assemble"`
}

// relayReply is a relay's answer: the relayed prompts, what each
// transformer did and, when asked, the canonical request they make. The
// fields are in name order, the order the API has always written them.
type relayReply struct {
	Prompts []relay.Prompt `json:"prompts"`
	Request *chat.Request  `json:"request,omitempty"`
	Trace   *relay.Trace   `json:"trace"`
}

// Bounds on POST /relay besides the body's size, depth and the relay
// package's own limits: a pipeline sent over HTTP has at most
// maxHTTPTransformers transformers (a pipeline file given to the CLI may
// have relay.MaxTransformers), and a relay runs for at most
// Options.RelayTimeout (default defaultRelayTimeout), waiting for a slot
// included.
const (
	maxHTTPTransformers = 16
	defaultRelayTimeout = 5 * time.Second
)

// relay serves POST /relay: the prompt relay for agents not written in
// Go. It reads and writes no stored data, so any role may call it.
//
// A relay is computation on what the caller sent, so it is bounded like a
// view: it takes one of the server's computation slots (the view slots,
// Options.MaxConcurrentViews) and runs under a deadline. A request that
// finds no free slot before its deadline is answered 503 RELAY_BUSY with
// Retry-After; one whose relay runs past it, 503 RELAY_TIMEOUT.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, _ Principal) error {
	timeout := s.opts.RelayTimeout
	if timeout <= 0 {
		timeout = defaultRelayTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	var req relayRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Pipeline == nil || string(req.Pipeline) == "null" {
		return errorAt(http.StatusBadRequest, relay.CodeInvalidPipeline, "pipeline", "required (an object with transformers, or a pipeline file's text)")
	}
	if req.Context == nil || string(req.Context) == "null" {
		return errorAt(http.StatusBadRequest, relay.CodeInvalidContext, "context", "required (source_agent, target_agent, task, prompts, memory, constraints)")
	}
	text := []byte(req.Pipeline)
	var file string
	if json.Unmarshal(req.Pipeline, &file) == nil {
		text = []byte(file)
	}
	p, err := relay.ParsePipeline(bytes.NewReader(text))
	if err != nil {
		return relayError(err, "pipeline", timeout)
	}
	if n := len(p.Transformers()); n > maxHTTPTransformers {
		return errorAt(http.StatusRequestEntityTooLarge, relay.CodeTooLarge, "pipeline.transformers", "%d transformers; POST /relay takes at most %d", n, maxHTTPTransformers)
	}
	lim := relay.Limits{MaxBytes: int(s.opts.MaxBodyBytes)}
	rc, err := relay.DecodeContext(req.Context, lim)
	if err != nil {
		return relayError(err, "context", timeout)
	}
	release, err := s.relaySlot(ctx, r)
	if err != nil {
		if r.Context().Err() == nil {
			w.Header().Set("Retry-After", "1")
		}
		return err
	}
	defer release()
	prompts, trace, err := p.Run(ctx, rc)
	if err != nil {
		return relayError(err, "", timeout)
	}
	resp := relayReply{Prompts: prompts, Trace: trace}
	if req.Assemble {
		cr, err := relay.AssembleChecked(prompts, lim)
		if err != nil {
			return relayError(err, "", timeout)
		}
		resp.Request = &cr
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// relaySlot takes a computation slot, a free one at once, or else the
// first to come free before ctx ends (RELAY_BUSY).
func (s *Server) relaySlot(ctx context.Context, r *http.Request) (release func(), err error) {
	release = func() { <-s.viewSlots }
	select {
	case s.viewSlots <- struct{}{}:
		return release, nil
	default:
	}
	select {
	case s.viewSlots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		if err := r.Context().Err(); err != nil {
			return nil, err
		}
		return nil, errorf(http.StatusServiceUnavailable, CodeRelayBusy, "the server is running as many relays and views as it may; try again shortly")
	}
}

// relayError maps a relay error to an API error: the relay's code, the
// place prefixed with the request field it is in, 422 for a transformer
// that failed, 413 for an input past the limits (a transformer's text
// that would grow past them included), 503 RELAY_TIMEOUT for a relay past
// its deadline, 400 otherwise.
func relayError(err error, field string, timeout time.Duration) error {
	var re *relay.Error
	if errors.Is(err, context.DeadlineExceeded) {
		w := "the relay"
		if re, ok := err.(*relay.Error); ok && re.Transformer != "" {
			w = "transformers[" + strconv.Itoa(re.Step) + "] (" + re.Transformer + ")"
		}
		e := errorf(http.StatusServiceUnavailable, CodeRelayTimeout, "%s ran past the relay's deadline of %s: send fewer or smaller prompts, or a smaller pipeline", w, timeout)
		e.Err = err
		return e
	}
	if errors.Is(err, context.Canceled) || !errors.As(err, &re) {
		return err
	}
	status := http.StatusBadRequest
	switch {
	case errors.Is(err, &relay.Error{Code: relay.CodeTooLarge}):
		status = http.StatusRequestEntityTooLarge
		re = &relay.Error{Code: relay.CodeTooLarge, Transformer: re.Transformer, Targets: re.Targets, Step: re.Step, Path: re.Path, Msg: re.Msg}
	case re.Code == relay.CodeTransformFailed:
		status = http.StatusUnprocessableEntity
	}
	msg, path := re.Error(), re.Path
	if field != "" {
		if re.Path != "" {
			msg, path = field+"."+msg, field+"."+re.Path
		} else {
			msg, path = field+": "+msg, field
		}
	}
	return &Error{Status: status, Code: Code(re.Code), Path: path, Msg: msg, Err: re}
}
