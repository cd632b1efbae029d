package store

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// What every backend does the same way around its own storage: building a
// new record and the next version of one.

// NewRecord is version 1 of a breadcrumb made by a from the content fields
// of in, validated and in canonical form, with a new UUIDv7 id. now should
// be at the precision the backend keeps.
func NewRecord(a Actor, in Breadcrumb, now time.Time) (Breadcrumb, error) {
	b := content(in)
	if err := Prepare(&b); err != nil {
		return Breadcrumb{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Breadcrumb{}, err
	}
	b.ID, b.OwnerID, b.Version = id.String(), a.OwnerID, 1
	b.CreatedAt, b.UpdatedAt, b.CreatedBy, b.UpdatedBy = now, now, a.AgentID, a.AgentID
	return b, nil
}

// Revise is the next version of cur after a applies m (and, when
// expectedVersion > 0, only if cur is that version): m may change the
// content fields; identity, owner, read count and creation stay.
func Revise(a Actor, cur Breadcrumb, expectedVersion int64, m Mutation, now time.Time) (Breadcrumb, error) {
	if expectedVersion > 0 && cur.Version != expectedVersion {
		return Breadcrumb{}, &Error{Code: CodeVersionMismatch, Msg: fmt.Sprintf("version is %d, not %d", cur.Version, expectedVersion)}
	}
	next := cur
	next.Tags = append([]string{}, cur.Tags...)
	next.SearchText = "" // the mutation supplies the new version's, or the store derives it
	if err := m(&next); err != nil {
		return Breadcrumb{}, err
	}
	b := content(next)
	if err := Prepare(&b); err != nil {
		return Breadcrumb{}, err
	}
	b.ID, b.OwnerID, b.Version, b.Reads = cur.ID, cur.OwnerID, cur.Version+1, cur.Reads
	b.CreatedAt, b.CreatedBy = cur.CreatedAt, cur.CreatedBy
	b.UpdatedAt, b.UpdatedBy = now, a.AgentID
	return b, nil
}

// content copies the fields a caller may set.
func content(in Breadcrumb) Breadcrumb {
	return Breadcrumb{
		Title: in.Title, Description: in.Description, SemanticVersion: in.SemanticVersion,
		Context: in.Context, Tags: append([]string{}, in.Tags...), SchemaName: in.SchemaName,
		LLMHints: in.LLMHints, Visibility: in.Visibility, Sensitivity: in.Sensitivity,
		ExpiresAt: in.ExpiresAt, MaxReads: in.MaxReads, SearchText: in.SearchText,
	}
}
