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
	// context conditions); nil otherwise. Read it with ContextFor.
	Context json.RawMessage
	// ContextOpen is set, with Context, when the breadcrumb is still live
	// (neither deleted nor expired) and has no read budget (max_reads):
	// only then may an agent who is no curator match on its context.
	ContextOpen bool
}

// VisibleTo reports whether a may receive the change: the rule of List and
// of every backend's event query (the owner's agents; a private
// breadcrumb's changes only its creator and the owner's curators).
func (c *Change) VisibleTo(a Actor) bool { return mayWrite(a, c.OwnerID, c.Visibility, c.CreatedBy) }

// ContextFor is the context a's selectors may match on: the rule of
// History (a deleted or expired breadcrumb's versions are read only by the
// owner's curators) applied to event streams, where a context condition
// is a yes/no question about the record. A budgeted breadcrumb's context
// is withheld too: a match is no counted read, so it must not be a way
// around the budget. nil when a may not read it (every condition fails).
func (c *Change) ContextFor(a Actor) json.RawMessage {
	if !c.VisibleTo(a) {
		return nil
	}
	if c.ContextOpen || (a.Curator && a.OwnerID == c.OwnerID) {
		return c.Context
	}
	return nil
}
