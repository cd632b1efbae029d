package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

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

// relayRoutes registers POST /relay: the prompt relay for agents not
// written in Go. It reads and writes no stored data, so any role may call it.
func (s *Server) relayRoutes(m *http.ServeMux) {
	m.Handle("POST /relay", s.authed("", s.relay))
}

func (s *Server) relay(w http.ResponseWriter, r *http.Request, _ Principal) error {
	var req relayRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Pipeline == nil || string(req.Pipeline) == "null" {
		return errorf(http.StatusBadRequest, relay.CodeInvalidPipeline, "pipeline: required (an object with transformers, or a pipeline file's text)")
	}
	if req.Context == nil || string(req.Context) == "null" {
		return errorf(http.StatusBadRequest, relay.CodeInvalidContext, "context: required (source_agent, target_agent, task, prompts, memory, constraints)")
	}
	text := []byte(req.Pipeline)
	var file string
	if json.Unmarshal(req.Pipeline, &file) == nil {
		text = []byte(file)
	}
	p, err := relay.ParsePipeline(bytes.NewReader(text))
	if err != nil {
		return relayError(err, "pipeline")
	}
	rc, err := relay.DecodeContext(req.Context, relay.Limits{MaxBytes: int(s.opts.MaxBodyBytes)})
	if err != nil {
		return relayError(err, "context")
	}
	prompts, trace, err := p.Run(r.Context(), rc)
	if err != nil {
		return relayError(err, "")
	}
	resp := map[string]any{"prompts": prompts, "trace": trace}
	if req.Assemble {
		resp["request"] = relay.Assemble(prompts)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// relayError maps a relay error to an API error: the relay's code, the
// place prefixed with the request field it is in, 422 for a transformer
// that failed, 413 for an input past the limits, 400 otherwise.
func relayError(err error, field string) error {
	var re *relay.Error
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) {
		return err
	}
	status := http.StatusBadRequest
	switch re.Code {
	case relay.CodeTransformFailed:
		status = http.StatusUnprocessableEntity
	case relay.CodeTooLarge:
		status = http.StatusRequestEntityTooLarge
	}
	msg := re.Error()
	if field != "" {
		if re.Path != "" {
			msg = field + "." + msg
		} else {
			msg = field + ": " + msg
		}
	}
	return errorf(status, re.Code, "%s", msg)
}
