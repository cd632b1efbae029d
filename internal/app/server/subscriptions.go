package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ctxkit/ctxkit/store"
)

// subscriptionRequest is the body of POST /subscriptions. The selector is
// read by store.ParseSelector, whose errors name the part at fault.
type subscriptionRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Selector    json.RawMessage `json:"selector"`
}

// subscriptionList is the answer of GET /subscriptions.
type subscriptionList struct {
	Items []store.Subscription `json:"items"`
}

// createSubscription serves POST /subscriptions: a named selector of the
// caller's agent, to stream with (GET /events/stream?subscription=ID).
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req subscriptionRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Selector) == 0 || string(req.Selector) == "null" {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "selector", "missing: a subscription has a selector ({} selects every change)")
	}
	sel, err := store.ParseSelector(req.Selector)
	if err != nil {
		return selectorError("selector", err)
	}
	sub, err := s.opts.Store.CreateSubscription(r.Context(), actor(p), store.Subscription{Name: req.Name, Description: req.Description, Selector: sel})
	if errors.Is(err, store.ErrTooManySubscriptions) {
		return errorf(http.StatusConflict, store.CodeTooManySubscriptions, "the agent has %d subscriptions, the limit: delete one first", store.MaxSubscriptions)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sub)
	return nil
}

// subscriptions serves GET /subscriptions: the caller's agent's, oldest first.
func (s *Server) subscriptions(w http.ResponseWriter, r *http.Request, p Principal) error {
	subs, err := s.opts.Store.Subscriptions(r.Context(), actor(p))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, subscriptionList{Items: subs})
	return nil
}

// subscription serves GET /subscriptions/{id}; another agent's is 404, as
// an unknown one is.
func (s *Server) subscription(w http.ResponseWriter, r *http.Request, p Principal) error {
	sub, err := s.opts.Store.Subscription(r.Context(), actor(p), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sub)
	return nil
}

// deleteSubscription serves DELETE /subscriptions/{id}. Streams opened
// with it go on with the selector they started with.
func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := s.opts.Store.DeleteSubscription(r.Context(), actor(p), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
