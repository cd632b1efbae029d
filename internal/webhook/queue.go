package webhook

import (
	"context"
	"errors"
	"time"
)

// Delivery is one event on its way to one endpoint.
type Delivery struct {
	ID       string // the delivery's key in its queue
	Endpoint string // the endpoint's id: the unit of fairness, backlog and pausing
	// Owner is whose endpoint it is: the unit of fairness between
	// tenants (at most Claim.PerOwner in flight for one owner).
	Owner    string
	URL      string
	Message  Message   // Message.ID is the webhook-id, the same for every attempt
	FirstDue time.Time // when its event committed; the retry horizon counts from here
	Attempts int       // attempts made before this claim
	// FailingSince is when the endpoint's current run of failures began;
	// zero when its last attempt succeeded. It decides pausing.
	FailingSince time.Time
	// Lease is the queue's token for this claim; Done, Retry, Dead and
	// Release present it, and a queue that has since given the delivery
	// to another claimant answers ErrLeaseLost.
	Lease string
}

// Claim is what a dispatcher asks of Queue.Due.
type Claim struct {
	Limit       int            // at most this many deliveries in all
	PerEndpoint int            // at most this many in flight for one endpoint…
	Busy        map[string]int // …counting those already in flight here
	// PerOwner bounds the deliveries in flight for one owner's endpoints
	// together, counting OwnerBusy; 0 means no bound. It keeps one
	// tenant's many slow endpoints from holding every slot.
	PerOwner  int
	OwnerBusy map[string]int
}

// Room is how many more deliveries of endpoint the claim takes: while
// the endpoint is failing, one in flight at most (a failing receiver is
// probed, not flooded).
func (c Claim) Room(endpoint string, failing bool) int {
	limit := c.PerEndpoint
	if failing {
		limit = min(limit, 1)
	}
	return limit - c.Busy[endpoint]
}

// OwnerRoom is how many more deliveries of owner's endpoints the claim
// takes; unbounded when PerOwner is 0.
func (c Claim) OwnerRoom(owner string) int {
	if c.PerOwner <= 0 {
		return c.Limit
	}
	return c.PerOwner - c.OwnerBusy[owner]
}

// Backlog is an endpoint's pending deliveries after a Trim.
type Backlog struct {
	Endpoint string
	Pending  int       // due now or later, leased or not
	Oldest   time.Time // FirstDue of the oldest pending; zero when none
	Trimmed  int       // moved to the dead-letter list by this Trim
}

// ErrLeaseLost: the delivery's lease ran out and the queue gave it to
// another claimant (or it is gone); the result of this attempt is not
// recorded, the other claimant's will be.
var ErrLeaseLost = errors.New("webhook: delivery lease lost")

// Queue holds deliveries. A store implements it over its tables so that
// a delivery is due from the moment its event commits and survives a
// restart: on PostgreSQL, Due selects with FOR UPDATE SKIP LOCKED and
// sets a lease (a token and an expiry) in the same transaction, so each
// due delivery goes to one replica, and one whose lease expired (its
// replica died mid-attempt) is due again; SQLite, with one writer, does
// the same in an immediate transaction. Implementations are safe for
// concurrent use.
type Queue interface {
	// Due leases deliveries whose time has come, oldest due first, within
	// the claim's limits, skipping paused endpoints and deliveries whose
	// lease has not expired.
	Due(ctx context.Context, c Claim) ([]Delivery, error)
	// Done: delivered; the endpoint is no longer failing.
	Done(ctx context.Context, d Delivery, a Attempt) error
	// Retry: due again at at, its attempt count one higher; the endpoint
	// is failing since its FailingSince, or a.Start when that is zero.
	Retry(ctx context.Context, d Delivery, a Attempt, at time.Time) error
	// Dead moves the delivery to its endpoint's dead-letter list with the
	// reason; the endpoint counts as failing, as for Retry.
	Dead(ctx context.Context, d Delivery, a Attempt, reason string) error
	// Release gives back a delivery with no attempt made: due again at
	// once, attempts unchanged.
	Release(ctx context.Context, d Delivery) error
	// Pause stops the endpoint's deliveries (none is Due) until its owner
	// resumes it, and keeps the reason to show them; unless the endpoint's
	// current run of failures began after since, or it is not failing (a
	// success or a resume came in between: the pause is stale).
	Pause(ctx context.Context, endpoint string, since time.Time, reason string) error
	// Trim moves each endpoint's oldest pending deliveries beyond
	// perEndpoint to its dead-letter list, and reports every endpoint's
	// backlog.
	Trim(ctx context.Context, perEndpoint int) ([]Backlog, error)
}

// Recorder keeps every attempt (the server shows them to the webhook's
// owner for 7 days).
type Recorder interface {
	Record(ctx context.Context, d Delivery, a Attempt, dec Decision) error
}

// Metrics receives the dispatcher's measurements. Endpoint ids are
// bounded by the number of registered webhooks; Class and Verdict are
// closed sets.
type Metrics interface {
	Attempt(endpoint string, class Class, verdict Verdict, latency time.Duration)
	Backlog(endpoint string, pending int, oldestAge time.Duration)
	Trimmed(endpoint string, n int)
	Paused(endpoint string)
}
