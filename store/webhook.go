package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/ctxkit/ctxkit/internal/textcut"
	"github.com/ctxkit/ctxkit/internal/webhook"
)

// Webhook limits and retention.
const (
	MaxWebhooks           = 100 // per agent, as for subscriptions
	MaxWebhookURL         = 2048
	MaxWebhookDescription = 1024
	// MaxDeliveryBody bounds a delivery's JSON body as it is sent: one
	// whose record is larger carries the event alone and "truncated": true.
	MaxDeliveryBody = 256 << 10
	// MaxAttemptExcerpt bounds the response excerpt kept per attempt.
	MaxAttemptExcerpt = 1024
	// DeliveryRetention is how long attempts, and deliveries that are
	// settled (delivered or dead-lettered), are kept before Expire prunes
	// them.
	DeliveryRetention = 7 * 24 * time.Hour
	// MaxDeliveryPage bounds a page of Deliveries.
	MaxDeliveryPage = 200
)

// WebhookPayload is what a delivery of a created or updated event carries.
type WebhookPayload string

const (
	// PayloadView (the default): the record as the model sees it, through
	// its llm_hints, as GET /breadcrumbs/{id} answers.
	PayloadView WebhookPayload = "view"
	// PayloadFull: the whole record, as GET /breadcrumbs/{id}/full answers.
	PayloadFull WebhookPayload = "full"
)

