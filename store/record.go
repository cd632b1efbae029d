package store

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// What every backend does the same way around its own storage: building a
// new record, the next version of one, and reading a page size.

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

// PageSize is q.Limit checked: DefaultLimit for 0, an error outside
// 1..MaxLimit. It also refuses more tag filters than a breadcrumb can
// have tags (MaxTags).
func PageSize(q Query) (int, error) {
	if err := checkTagFilters(q.Tags); err != nil {
		return 0, err
	}
	switch {
	case q.Limit == 0:
		return DefaultLimit, nil
	case q.Limit < 0 || q.Limit > MaxLimit:
		return 0, &Error{Code: CodeInvalid, Path: "limit", Msg: fmt.Sprintf("must be between 1 and %d", MaxLimit)}
	}
	return q.Limit, nil
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

// Distinct is ss without repeats, in first-seen order: the tags of a filter.
func Distinct(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// checkTagFilters refuses more distinct tag filters than MaxTags: no
// breadcrumb could match them all, and each costs the query work.
func checkTagFilters(tags []string) error {
	if n := len(Distinct(tags)); n > MaxTags {
		return &Error{Code: CodeInvalid, Path: "tag", Msg: fmt.Sprintf("%d tag filters; the limit is %d", n, MaxTags)}
	}
	return nil
}
