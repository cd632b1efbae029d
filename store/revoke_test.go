package store_test

import (
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

func TestRevocationNames(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 500_000_000, time.UTC)
	byID := store.Revocation{OwnerID: "acme", TokenID: "j1"}
	anyOwner := store.Revocation{TokenID: "j1"}
	agent := store.Revocation{OwnerID: "acme", AgentID: "bot", Before: t0}
	agentAnyOwner := store.Revocation{AgentID: "bot", Before: t0}
	for _, tc := range []struct {
		name              string
		r                 store.Revocation
		owner, agent, jti string
		issued            time.Time
		want              bool
	}{
		{"id, same owner", byID, "acme", "x", "j1", t0, true},
		{"id, other owner", byID, "evil", "x", "j1", t0, false},
		{"id, other token", byID, "acme", "x", "j2", t0, false},
		{"id, token without one", byID, "acme", "x", "", t0, false},
		{"id of any owner", anyOwner, "evil", "x", "j1", t0, true},
		{"agent, issued before", agent, "acme", "bot", "", t0.Add(-time.Second), true},
		// Tokens carry their issue time in whole seconds: one issued in
		// the second of the revocation counts as before it.
		{"agent, same second", agent, "acme", "bot", "j", t0.Truncate(time.Second), true},
		{"agent, issued at", agent, "acme", "bot", "j", t0, false},
		{"agent, issued after", agent, "acme", "bot", "j", t0.Add(time.Second), false},
		{"agent, no issue time", agent, "acme", "bot", "j", time.Time{}, true},
		{"agent, other agent", agent, "acme", "bot2", "j", t0.Add(-time.Hour), false},
		{"agent, other owner", agent, "evil", "bot", "j", t0.Add(-time.Hour), false},
		{"agent of any owner", agentAnyOwner, "evil", "bot", "j", t0.Add(-time.Hour), true},
		{"agent of any owner, other agent", agentAnyOwner, "evil", "bot2", "j", t0.Add(-time.Hour), false},
		{"agent of any owner, issued after", agentAnyOwner, "acme", "bot", "j", t0.Add(time.Second), false},
	} {
		if got := tc.r.Names(tc.owner, tc.agent, tc.jti, tc.issued); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
