package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/ctxkit/ctxkit/internal/webhook"
	"github.com/ctxkit/ctxkit/store"
)

// webhookRequest is the body of POST /webhooks.
type webhookRequest struct {
	URL         string          `json:"url"`
	Selector    json.RawMessage `json:"selector"`
	Payload     string          `json:"payload"`
	Description string          `json:"description"`
}

// webhookPatchRequest is the body of PATCH /webhooks/{id}; absent fields
// stay.
type webhookPatchRequest struct {
	URL         *string         `json:"url"`
	Selector    json.RawMessage `json:"selector"`
	Description *string         `json:"description"`
	Paused      *bool           `json:"paused"`
}

// webhookSecretReply is a webhook with its signing secret: the answer of
// POST /webhooks and of a rotation, the only times the secret is shown.
type webhookSecretReply struct {
	store.Webhook
	Secret string `json:"secret"`
	// PreviousSecretUntil: after a rotation, the old secret signs beside
	// the new one until then.
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
}

type webhookList struct {
	Items []store.Webhook `json:"items"`
}

// deliveryReply is one delivery with the body it sends and its attempts.
type deliveryReply struct {
	store.Delivery
	Body     json.RawMessage         `json:"body"`
	Attempts []store.DeliveryAttempt `json:"attempt_log"`
}

type redeliverReply struct {
	Redelivered int `json:"redelivered"`
}

// webhookURL checks a target as the dispatcher will send to it: https, and
// an address the rule allows unless serve --webhook-allow-private.
func (s *Server) webhookURL(raw string) error {
	if raw == "" {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "url", "missing: a webhook has a target URL (https://…)")
	}
	if _, err := s.hooks.client.CheckURL(raw); err != nil {
		var ue *webhook.URLError
		if errors.As(err, &ue) {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, "url", "%s", ue.Reason)
		}
		return err
	}
	return nil
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req webhookRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	in, err := s.webhookInput(req)
	if err != nil {
		return err
	}
	b := binding(p)
	in.TokenID, in.TokenIssued = b.TokenID, b.Issued
	hook, keys, err := s.opts.Store.CreateWebhook(r.Context(), actor(p), in)
	if errors.Is(err, store.ErrTooManyWebhooks) {
		return errorf(http.StatusConflict, store.CodeTooManyWebhooks, "the agent has %d webhooks, the limit: delete one first", store.MaxWebhooks)
	}
	if err != nil {
		return err
	}
	s.hooks.wakeFanOut()
	writeJSON(w, http.StatusCreated, webhookSecretReply{Webhook: hook, Secret: keys.Current})
	return nil
}

// webhookInput checks a create's body, naming the field at fault.
func (s *Server) webhookInput(req webhookRequest) (store.Webhook, error) {
	if err := s.webhookURL(req.URL); err != nil {
		return store.Webhook{}, err
	}
	if len(req.Selector) == 0 || string(req.Selector) == "null" {
		return store.Webhook{}, errorAt(http.StatusBadRequest, store.CodeInvalid, "selector", "missing: a webhook has a selector ({} selects every change)")
	}
	sel, err := store.ParseSelector(req.Selector)
	if err != nil {
		return store.Webhook{}, selectorError("selector", err)
	}
	switch store.WebhookPayload(req.Payload) {
	case "", store.PayloadView, store.PayloadFull:
	default:
		return store.Webhook{}, errorAt(http.StatusBadRequest, store.CodeInvalid, "payload", "%q: use view (the record as the model sees it) or full", truncated(req.Payload))
	}
	return store.Webhook{URL: req.URL, Selector: sel, Payload: store.WebhookPayload(req.Payload), Description: req.Description}, nil
}

// binding is the caller's token, which a webhook it creates or manages
// acts by: a revocation of that token pauses the webhook, and the
// webhook reads with that token's role.
func binding(p Principal) store.WebhookBinding {
	return store.WebhookBinding{TokenID: p.tokenID, Issued: p.issued, Curator: p.Has(RoleCurator)}
}

// bindWebhook binds one of the caller's webhooks to the caller's token,
// before a call that manages it (rotate, test, redeliver): the webhook
// acts by the token that manages it last, with its role now.
func (s *Server) bindWebhook(r *http.Request, p Principal, id string) error {
	b := binding(p)
	_, err := s.opts.Store.UpdateWebhook(r.Context(), actor(p), id, store.WebhookPatch{Bind: &b})
	return err
}

func truncated(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

func (s *Server) webhooks(w http.ResponseWriter, r *http.Request, p Principal) error {
	hooks, err := s.opts.Store.Webhooks(r.Context(), actor(p))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, webhookList{Items: hooks})
	return nil
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request, p Principal) error {
	hook, err := s.opts.Store.Webhook(r.Context(), actor(p), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, hook)
	return nil
}

// webhookPatch checks a PATCH's body, naming the field at fault.
func (s *Server) webhookPatch(req webhookPatchRequest) (store.WebhookPatch, error) {
	p := store.WebhookPatch{URL: req.URL, Description: req.Description, Paused: req.Paused}
	if req.URL != nil {
		if err := s.webhookURL(*req.URL); err != nil {
			return p, err
		}
	}
	if len(req.Selector) > 0 {
		if string(req.Selector) == "null" {
			return p, errorAt(http.StatusBadRequest, store.CodeInvalid, "selector", "a webhook has a selector ({} selects every change)")
		}
		sel, err := store.ParseSelector(req.Selector)
		if err != nil {
			return p, selectorError("selector", err)
		}
		p.Selector = sel
	}
	return p, nil
}

