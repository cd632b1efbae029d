package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// Keeper keeps the responses a client of the Responses dialect asked to
// store (store: true, the API's default), so that a later request can
// continue the conversation with previous_response_id and GET and DELETE
// /v1/responses/{id} work. Each method acts for the caller the request's
// context names: a response is the caller's alone, and another caller's
// id reads as unknown.
type Keeper interface {
	// Keep stores the record of response id.
	Keep(ctx context.Context, id string, record []byte) error
	// Recall is the record of response id; ErrNotKept when there is none
	// the caller may read.
	Recall(ctx context.Context, id string) ([]byte, error)
	// Forget deletes the record of response id; ErrNotKept as Recall.
	Forget(ctx context.Context, id string) error
}

// ErrNotKept is a Keeper's answer for a response id it holds none of for
// the caller.
var ErrNotKept = errors.New("no such response")

// SetKeeper makes k keep the Responses dialect's stored responses. It is
// called once, before the gateway serves; without a keeper, stored
// responses, previous_response_id and /v1/responses/{id} are refused.
func (g *Gateway) SetKeeper(k Keeper) { g.keeper = k }

// kept is a stored response: what GET /v1/responses/{id} answers, and the
// conversation a continuation starts from.
type kept struct {
	ID     string `json:"id"`
	Model  string `json:"model"`
	Status string `json:"status"`
	// Usage is the response's usage in ctxkit's terms, for a view to
	// show without the bodies.
	Usage chat.Usage `json:"usage"`
	// Response is the response object as the client got it.
	Response json.RawMessage `json:"response"`
	// Messages are the conversation's turns, the response's output last
	// (instructions and tools are not carried over, as the API does).
	// Null when the conversation was too large to keep.
	Messages json.RawMessage `json:"messages"`
}

// Hints are the llm_hints of a stored response: a model reading the
// record sees what it was and what it cost, never the conversation.
var Hints = json.RawMessage(`{"exclude":["messages","response"]}`)

// MaxKeptBytes bounds a stored response (the store's context limit, less
// room for the record's own fields).
const MaxKeptBytes = 1<<20 - 4<<10

// continuation takes the Responses dialect's store and
// previous_response_id out of req (they are the gateway's, not the
// upstream's) and, for a continuation, puts the kept conversation before
// req's messages. It reports whether the response is to be kept.
func (g *Gateway) continuation(ctx context.Context, req *chat.Request) (keep bool, err error) {
	keep = true // the API's default
	if raw, ok := req.Extra["store"]; ok {
		var b *bool
		if json.Unmarshal(raw, &b) != nil {
			return false, &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: "store", Msg: "store: must be true, false or null"}
		}
		keep = b == nil || *b
	}
	raw, cont := req.Extra["previous_response_id"]
	req.Extra = maps.Clone(req.Extra) // the client's request keeps them, for the answer
	delete(req.Extra, "store")
	delete(req.Extra, "previous_response_id")
	var prev string
	if cont && json.Unmarshal(raw, &prev) != nil {
		return false, &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: "previous_response_id", Msg: "previous_response_id: must be a string"}
	}
	if (keep || prev != "") && g.keeper == nil {
		return false, &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: "store", Reason: "unsupported_field",
			Msg: "store: this gateway keeps no responses; send store: false and the whole conversation"}
	}
	if prev == "" {
		return keep, nil
	}
	rec, err := g.recall(ctx, prev)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusNotFound {
			e.Path, e.Reason = "previous_response_id", "previous_response_not_found"
			e.Msg = fmt.Sprintf("Previous response with id '%s' not found.", prev)
		}
		return false, err
	}
	if len(rec.Messages) == 0 || string(rec.Messages) == "null" {
		return false, &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: "previous_response_id",
			Msg: fmt.Sprintf("previous_response_id: the conversation of %s was too large to keep; send the whole input", prev)}
	}
	history, err := decodeMessages(rec.Messages)
	if err != nil {
		return false, fmt.Errorf("kept response %s: %w", prev, err)
	}
	req.Messages = append(history, req.Messages...)
	return keep, nil
}

// decodeMessages reads kept messages with the canonical decoder, which
// checks them as it checks a client's.
func decodeMessages(raw json.RawMessage) ([]chat.Message, error) {
	body := append(append([]byte(`{"model":"kept","max_tokens":1,"messages":`), raw...), '}')
	req, err := chat.DecodeRequest(body)
	if err != nil {
		return nil, err
	}
	return req.Messages, nil
}

