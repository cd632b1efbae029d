package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Subscription limits.
const (
	MaxSubscriptions           = 100 // per agent
	MaxSubscriptionName        = 128
	MaxSubscriptionDescription = 1024
)

// Subscription is a selector an agent stored under a name, to stream with
// (GET /events/stream?subscription=ID) and, later, to deliver by. It
// belongs to one agent of one owner: no other agent sees it.
type Subscription struct {
	ID          string    `json:"id"` // UUIDv7
	OwnerID     string    `json:"owner_id"`
	AgentID     string    `json:"agent_id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Selector    *Selector `json:"selector"`
	CreatedAt   time.Time `json:"created_at"`
}

// NewSubscription is the subscription a stores from the name,
// description and selector of in, with a new UUIDv7 id: the backends'
// check before they store one. It refuses a name that is empty, and a
// name or description too long or not UTF-8, or a selector that does
// not compile (its path under "selector"). now should be at the
// precision the backend keeps.
func NewSubscription(a Actor, in Subscription, now time.Time) (Subscription, error) {
	sub := Subscription{Name: in.Name, Description: in.Description, Selector: in.Selector}
	switch {
	case sub.Name == "":
		return sub, invalid("name", "missing: a subscription has a name")
	case len(sub.Name) > MaxSubscriptionName:
		return sub, invalid("name", "%d bytes; the limit is %d", len(sub.Name), MaxSubscriptionName)
	case !utf8.ValidString(sub.Name) || strings.IndexByte(sub.Name, 0) >= 0:
		return sub, invalid("name", "not valid UTF-8 text")
	case !utf8.ValidString(sub.Description) || strings.IndexByte(sub.Description, 0) >= 0:
		return sub, invalid("description", "not valid UTF-8 text")
	case len(sub.Description) > MaxSubscriptionDescription:
		return sub, invalid("description", "%d bytes; the limit is %d", len(sub.Description), MaxSubscriptionDescription)
	case sub.Selector == nil:
		return sub, invalid("selector", "missing: a subscription has a selector ({} selects every change)")
	}
	sel, err := sub.Selector.Compile()
	if err != nil {
		return sub, prefixPath("selector", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return sub, err
	}
	sub.Selector, sub.ID, sub.OwnerID, sub.AgentID, sub.CreatedAt = sel, id.String(), a.OwnerID, a.AgentID, now
	return sub, nil
}

// prefixPath places a selector's error inside the field holding it.
func prefixPath(field string, err error) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	c := *e
	if c.Path == "" {
		c.Path = field
	} else {
		c.Path = field + "." + c.Path
	}
	return &c
}

// ErrSubscriptionNotFound is an unknown subscription, or another agent's
// (errors.Is(err, ErrNotFound) holds too).
var ErrSubscriptionNotFound = &Error{Code: CodeNotFound, Msg: "subscription not found"}

// ErrTooManySubscriptions is a create past MaxSubscriptions.
var ErrTooManySubscriptions = &Error{Code: CodeTooManySubscriptions,
	Msg: fmt.Sprintf("the agent has %d subscriptions, the limit: delete one first", MaxSubscriptions)}

// UnmarshalJSON reads a selector's JSON form with ParseSelector: a stored
// subscription's selector reads back compiled.
func (s *Selector) UnmarshalJSON(data []byte) error {
	p, err := ParseSelector(data)
	if err != nil {
		return err
	}
	*s = *p
	return nil
}

var _ json.Unmarshaler = (*Selector)(nil)