func (s *Server) patchWebhook(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req webhookPatchRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	patch, err := s.webhookPatch(req)
	if err != nil {
		return err
	}
	b := binding(p)
	patch.Bind = &b
	hook, err := s.opts.Store.UpdateWebhook(r.Context(), actor(p), r.PathValue("id"), patch)
	if err != nil {
		return err
	}
	if req.Paused != nil && !*req.Paused {
		s.hooks.wakeDispatcher()
	}
	writeJSON(w, http.StatusOK, hook)
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := s.opts.Store.DeleteWebhook(r.Context(), actor(p), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := s.bindWebhook(r, p, r.PathValue("id")); err != nil {
		return err
	}
	hook, keys, err := s.opts.Store.RotateWebhookSecret(r.Context(), actor(p), r.PathValue("id"), webhook.RotationOverlap)
	if err != nil {
		return err
	}
	until := keys.PreviousUntil
	writeJSON(w, http.StatusOK, webhookSecretReply{Webhook: hook, Secret: keys.Current, PreviousSecretUntil: &until})
	return nil
}

// testWebhook queues a test message ({"type": "webhook.test"}), due now,
// signed and retried as any delivery.
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, p Principal) error {
	id := r.PathValue("id")
	if err := s.bindWebhook(r, p, id); err != nil {
		return err
	}
	hook, err := s.opts.Store.Webhook(r.Context(), actor(p), id)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"type": "webhook.test", "timestamp": s.opts.Now().UTC(), "webhook_id": hook.ID})
	if err != nil {
		return err
	}
	dl, err := s.opts.Store.EnqueueTest(r.Context(), actor(p), hook.ID, body)
	if err != nil {
		return err
	}
	s.hooks.wakeDispatcher()
	writeJSON(w, http.StatusAccepted, dl)
	return nil
}

// deliveryQuery reads ?status=&limit=&cursor=, naming the parameter at
// fault.
func deliveryQuery(r *http.Request) (store.DeliveryQuery, error) {
	q := r.URL.Query()
	st, err := store.ParseDeliveryStatus(q.Get("status"))
	if err != nil {
		return store.DeliveryQuery{}, err
	}
	out := store.DeliveryQuery{Status: st, Cursor: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || len(l) > 6 {
			return out, errorAt(http.StatusBadRequest, store.CodeInvalid, "limit", "not a number; use 1 to %d", store.MaxDeliveryPage)
		}
		out.Limit = n
		if n == 0 {
			return out, errorAt(http.StatusBadRequest, store.CodeInvalid, "limit", "0; use 1 to %d", store.MaxDeliveryPage)
		}
	}
	return store.CheckDeliveryQuery(out)
}

func (s *Server) deliveries(w http.ResponseWriter, r *http.Request, p Principal) error {
	q, err := deliveryQuery(r)
	if err != nil {
		return err
	}
	page, err := s.opts.Store.Deliveries(r.Context(), actor(p), r.PathValue("id"), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (s *Server) delivery(w http.ResponseWriter, r *http.Request, p Principal) error {
	hook, err := s.opts.Store.Webhook(r.Context(), actor(p), r.PathValue("id"))
	if err != nil {
		return err
	}
	dl, ats, err := s.opts.Store.Delivery(r.Context(), actor(p), hook.ID, r.PathValue("delivery"))
	if err != nil {
		return err
	}
	// The body as it would be sent now: read as the webhook's agent, and
	// never with more reach than the caller's own token has.
	hook.Curator = hook.Curator && p.Has(RoleCurator)
	raw, err := s.hooks.body(r.Context(), hook, dl, payloadCache{})
	if err != nil {
		return err
	}
	body := json.RawMessage(raw)
	if !json.Valid(body) {
		body = nil
	}
	writeJSON(w, http.StatusOK, deliveryReply{Delivery: dl, Body: body, Attempts: ats})
	return nil
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := s.bindWebhook(r, p, r.PathValue("id")); err != nil {
		return err
	}
	dl, err := s.opts.Store.Redeliver(r.Context(), actor(p), r.PathValue("id"), r.PathValue("delivery"))
	if err != nil {
		return err
	}
	s.hooks.wakeDispatcher()
	writeJSON(w, http.StatusOK, dl)
	return nil
}

// maxBulkRedeliver bounds one bulk redelivery; a client repeats it for
// more.
const maxBulkRedeliver = 10_000

func (s *Server) redeliverFailed(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := s.bindWebhook(r, p, r.PathValue("id")); err != nil {
		return err
	}
	n, err := s.opts.Store.RedeliverFailed(r.Context(), actor(p), r.PathValue("id"), maxBulkRedeliver)
	if err != nil {
		return err
	}
	s.hooks.wakeDispatcher()
	writeJSON(w, http.StatusOK, redeliverReply{Redelivered: n})
	return nil
}
