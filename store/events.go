package store

import (
	"fmt"
	"slices"
)

// EventFilter narrows an event stream to the changes of breadcrumbs that
// carry every tag in Tags and, when SchemaName is set, have that schema.
// The zero value lets every change through.
type EventFilter struct {
	Tags       []string
	SchemaName string
}

// Check refuses a filter no change could pass for a reason the caller
// should hear about: more distinct tags than a breadcrumb may carry.
func (f EventFilter) Check() error { return checkTagFilters(f.Tags) }

// Match reports whether e passes the filter.
func (f EventFilter) Match(e *Event) bool {
	if f.SchemaName != "" && e.SchemaName != f.SchemaName {
		return false
	}
	for _, t := range f.Tags {
		if !slices.Contains(e.Tags, t) {
			return false
		}
	}
	return true
}

// Change is an event with what decides who may see it: the breadcrumb's
// owner, and its visibility and creator at the time of the change.
type Change struct {
	Event
	OwnerID    string
	Visibility Visibility
	CreatedBy  string
}

// VisibleTo reports whether a may receive the change: the rule of List and
// of every backend's event query (the owner's agents; a private
// breadcrumb's changes only its creator and the owner's curators).
func (c *Change) VisibleTo(a Actor) bool { return mayWrite(a, c.OwnerID, c.Visibility, c.CreatedBy) }

// checkTagFilters refuses more distinct tag filters than MaxTags: no
// breadcrumb could match them all, and each costs the query work.
func checkTagFilters(tags []string) error {
	distinct := make(map[string]bool, len(tags))
	for _, t := range tags {
		distinct[t] = true
	}
	if n := len(distinct); n > MaxTags {
		return &Error{Code: CodeInvalid, Path: "tag", Msg: fmt.Sprintf("%d tag filters; the limit is %d", n, MaxTags)}
	}
	return nil
}
