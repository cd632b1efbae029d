// Package access holds the rules every store backend applies the same way
// to what it lets a caller read: a breadcrumb's expiry and read budget,
// and the revocations that withdraw bearer tokens.
package access

import (
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Expired reports whether b is past its expiry time or read budget at now.
func Expired(b *store.Breadcrumb, now time.Time) bool {
	return (b.ExpiresAt != nil && !now.Before(*b.ExpiresAt)) || (b.MaxReads > 0 && b.Reads >= b.MaxReads)
}

// SpendsBudget reports whether a's view read of b counts against b's read
// budget: only reads by b's own owner's agents do. Another owner may read a
// public breadcrumb, but must not be able to use up (and so delete) what
// its owner shared.
func SpendsBudget(a store.Actor, b *store.Breadcrumb) bool {
	return b.MaxReads > 0 && b.OwnerID == a.OwnerID
}

// ValidateRevocation checks a revocation to record; a bad one is
// store.CodeInvalid naming the field at fault (the names of POST
// /tokens/revoke's body and of the command line's flags).
func ValidateRevocation(r *store.Revocation) error {
	for _, f := range []struct{ name, v string }{{"owner_id", r.OwnerID}, {"id", r.TokenID}, {"agent", r.AgentID}, {"revoked_by", r.RevokedBy}} {
		if !store.PlainID(f.v) {
			return invalid(f.name, "at most 256 bytes of UTF-8 without control characters")
		}
	}
	switch {
	case r.TokenID != "" && r.AgentID != "":
		return invalid("id", "name one token (id) or one agent's tokens (agent), not both")
	case r.TokenID == "" && r.AgentID == "":
		return invalid("id", "required: the token's id, or else an agent whose tokens to revoke")
	case r.TokenID != "" && !r.Before.IsZero():
		return invalid("before", "applies to an agent's tokens, not to one token's id")
	case r.AgentID != "" && r.Before.IsZero():
		return invalid("before", "required with agent")
	}
	return nil
}

func invalid(path, msg string) error {
	return &store.Error{Code: store.CodeInvalid, Path: path, Msg: msg}
}