// recall reads the kept record of id for the caller of ctx.
func (g *Gateway) recall(ctx context.Context, id string) (kept, error) {
	var rec kept
	if g.keeper == nil {
		return rec, notKept(id)
	}
	data, err := g.keeper.Recall(ctx, id)
	if errors.Is(err, ErrNotKept) {
		return rec, notKept(id)
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("kept response %s: %w", id, err)
	}
	return rec, nil
}

func notKept(id string) *Error {
	return &Error{Code: CodeNotFound, Status: http.StatusNotFound, Path: "response_id", Msg: fmt.Sprintf("Response with id '%s' not found.", id)}
}

// keepResponse stores res, the answer to req (the conversation as sent
// upstream), as response id, with body the response object the client
// got. A conversation too large to keep is kept without its messages:
// the response can still be read, not continued.
func (g *Gateway) keepResponse(ctx context.Context, req *chat.Request, res chat.Response, id string, body []byte) error {
	status := "completed"
	switch {
	case res.Error != nil:
		status = "failed"
	case res.Stop.Reason == chat.StopMaxTokens || res.Stop.Reason == chat.StopContentFilter:
		status = "incomplete"
	}
	msgs := responses.Continue(*req, res, chat.Request{}).Messages
	rec := kept{ID: id, Model: req.Model, Status: status, Usage: res.Usage, Response: body}
	var err error
	if rec.Messages, err = json.Marshal(msgs); err != nil {
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(data) > MaxKeptBytes {
		rec.Messages = nil
		if data, err = json.Marshal(rec); err != nil {
			return err
		}
		if len(data) > MaxKeptBytes {
			return fmt.Errorf("response %s: %d bytes, more than the %d a stored response may have", id, len(data), MaxKeptBytes)
		}
	}
	return g.keeper.Keep(ctx, id, data)
}

// tee passes chunks on, collecting them, for a streamed response that is
// to be kept: when the upstream's stream has ended, done gets the
// collected response before the stop chunk is passed on, so that the
// response is kept before the client can read its end (and continue from
// it). Past limit bytes of content, the response is given to done as
// failed: the stream itself is bounded per event, not in all.
func tee(chunks iter.Seq2[chat.Chunk, error], limit int64, done func(chat.Response)) iter.Seq2[chat.Chunk, error] {
	return func(yield func(chat.Chunk, error) bool) {
		var (
			seen []chat.Chunk
			size int64
			stop *chat.Chunk
		)
		finish := func(failure *chat.StreamError) {
			res, err := chat.Collect(func(y func(chat.Chunk, error) bool) {
				for _, c := range seen {
					if !y(c, nil) {
						return
					}
				}
			})
			switch {
			case failure != nil:
				res.Error = failure
			case err != nil:
				res.Error = &chat.StreamError{Type: "api_error", Message: err.Error()}
			}
			done(res)
		}
		for c, err := range chunks {
			if err != nil {
				finish(&chat.StreamError{Type: "api_error", Message: err.Error()})
				yield(c, err)
				return
			}
			if size <= limit {
				size += int64(len(c.Text)+len(c.Arguments)+len(c.Signature)+len(c.Redacted)) + 64
				seen = append(seen, c)
			}
			if c.Type == chat.ChunkStop {
				stop = &c
				continue
			}
			if !yield(c, nil) {
				return
			}
		}
		var failure *chat.StreamError
		if size > limit {
			failure = &chat.StreamError{Type: "too_large", Message: "the response is larger than ctxkit keeps"}
		}
		finish(failure)
		if stop != nil {
			yield(*stop, nil)
		}
	}
}

// Response serves GET /v1/responses/{id}: the kept response object.
func (g *Gateway) Response(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	// OpenAI replays a stored response's events for stream=true (from
	// starting_after); ctxkit keeps the response, not its events, and a
	// client that asked for a stream must not be handed JSON it will read
	// as one.
	for _, name := range []string{"stream", "starting_after"} {
		if v := r.URL.Query().Get(name); v != "" && !(name == "stream" && v == "false") {
			g.fail(w, Responses, &Error{Code: CodeInvalidRequest, Status: http.StatusBadRequest, Path: name, Reason: "unsupported_field",
				Msg: name + ": ctxkit keeps a response, not its stream events: retrieve it without " + name})
			return
		}
	}
	rec, err := g.recall(r.Context(), id)
	if err != nil {
		g.fail(w, Responses, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(rec.Response, '\n'))
}

// DeleteResponse serves DELETE /v1/responses/{id}.
func (g *Gateway) DeleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := notKept(id)
	if g.keeper != nil {
		if e := g.keeper.Forget(r.Context(), id); e == nil {
			writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
			return
		} else if !errors.Is(e, ErrNotKept) {
			g.fail(w, Responses, e)
			return
		}
	}
	g.fail(w, Responses, err)
}