// Webhook is an HTTP endpoint an agent registered to receive the changes
// its selector matches. It belongs to the agent that created it and acts
// as that agent: it receives only what the agent may read.
type Webhook struct {
	ID          string         `json:"id"` // UUIDv7
	OwnerID     string         `json:"owner_id"`
	AgentID     string         `json:"agent_id"`
	URL         string         `json:"url"`
	Selector    *Selector      `json:"selector"`
	Payload     WebhookPayload `json:"payload"`
	Description string         `json:"description,omitempty"`
	// Paused: no delivery is attempted until PATCH resumes it;
	// PausedReason says why (the owner's pause, or the failing horizon).
	Paused       bool       `json:"paused"`
	PausedReason string     `json:"paused_reason,omitempty"`
	PausedAt     *time.Time `json:"paused_at,omitempty"`
	// FailingSince is when the endpoint's current run of failed attempts
	// began; nil while its last attempt succeeded.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// Cursor is the sequence number of the last event the fan-out has
	// considered for the webhook; its deliveries are made from there.
	Cursor int64 `json:"cursor"`
	// MissedThrough, when set, is the last sequence number of events that
	// were pruned from the events table before the fan-out reached them:
	// their deliveries were never made (the endpoint's owner is told here).
	MissedThrough int64     `json:"missed_through,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// Curator is whether the token the webhook is bound to is a
	// curator's: the webhook reads with that role (the owner's private
	// records).
	Curator bool `json:"-"`
	// TokenID and TokenIssued are the id (jti; "" for a token without
	// one) and issue time of the token the webhook is bound to: the
	// creating one, then the last the agent managed it with. The webhook
	// lives by that token: once a revocation names it, it is paused and
	// sends nothing.
	TokenID     string    `json:"-"`
	TokenIssued time.Time `json:"-"`
}

// WebhookBinding is the token a webhook acts by: the caller's, at each
// call by its agent that manages it.
type WebhookBinding struct {
	TokenID string
	Issued  time.Time
	Curator bool
}

// Bind makes w act by b.
func (w *Webhook) Bind(b WebhookBinding) {
	w.TokenID, w.TokenIssued, w.Curator = b.TokenID, b.Issued.UTC().Truncate(time.Microsecond), b.Curator
}

// RevokedReason is the paused_reason of a webhook whose token was
// revoked: a PATCH by a valid token of its agent binds it to that token,
// and "paused": false resumes it.
const RevokedReason = "the token it acts by was revoked: PATCH it with a valid token of its agent to bind it to that token, with \"paused\": false to resume"

// Actor is whom the webhook reads as.
func (w *Webhook) Actor() Actor {
	return Actor{OwnerID: w.OwnerID, AgentID: w.AgentID, Curator: w.Curator}
}

// WebhookKeys are a webhook's signing secrets in their whsec_ form: the
// current one and, for a day after a rotation, the previous one. They are
// returned by CreateWebhook and RotateWebhookSecret only (to show once)
// and by ClaimDeliveries (to sign); never by a listing.
type WebhookKeys struct {
	Current       string
	Previous      string
	PreviousUntil time.Time
}

// WebhookPatch is what UpdateWebhook changes; nil fields stay.
type WebhookPatch struct {
	URL         *string
	Selector    *Selector
	Description *string
	// Paused true pauses with the reason "paused by its owner"; false
	// resumes, and the endpoint starts afresh, not failing.
	Paused *bool
	// Bind, when set, binds the webhook to the caller's token (its id,
	// issue time and role); the actor's Curator must match it.
	Bind *WebhookBinding
}

// CheckWebhookURL is the store's own check of a target: the server checks
// the scheme and address rule (webhook.Client.CheckURL) before.
func CheckWebhookURL(u string) error {
	switch {
	case u == "":
		return invalid("url", "missing: a webhook has a target URL")
	case len(u) > MaxWebhookURL:
		return invalid("url", "%d bytes; the limit is %d", len(u), MaxWebhookURL)
	case !utf8.ValidString(u) || strings.ContainsAny(u, "\x00\r\n\t "):
		return invalid("url", "not a URL: control characters or spaces")
	}
	return nil
}

func checkWebhookDescription(d string) error {
	switch {
	case !utf8.ValidString(d) || strings.IndexByte(d, 0) >= 0:
		return invalid("description", "not valid UTF-8 text")
	case len(d) > MaxWebhookDescription:
		return invalid("description", "%d bytes; the limit is %d", len(d), MaxWebhookDescription)
	}
	return nil
}

// NewWebhook is the webhook a stores from the URL, selector, payload,
// description and token binding (TokenID, TokenIssued) of in, with a new UUIDv7 id, the cursor at after (the newest
// event when it is created: a webhook receives what happens from then on)
// and timestamps now: the backends' check before they store one.
func NewWebhook(a Actor, in Webhook, after int64, now time.Time) (Webhook, error) {
	w := Webhook{URL: in.URL, Selector: in.Selector, Payload: in.Payload, Description: in.Description}
	if w.Payload == "" {
		w.Payload = PayloadView
	}
	if err := CheckWebhookURL(w.URL); err != nil {
		return w, err
	}
	if w.Payload != PayloadView && w.Payload != PayloadFull {
		return w, invalid("payload", "%q; use view or full", textcut.Clip(string(w.Payload), 32, "…"))
	}
	if err := checkWebhookDescription(w.Description); err != nil {
		return w, err
	}
	if w.Selector == nil {
		return w, invalid("selector", "missing: a webhook has a selector ({} selects every change)")
	}
	sel, err := w.Selector.Compile()
	if err != nil {
		return w, prefixPath("selector", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return w, err
	}
	w.Selector, w.ID, w.OwnerID, w.AgentID = sel, id.String(), a.OwnerID, a.AgentID
	w.Bind(WebhookBinding{TokenID: in.TokenID, Issued: in.TokenIssued, Curator: a.Curator})
	w.Cursor, w.CreatedAt, w.UpdatedAt = max(after, 0), now, now
	return w, nil
}

// Apply checks p and applies it to w (the backends' check before an
// update); now stamps a pause.
func (p WebhookPatch) Apply(w *Webhook, now time.Time) error {
	if p.URL != nil {
		if err := CheckWebhookURL(*p.URL); err != nil {
			return err
		}
		w.URL = *p.URL
	}
	if p.Description != nil {
		if err := checkWebhookDescription(*p.Description); err != nil {
			return err
		}
		w.Description = *p.Description
	}
	if p.Selector != nil {
		sel, err := p.Selector.Compile()
		if err != nil {
			return prefixPath("selector", err)
		}
		w.Selector = sel
	}
	if p.Paused != nil {
		switch {
		case *p.Paused && !w.Paused:
			w.Paused, w.PausedReason, w.PausedAt = true, "paused by its owner", &now
		case !*p.Paused:
			w.Paused, w.PausedReason, w.PausedAt, w.FailingSince = false, "", nil, nil
		}
	}
	if p.Bind != nil {
		w.Bind(*p.Bind)
	}
	w.UpdatedAt = now
	return nil
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"   // due now or later, or being attempted
	DeliveryDelivered DeliveryStatus = "delivered" // the endpoint answered 2xx
	DeliveryFailed    DeliveryStatus = "failed"    // in the dead-letter list
)

// ParseDeliveryStatus reads a status filter; "" is every status.
func ParseDeliveryStatus(s string) (DeliveryStatus, error) {
	switch st := DeliveryStatus(s); st {
	case "", DeliveryPending, DeliveryDelivered, DeliveryFailed:
		return st, nil
	}
	return "", invalid("status", "%q; use pending, failed or delivered", textcut.Clip(s, 32, "…"))
}

// EventDeliveryID is the id of the delivery of event seq, made at at, to
// webhook: a UUIDv7 the same whenever the delivery is made. A fan-out
// stored without a flush (the queue's commits) and lost in a crash of
// the database is made again from the webhook's cursor; had one of its
// deliveries been sent, the event is sent again under the same
// webhook-id, which the receiver drops as it should. Its time is the
// event's (milliseconds), so that ids sort as the deliveries were made
// within the time a fan-out takes, beside test messages' and earlier
// deliveries' UUIDv7 ids of the time they were made, as the newest-first
// lists and the oldest-first redelivery take them; its 12 bits after the
// version are seq's lowest, so that the deliveries of events of one
// millisecond sort as their events; the rest is a hash of the webhook and
// seq.
func EventDeliveryID(webhook string, seq int64, at time.Time) string {
	var in [8]byte
	binary.BigEndian.PutUint64(in[:], uint64(seq))
	h := sha256.Sum256(append(append([]byte(webhook), 0), in[:]...))
	var id uuid.UUID
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i))
	}
	id[6] = 0x70 | byte(seq>>8)&0x0f // version 7
	id[7] = byte(seq)
	copy(id[8:], h[:8])
	id[8] = 0x80 | id[8]&0x3f // RFC 9562 variant
	return id.String()
}

// Delivery is one event (or a test message) on its way to one webhook.
type Delivery struct {
	// ID, a UUIDv7, is also the webhook-id header: the same for every
	// attempt and, for an event, for every delivery of it to the webhook
	// (EventDeliveryID).
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	// Seq is the event's sequence number; 0 for a test message.
	Seq      int64          `json:"seq"`
	Kind     string         `json:"kind"` // the event kind, or "test"
	Status   DeliveryStatus `json:"status"`
	Attempts int            `json:"attempts"`
	// FirstDue is when it became due: the retry horizon counts from here
	// (a redelivery starts a fresh horizon).
	FirstDue time.Time `json:"first_due"`
	NextAt   time.Time `json:"next_at"` // when a pending delivery is due
	Reason   string    `json:"reason,omitempty"`
	// Body is, for an event, the event (JSON of Event): the payload is
	// read when the delivery is sent, as the webhook's agent may read it
	// then; for a test message, the body sent. Only Delivery and
	// ClaimDeliveries carry it.
	Body      []byte    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DeliveryQuery filters Deliveries.
type DeliveryQuery struct {
	Status DeliveryStatus // "": all
	Limit  int            // 1..MaxDeliveryPage; 0 means 50
	Cursor string         // from DeliveryPage.NextCursor
}

// DeliveryPage is a page of deliveries, newest first.
type DeliveryPage struct {
	Items      []Delivery `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// CheckDeliveryQuery normalizes q, refusing a bad limit or cursor.
func CheckDeliveryQuery(q DeliveryQuery) (DeliveryQuery, error) {
	if _, err := ParseDeliveryStatus(string(q.Status)); err != nil {
		return q, err
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultLimit
	case q.Limit < 0 || q.Limit > MaxDeliveryPage:
		return q, invalid("limit", "%d; use 1 to %d", q.Limit, MaxDeliveryPage)
	}
	if q.Cursor != "" {
		if _, err := uuid.Parse(q.Cursor); err != nil || len(q.Cursor) != 36 {
			return q, invalid("cursor", "not a cursor from next_cursor")
		}
	}
	return q, nil
}

// DeliveryAttempt is one attempt at a delivery, kept DeliveryRetention.
type DeliveryAttempt struct {
	DeliveryID string    `json:"delivery_id"`
	WebhookID  string    `json:"webhook_id"`
	At         time.Time `json:"at"`
	Status     int       `json:"status,omitempty"` // the HTTP status; 0 when none came
	Class      string    `json:"class"`            // ok, status, timeout, connect, dns, tls, address, url, transport
	LatencyMS  float64   `json:"latency_ms"`
	Error      string    `json:"error,omitempty"`
	Excerpt    string    `json:"excerpt,omitempty"` // the response body's first MaxAttemptExcerpt bytes
	Verdict    string    `json:"verdict"`           // delivered, retry, dead
}

// NewDelivery is a delivery the fan-out makes ready for an event.
type NewDelivery struct {
	Seq   int64
	Kind  string
	At    time.Time // the event's time: its delivery's id is of it (EventDeliveryID)
	Event []byte    // the Event as JSON: small, whatever the record's size
}

// DeliveryClaim is what ClaimDeliveries takes: at most Limit in all, for
// each webhook at most PerWebhook less those Busy here (at most 1 less
// those Busy while it is failing), and when PerOwner is set, for each
// owner's webhooks together at most PerOwner less those OwnerBusy here.
type DeliveryClaim struct {
	Limit      int
	PerWebhook int
	Busy       map[string]int
	PerOwner   int
	OwnerBusy  map[string]int
	Lease      time.Duration
}

// Room is how many more deliveries of webhook the claim takes.
func (c DeliveryClaim) Room(webhook string, failing bool) int {
	limit := c.PerWebhook
	if failing {
		limit = min(limit, 1)
	}
	return limit - c.Busy[webhook]
}

// OwnerRoom is how many more deliveries of owner's webhooks the claim
// takes.
func (c DeliveryClaim) OwnerRoom(owner string) int {
	if c.PerOwner <= 0 {
		return c.Limit
	}
	return c.PerOwner - c.OwnerBusy[owner]
}

// ClaimedDelivery is a leased delivery with what it takes to send it.
type ClaimedDelivery struct {
	Delivery
	OwnerID      string // the webhook's owner: the unit of fairness in claiming
	URL          string
	Keys         WebhookKeys
	FailingSince time.Time // zero when not failing
	Lease        string
	// Hook is whom the payload is read as, and how: its OwnerID, AgentID,
	// Curator, Payload, TokenID and TokenIssued are set (no selector).
	Hook Webhook
}

// Advance is one webhook's fan-out step, for AdvanceWebhooks.
type Advance struct {
	Webhook    Webhook // its Cursor is the compare-and-set's old value
	Upto       int64
	Missed     int64
	Deliveries []NewDelivery
}

// Settle is how an attempt ended, for SettleDeliveries.
type Settle struct {
	DeliveryID string
	Lease      string
	Status     DeliveryStatus // pending (retry or release), delivered, failed
	NextAt     time.Time      // pending: when it is due again
	Attempted  bool           // an attempt was made (attempts + 1)
	Failed     time.Time      // when the failing run began, for a failure; zero for a success or a release
	Reason     string         // failed: why
	// Attempt, when set, is kept with the settle (RecordAttempt's rules).
	Attempt *DeliveryAttempt
}

// DeliveryBacklog is a webhook's pending deliveries after a trim.
type DeliveryBacklog struct {
	WebhookID string
	Pending   int
	Oldest    time.Time
	Trimmed   int
}

// ErrWebhookNotFound is an unknown webhook, or another agent's.
var ErrWebhookNotFound = &Error{Code: CodeNotFound, Msg: "webhook not found"}

// ErrDeliveryNotFound is an unknown delivery of the webhook.
var ErrDeliveryNotFound = &Error{Code: CodeNotFound, Msg: "delivery not found"}

// CodeTooManyWebhooks: the agent has MaxWebhooks already.
const CodeTooManyWebhooks Code = "too_many_webhooks"

// ErrTooManyWebhooks is a create past MaxWebhooks.
var ErrTooManyWebhooks = &Error{Code: CodeTooManyWebhooks,
	Msg: fmt.Sprintf("the agent has %d webhooks, the limit: delete one first", MaxWebhooks)}

// ErrLeaseLost: the delivery was given to another claimant since (its
// lease ran out), or settled, or its webhook deleted.
var ErrLeaseLost = &Error{Code: CodeVersionMismatch, Msg: "delivery lease lost"}

// ErrCursorMoved: another fan-out (a replica) moved the webhook's cursor
// first; its deliveries stand, these were not stored.
var ErrCursorMoved = &Error{Code: CodeVersionMismatch, Msg: "webhook cursor moved"}

// CommitWatcher is a Store that says when changes may have committed, so
// the webhook fan-out reads new events when they come rather than on a
// timer. Both backends implement it: SQLite after each of its commits,
// PostgreSQL after its own commits and on each LISTEN/NOTIFY message of
// another replica's. The fan-out still polls, for messages lost while
// the listening connection was down.
type CommitWatcher interface {
	// WatchCommits calls fn after each commit that may have added events,
	// until stop is called (a commit under way as stop returns may still
	// call it once). fn runs on the committing goroutine, after the
	// commit: it must not block or panic (the write has succeeded, and a
	// panic would report it failed), and should merge calls (a send that
	// drops when a wake is already waiting).
	WatchCommits(fn func()) (stop func())
}

// Webhooks is the part of a Store that keeps webhooks and their
// deliveries. Methods taking an Actor are scoped to the actor's agent:
// another agent's webhook is ErrWebhookNotFound. The others serve the
// fan-out and the dispatcher, across owners.
type Webhooks interface {
	// CreateWebhook stores a webhook for the actor's agent (at most
	// MaxWebhooks per agent) with new secrets, its cursor at the newest
	// event, and returns it with the secrets, this once.
	CreateWebhook(ctx context.Context, a Actor, in Webhook) (Webhook, WebhookKeys, error)
	Webhooks(ctx context.Context, a Actor) ([]Webhook, error)
	Webhook(ctx context.Context, a Actor, id string) (Webhook, error)
	UpdateWebhook(ctx context.Context, a Actor, id string, p WebhookPatch) (Webhook, error)
	// DeleteWebhook removes it with its deliveries and attempts.
	DeleteWebhook(ctx context.Context, a Actor, id string) error
	// RotateWebhookSecret makes a new current secret; the old one signs
	// beside it for 24 h (RotationOverlap).
	RotateWebhookSecret(ctx context.Context, a Actor, id string, overlap time.Duration) (Webhook, WebhookKeys, error)
	Deliveries(ctx context.Context, a Actor, webhookID string, q DeliveryQuery) (DeliveryPage, error)
	// Delivery is one delivery with its body and its attempts, newest first.
	Delivery(ctx context.Context, a Actor, webhookID, id string) (Delivery, []DeliveryAttempt, error)
	// Redeliver makes a failed or delivered delivery pending again, due
	// now, with a fresh horizon (attempts reset).
	Redeliver(ctx context.Context, a Actor, webhookID, id string) (Delivery, error)
	// RedeliverFailed does so for every failed delivery of the webhook
	// (at most limit of the oldest) and says how many.
	RedeliverFailed(ctx context.Context, a Actor, webhookID string, limit int) (int, error)
	// EnqueueTest makes a test delivery of body, due now.
	EnqueueTest(ctx context.Context, a Actor, webhookID string, body []byte) (Delivery, error)

	// AllWebhooks is every webhook of every owner, for the fan-out.
	AllWebhooks(ctx context.Context) ([]Webhook, error)
	// WebhookChanges is up to limit changes after w.Cursor and at or
	// below mark that w's actor may see, with contexts when withContext
	// (as an event stream's backlog); missedThrough > w.Cursor says events
	// after the cursor up to it were pruned before the fan-out read them.
	// mark is a LatestSeq answer of the store (or less): every event
	// numbered at or below it has committed or never will, so the read
	// waits for no writer, and fewer than limit changes means w's actor
	// may see no other change after the cursor up to mark, now or later.
	WebhookChanges(ctx context.Context, w Webhook, mark int64, limit int, withContext bool) (cs []Change, missedThrough int64, err error)
	// AdvanceWebhooks does each Advance in one transaction: stores its
	// deliveries and moves its webhook's cursor from Webhook.Cursor to
	// Upto (and MissedThrough to Missed when larger). errs[i] is
	// ErrCursorMoved for one whose cursor is no longer Webhook.Cursor
	// (another replica fanned out first); err is for the whole.
	AdvanceWebhooks(ctx context.Context, as []Advance) (errs []error, err error)
	// ClaimDeliveries leases due deliveries of webhooks not paused, oldest
	// due first, within c; a delivery whose lease ran out is due again.
	ClaimDeliveries(ctx context.Context, c DeliveryClaim) ([]ClaimedDelivery, error)
	// SettleDeliveries records how attempts ended, and their attempts, in
	// one transaction (a dispatcher commits its settles together).
	// errs[i] is ErrLeaseLost for one whose lease is no longer Lease;
	// err is for the whole.
	SettleDeliveries(ctx context.Context, ss []Settle) (errs []error, err error)
	// PauseRevoked pauses the webhook with RevokedReason if it is still
	// bound to the token tokenID issued at issued (a PATCH may have bound
	// it to another meanwhile); paused already, its reason becomes
	// RevokedReason.
	PauseRevoked(ctx context.Context, webhookID, tokenID string, issued time.Time) error
	// PauseFailing pauses the webhook with reason, unless its current run
	// of failures began after since or it is not failing.
	PauseFailing(ctx context.Context, webhookID string, since time.Time, reason string) error
	// TrimDeliveries dead-letters each webhook's oldest pending deliveries
	// (not leased) beyond perWebhook and reports every webhook's backlog.
	TrimDeliveries(ctx context.Context, perWebhook int) ([]DeliveryBacklog, error)
	// RecordAttempt keeps an attempt (its excerpt cut to MaxAttemptExcerpt).
	RecordAttempt(ctx context.Context, at DeliveryAttempt) error
}

// CutExcerpt bounds an attempt's excerpt to MaxAttemptExcerpt bytes of
// whole UTF-8 characters, cleaned by ValidText.
func CutExcerpt(s string) string {
	s = ValidText(s)
	if len(s) <= MaxAttemptExcerpt {
		return s
	}
	n := MaxAttemptExcerpt
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ValidText is s as valid UTF-8 without NUL: each NUL and each invalid
// byte sequence becomes U+FFFD. PostgreSQL's text holds neither, and a
// receiver's answer or a transport error quoting one would otherwise fail
// the transaction that keeps it, with every settle committed beside it
// (and again each time the leases run out); both backends keep the same
// text. Settle reasons and attempts' excerpts and errors go through it.
func ValidText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// NewWebhookSecret is a fresh signing secret in its whsec_ form.
func NewWebhookSecret() (string, error) {
	s, err := webhook.NewSecret()
	if err != nil {
		return "", err
	}
	return s.Reveal(), nil
}
