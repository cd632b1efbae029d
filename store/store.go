// Package store defines the breadcrumb store: the records agents share, the
// Store interface every backend implements, and the rules all backends apply
// the same way (validation, versions, visibility). Backends live in
// sub-packages (store/sqlite, store/postgres); store/storetest is the conformance suite they
// must pass.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"
)

// Visibility says who may see a breadcrumb.
type Visibility string

const (
	// Team (the default): every agent of the owner.
	Team Visibility = "team"
	// Private: only the agent that created it, and the owner's curators.
	Private Visibility = "private"
	// Public: also readable by id (never writable) by other owners' agents.
	Public Visibility = "public"
)

// Sensitivity labels what a breadcrumb's context holds.
type Sensitivity string

const (
	Low    Sensitivity = "low"
	PII    Sensitivity = "pii"
	Secret Sensitivity = "secret"
)

// Breadcrumb is one JSON context record.
type Breadcrumb struct {
	ID              string          `json:"id"` // UUIDv7
	OwnerID         string          `json:"owner_id"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	SemanticVersion string          `json:"semantic_version"`
	Context         json.RawMessage `json:"context"` // a JSON object, stored in canonical form
	Tags            []string        `json:"tags"`    // a set, kept sorted
	SchemaName      string          `json:"schema_name"`
	LLMHints        json.RawMessage `json:"llm_hints,omitempty"` // validated with view.Compile
	Visibility      Visibility      `json:"visibility"`
	Sensitivity     Sensitivity     `json:"sensitivity"`
	Version         int64           `json:"version"`  // 1 on create, +1 on every write
	Checksum        string          `json:"checksum"` // "sha256:" of the canonical context
	ExpiresAt       *time.Time      `json:"expires_at,omitempty"`
	MaxReads        int64           `json:"max_reads,omitempty"` // expire after this many view reads; 0 = no limit
	Reads           int64           `json:"reads"`
	CreatedAt       time.Time       `json:"created_at"`
	CreatedBy       string          `json:"created_by"` // agent id
	UpdatedAt       time.Time       `json:"updated_at"`
	UpdatedBy       string          `json:"updated_by"`
	SizeBytes       int64           `json:"size_bytes"`

	// SearchText is the text of the breadcrumb's LLM view, which search
	// matches besides the title, tags and description. The writer supplies
	// it on create and in an update's Mutation (Searchable computes it;
	// the store cannot run a view's rules); when empty, the store derives
	// the view's text where it can without running rules. It is
	// never returned by reads and never part of the JSON form.
	SearchText string `json:"-"`
}

// Actor is who performs an operation. The store scopes every operation to
// the actor's owner and applies visibility; what a role may do (write,
// delete) is the caller's to decide.
type Actor struct {
	OwnerID string
	AgentID string
	Curator bool // sees the owner's private breadcrumbs
}

// Query filters a list.
type Query struct {
	Tags       []string // all must match
	SchemaName string
	Limit      int    // 1..MaxLimit; 0 means DefaultLimit
	Cursor     string // from Page.NextCursor
}

// List limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Page is one page of a list, newest first.
type Page struct {
	Items      []Breadcrumb
	NextCursor string // empty on the last page
}

// EventKind says what happened to a breadcrumb.
type EventKind string

const (
	Created EventKind = "created"
	Updated EventKind = "updated"
	Deleted EventKind = "deleted"
	// Expired: the breadcrumb went because its expiry time passed or its
	// read budget was used up (Expire, or the read that used it up).
	Expired EventKind = "expired"
)

// Event is one change, numbered by a sequence that only grows. The
// sequence is one across all owners, so that a stream resumes from its
// last Seq on any replica; the gaps between the numbers a caller sees
// therefore reveal how many changes were made that it cannot see (write
// volume, never content or owners).
type Event struct {
	Seq          int64     `json:"seq"`
	Kind         EventKind `json:"kind"`
	BreadcrumbID string    `json:"id"`
	Version      int64     `json:"version"`
	Tags         []string  `json:"tags"`
	SchemaName   string    `json:"schema_name"`
	At           time.Time `json:"at"`
}

// Idempotency makes a create safe to retry: a second create by the same
// agent with the same key and request hash returns the first result; the
// same key with another hash is ErrIdempotencyConflict. Keys are remembered
// for a day.
type Idempotency struct {
	Key         string
	RequestHash string
}

// Mutation changes a breadcrumb in place inside an update's transaction. It
// may change the content fields; the store keeps the identity, owner,
// version and timestamps and validates the result.
type Mutation func(b *Breadcrumb) error

// Store is what the server uses. Every method is scoped to the actor's owner:
// a breadcrumb the actor may not see is ErrNotFound, never a hint that it
// exists.
type Store interface {
	// Create stores a new breadcrumb (version 1) from the content fields of
	// in. With a non-empty idempotency key a replay returns the first result
	// and replayed=true.
	Create(ctx context.Context, a Actor, in Breadcrumb, idem Idempotency) (b Breadcrumb, replayed bool, err error)
	// Get returns a breadcrumb the actor may read (public ones of other owners too).
	Get(ctx context.Context, a Actor, id string) (Breadcrumb, error)
	// Read is Get for a view read: it counts the read, and a breadcrumb
	// whose read budget this read uses up is deleted after being returned.
	// Only reads by the breadcrumb's own owner's agents count; another
	// owner's read of a public one is a Get.
	Read(ctx context.Context, a Actor, id string) (Breadcrumb, error)
	// List returns the actor's breadcrumbs, newest first.
	List(ctx context.Context, a Actor, q Query) (Page, error)
	// Update applies m atomically. expectedVersion > 0 makes it conditional:
	// ErrVersionMismatch when the stored version differs.
	Update(ctx context.Context, a Actor, id string, expectedVersion int64, m Mutation) (Breadcrumb, error)
	// Delete removes a breadcrumb; its history stays.
	Delete(ctx context.Context, a Actor, id string) error
	// History returns the versions of a breadcrumb the actor may see, newest
	// first; after a delete or expiry, only to the owner's curators.
	History(ctx context.Context, a Actor, id string) ([]Breadcrumb, error)
	// Events yields the changes the actor may see that pass sel (nil: every
	// change; context conditions see the record at the event's version), with
	// Seq > after: first the backlog, then live changes until ctx ends.
	// after < 0 starts after the newest change, so only live changes
	// arrive. Backends serve it with one reader per store instance,
	// however many streams are open. Seq is one sequence across owners
	// (a client resumes on any replica from the last Seq it got), so the
	// gaps between the numbers a stream sees reveal how much others wrote.
	Events(ctx context.Context, a Actor, after int64, sel *Selector) iter.Seq2[Event, error]
	// LatestSeq is the sequence number of the newest change (0 when none):
	// a stream that starts "now" passes it to Events.
	LatestSeq(ctx context.Context) (int64, error)
	// Search returns the breadcrumbs the actor may list (the visibility of
	// List) that match q, best first. It ranks at most the q.MaxRanked
	// newest matching breadcrumbs of the actor's owner (SearchResult.Bounded
	// says when there were more).
	Search(ctx context.Context, a Actor, q SearchQuery) (SearchResult, error)
	// Expire deletes the breadcrumbs whose expiry time is before now and
	// returns how many.
	Expire(ctx context.Context, now time.Time) (int, error)
	// Revoke records a revocation and returns it with its Seq and
	// RevokedAt. It refuses (CodeInvalid, naming the field) one that names
	// both or neither of a token id and an agent, a before time with a
	// token id or an agent without one, and ids that are not PlainID.
	Revoke(ctx context.Context, r Revocation) (Revocation, error)
	// Revocations returns the revocations with Seq > after, oldest first.
	// A revocation is visible only after every one with a smaller Seq is,
	// so a reader may poll with the last Seq it saw.
	Revocations(ctx context.Context, after int64) ([]Revocation, error)
	// CreateSubscription stores a named selector for the actor's agent
	// (at most MaxSubscriptions per agent: CodeTooManySubscriptions beyond) and returns
	// it with its ID and CreatedAt.
	CreateSubscription(ctx context.Context, a Actor, sub Subscription) (Subscription, error)
	// Subscriptions returns the actor's agent's subscriptions, oldest first.
	Subscriptions(ctx context.Context, a Actor) ([]Subscription, error)
	// Subscription returns one of the actor's agent's subscriptions; one
	// of another agent's is ErrNotFound, as an unknown id is.
	Subscription(ctx context.Context, a Actor, id string) (Subscription, error)
	// DeleteSubscription removes one of the actor's agent's subscriptions.
	DeleteSubscription(ctx context.Context, a Actor, id string) error
	// Webhooks keeps webhooks and their deliveries (webhook.go).
	Webhooks
	Close() error
}

// Code is a store error's code: stable and machine-readable, for API
// clients and scripts to match on.
type Code string

// Error codes, stable for API clients.
const (
	CodeInvalid             Code = "invalid"              // bad input; Path names it
	CodeNotFound            Code = "not_found"            // unknown or not visible
	CodeVersionMismatch     Code = "version_mismatch"     // If-Match failed
	CodeIdempotencyConflict Code = "idempotency_conflict" // key reused with another request
	CodeTooLarge            Code = "too_large"
	// CodeTooManySubscriptions: the agent has MaxSubscriptions already;
	// delete one first.
	CodeTooManySubscriptions Code = "too_many_subscriptions"
	CodeUnavailable          Code = "unavailable" // the database is busy or gone for now: retry later
	// CodeInsufficientStorage: the server's storage is full; nothing of
	// the write was kept. Writes succeed again once space is freed.
	CodeInsufficientStorage Code = "insufficient_storage"
	// CodeCorrupt: the database file is damaged. The store refuses every
	// write from then on; the operator restores it (see the message).
	CodeCorrupt Code = "store_corrupt"
)

// Error is a store error a caller can act on.
type Error struct {
	Code Code
	// Path is where in the input the fault is, for CodeInvalid: a field
	// ("title", "tag") or a place inside one ("llm_hints.transform.s");
	// empty for the input as a whole.
	Path string
	Msg  string // what is wrong, in words that say what to fix
	Err  error  // the underlying cause, if any
}

func (e *Error) Error() string {
	if e.Path != "" {
		return e.Path + ": " + e.Msg
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches on Code: errors.Is(err, store.ErrNotFound).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrNotFound            = &Error{Code: CodeNotFound, Msg: "breadcrumb not found"}
	ErrVersionMismatch     = &Error{Code: CodeVersionMismatch, Msg: "version mismatch"}
	ErrIdempotencyConflict = &Error{Code: CodeIdempotencyConflict, Msg: "idempotency key reused with a different request"}
)

func invalid(path, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// IsCode reports whether err is a store *Error with the code.
func IsCode(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// MaxBatch is how many breadcrumbs one CreateBatch creates at most.
const MaxBatch = 256

// Creation is one create of a batch: what Create takes.
type Creation struct {
	Actor Actor
	In    Breadcrumb
	Idem  Idempotency
}

// CreateResult is what became of one Creation: what Create returns.
type CreateResult struct {
	Breadcrumb Breadcrumb
	Replayed   bool
	Err        error
}

// BatchCreator is a Store that creates several breadcrumbs in one
// transaction: a writer with many small records (the gateway's traffic
// records) pays for one commit instead of one per record.
type BatchCreator interface {
	// CreateBatch creates cs in order, each as Create would (validation,
	// versions, events, idempotency; a key used twice in the batch
	// replays the first of them), and returns their outcomes at their
	// indexes. One create that fails (invalid input, an idempotency
	// conflict, a row the database refuses) fails alone: the others
	// are stored. A failure of the database as a whole (unavailable,
	// full, damaged, ctx done) fails every create it kept from being
	// stored. The error is for the batch itself (more than MaxBatch
	// creates): then nothing was written.
	CreateBatch(ctx context.Context, cs []Creation) ([]CreateResult, error)
}

// CreateBatch creates cs in s: in one transaction when s is a
// BatchCreator, else one Create after another, with the outcomes of
// BatchCreator.CreateBatch.
func CreateBatch(ctx context.Context, s Store, cs []Creation) ([]CreateResult, error) {
	if err := CheckBatch(cs); err != nil {
		return nil, err
	}
	if bc, ok := s.(BatchCreator); ok {
		return bc.CreateBatch(ctx, cs)
	}
	out := make([]CreateResult, len(cs))
	for i, c := range cs {
		out[i].Breadcrumb, out[i].Replayed, out[i].Err = s.Create(ctx, c.Actor, c.In, c.Idem)
	}
	return out, nil
}

// CheckBatch refuses a batch larger than MaxBatch (CodeTooLarge, path
// "batch"): the backends' check before they write.
func CheckBatch(cs []Creation) error {
	if len(cs) > MaxBatch {
		return &Error{Code: CodeTooLarge, Path: "batch", Msg: fmt.Sprintf("%d creates; a batch holds at most %d", len(cs), MaxBatch)}
	}
	return nil
}
