package store

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// Revocation withdraws bearer tokens before they expire: one token by its
// id (the token's jti claim), or every token of one agent of an owner
// issued before a time. Revocations are kept for good; servers load them
// to refuse the tokens they name.
type Revocation struct {
	Seq int64 `json:"seq"` // grows with every revocation recorded
	// OwnerID is the owner whose tokens it names. A revocation with no
	// owner (only the operator's, from the command line) names the token
	// of whatever owner carries that id, or the agent's tokens in every
	// owner.
	OwnerID string    `json:"owner_id,omitempty"`
	TokenID string    `json:"id,omitempty"`    // one token; or
	AgentID string    `json:"agent,omitempty"` // the agent's tokens issued before Before
	Before  time.Time `json:"before,omitzero"`
	// RevokedAt is set by the store; RevokedBy says who asked (an agent
	// id, or "cli").
	RevokedAt time.Time `json:"revoked_at"`
	RevokedBy string    `json:"revoked_by"`
}

// Names reports whether r withdraws the token of owner and agent with the
// id jti (empty for tokens without one) issued at issued (the zero time
// when the token does not say: then any agent revocation names it).
func (r *Revocation) Names(owner, agent, jti string, issued time.Time) bool {
	if r.TokenID != "" {
		return jti == r.TokenID && (r.OwnerID == "" || r.OwnerID == owner)
	}
	return (r.OwnerID == "" || r.OwnerID == owner) && r.AgentID == agent && issued.Before(r.Before)
}

// ParseRevocationBefore reads the time an agent revocation names (RFC
// 3339): tokens issued before it are revoked. A time before 1970 (which
// would read as no time at all) or after now (tokens minted later would be
// born revoked, with no way to undo it) is CodeInvalid naming "before".
func ParseRevocationBefore(s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	switch {
	case err != nil:
		return time.Time{}, invalid("before", "%q is not an RFC 3339 time such as \"2026-01-02T15:04:05Z\"", s)
	case t.Before(time.Unix(0, 0)):
		return time.Time{}, invalid("before", "%s is before 1970: no token was issued then", s)
	case t.After(now):
		return time.Time{}, invalid("before", "%s is in the future", s)
	}
	return t, nil
}

// PlainID reports whether an id is one every backend stores and a token
// carries: at most 256 bytes of UTF-8 without control characters.
func PlainID(s string) bool {
	if len(s) > 256 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
