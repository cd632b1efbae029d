package store

import "encoding/json"

// Change is an event with what decides who may see it: the breadcrumb's
// owner, and its visibility and creator at the time of the change.
type Change struct {
	Event
	OwnerID    string
	Visibility Visibility
	CreatedBy  string
	// Context is the breadcrumb's context at Version, for created and
	// updated events, when the reader asked for it (a selector with
	// context conditions); nil otherwise.
	Context json.RawMessage
}

// VisibleTo reports whether a may receive the change: the rule of List and
// of every backend's event query (the owner's agents; a private
// breadcrumb's changes only its creator and the owner's curators).
func (c *Change) VisibleTo(a Actor) bool { return mayWrite(a, c.OwnerID, c.Visibility, c.CreatedBy) }
