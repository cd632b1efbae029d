package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// RevocationRefresh is how old the revocations a server checks tokens
// against may be: a revocation recorded through any replica (or from the
// command line) is honoured by every replica at most this long after it
// was committed, well within a second.
const RevocationRefresh = 500 * time.Millisecond

// revocations is a replica's copy of the store's revocations. Tokens are
// checked against it on every request, cached verification or not; when it
// is older than RevocationRefresh, the next request loads the revocations
// recorded since (one small query, at most twice a second, and none while
// the server is idle). If they cannot be loaded, requests are refused as
// unavailable rather than let a revoked token through.
type revocations struct {
	store  store.Store
	mu     sync.Mutex   // held by the one request refreshing
	loaded atomic.Int64 // when the last load began, in ns since monoEpoch, plus 1; 0: never, or stale
	after  int64        // the newest Seq loaded; under mu
	set    revocationSet
}

// revocationSet only grows: a refresh adds what is new in place, so it
// costs what was recorded since the last one, however many revocations a
// curator has recorded before.
type revocationSet struct {
	mu      sync.RWMutex
	byToken map[string][]store.Revocation
	byAgent map[[2]string]store.Revocation // owner, agent: the latest Before
	owners  map[string]int                 // revocations recorded per owner
}

// current returns the set, loaded less than RevocationRefresh ago.
func (rv *revocations) current(ctx context.Context) (*revocationSet, error) {
	if rv.fresh() {
		return &rv.set, nil
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.fresh() {
		return &rv.set, nil // another request refreshed it meanwhile
	}
	// The query's start, not its end, dates what it saw: whatever was
	// committed before it began is in it.
	start := time.Now()
	rs, err := rv.store.Revocations(ctx, rv.after)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &store.Error{Code: store.CodeUnavailable, Msg: "the server cannot check token revocations for now: retry", Err: err}
	}
	if len(rs) > 0 {
		set := &rv.set
		set.mu.Lock()
		if set.byToken == nil {
			set.byToken, set.byAgent, set.owners = map[string][]store.Revocation{}, map[[2]string]store.Revocation{}, map[string]int{}
		}
		for _, r := range rs {
			rv.after = r.Seq
			set.owners[r.OwnerID]++
			if r.TokenID != "" {
				set.byToken[r.TokenID] = append(set.byToken[r.TokenID], r)
				continue
			}
			k := [2]string{r.OwnerID, r.AgentID}
			if old, ok := set.byAgent[k]; !ok || r.Before.After(old.Before) {
				set.byAgent[k] = r
			}
		}
		set.mu.Unlock()
	}
	rv.loaded.Store(int64(start.Sub(monoEpoch)) + 1)
	return &rv.set, nil
}

// monoEpoch dates loads on the monotonic clock: a wall clock set back
// must not keep an old copy fresh.
var monoEpoch = time.Now()

func (rv *revocations) fresh() bool {
	l := rv.loaded.Load()
	return l != 0 && time.Since(monoEpoch)-time.Duration(l-1) < RevocationRefresh
}

// stale makes the next request load the revocations again: this replica
// has just recorded one, and honours it at once.
func (rv *revocations) stale() {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.loaded.Store(0)
}

// recorded returns how many revocations name owner.
func (set *revocationSet) recorded(owner string) int {
	set.mu.RLock()
	defer set.mu.RUnlock()
	return set.owners[owner]
}

// revoked returns the revocation that names the verified token, if any.
func (set *revocationSet) revoked(v verified) (store.Revocation, bool) {
	set.mu.RLock()
	defer set.mu.RUnlock()
	if v.id != "" {
		for _, r := range set.byToken[v.id] {
			if r.Names(v.p.OwnerID, v.p.AgentID, v.id, v.issued) {
				return r, true
			}
		}
	}
	for _, owner := range [...]string{v.p.OwnerID, ""} { // "": the operator's, of every owner
		if r, ok := set.byAgent[[2]string{owner, v.p.AgentID}]; ok && r.Names(v.p.OwnerID, v.p.AgentID, v.id, v.issued) {
			return r, true
		}
	}
	return store.Revocation{}, false
}

// unlessRevoked returns a verified token's principal, or refuses the token
// when a revocation names it. It runs on every request, whether the
// token's verification was cached or not.
func (s *Server) unlessRevoked(ctx context.Context, v verified) (Principal, error) {
	set, err := s.revoked.current(ctx)
	if err != nil {
		return Principal{}, err
	}
	if r, ok := set.revoked(v); ok {
		return Principal{}, errorf(http.StatusUnauthorized, CodeTokenRevoked, "this token was revoked at %s: ask for a new one", r.RevokedAt.Format(time.RFC3339))
	}
	p := v.p
	p.tokenID, p.issued = v.id, v.issued
	return p, nil
}

// revokeRequest is POST /tokens/revoke's body: a token's id, or an agent
// (of the caller's owner) whose tokens issued before a time (default now)
// are revoked.
type revokeRequest struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Before string `json:"before"`
}

// revoke records a revocation of the curator's own owner's tokens: a
// curator cannot name another owner's token or agent, whatever the body
// says, since the owner is taken from its token.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req revokeRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	rv := store.Revocation{OwnerID: p.OwnerID, TokenID: req.ID, AgentID: req.Agent, RevokedBy: p.AgentID}
	now := s.opts.Now()
	switch {
	case req.Before != "" && req.Agent == "":
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "before", "applies to an agent's tokens; give agent too")
	case req.Before != "":
		t, err := store.ParseRevocationBefore(req.Before, now)
		if err != nil {
			return err
		}
		rv.Before = t
	case req.Agent != "":
		rv.Before = now
	}
	set, err := s.revoked.current(r.Context())
	if err != nil {
		return err
	}
	if n := set.recorded(p.OwnerID); n >= s.opts.MaxRevocations {
		return errorf(http.StatusConflict, CodeTooManyRevocations, "owner %q has %d revocations recorded, the most its curators may record: "+
			"revoke an agent's tokens (agent) rather than tokens one by one, or ask the operator (ctxkit token revoke)", p.OwnerID, n)
	}
	out, err := s.opts.Store.Revoke(r.Context(), rv)
	if err != nil {
		return err
	}
	s.revoked.stale()
	writeJSON(w, http.StatusCreated, out)
	return nil
}
