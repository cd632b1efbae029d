package server

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// A login code is what a console login link carries in its fragment
// (/ui/#login=CODE): a short-lived, single-use stand-in for a token, so
// that a link printed in a terminal can be opened in a browser without the
// token itself passing through the URL. The code names a principal and an
// expiry and is authenticated with a key derived from the signing key, so
// only whoever holds that key (ctxkit serve, ctxkit token) can mint one.
// It is not a bearer token: its format is not a JWT, and the API refuses it.
const (
	// LoginCodeTTL is how long a login code may be exchanged.
	LoginCodeTTL = 10 * time.Minute
	// ConsoleTokenTTL is the lifetime of the token a login code is
	// exchanged for: a working day at the console.
	ConsoleTokenTTL = 12 * time.Hour

	loginCodePrefix = "lc1."
	maxLoginCode    = 2048 // bytes: a code names one principal, well under this
	// loginSpentBy marks a spent code in the revocations: the revocation
	// of a token id no token carries, which every replica loads.
	loginSpentBy = "console login"
)

// loginClaims is a login code's payload.
type loginClaims struct {
	ID      string   `json:"id"`
	OwnerID string   `json:"owner_id"`
	AgentID string   `json:"agent_id"`
	Roles   []string `json:"roles"`
	Issued  int64    `json:"iat"` // Unix microseconds: an agent revocation after it refuses the code
	Expires int64    `json:"exp"` // Unix seconds
}

// loginKey derives the login codes' MAC key from the signing key: a key of
// its own, so nothing signed for one purpose passes for the other.
func loginKey(key ed25519.PrivateKey) ([]byte, error) {
	return hkdf.Key(sha256.New, key.Seed(), nil, "ctxkit console login code v1", 32)
}

// MintLoginCode returns a login code for p, valid for ttl from now: the
// code a console login link (/ui/#login=CODE) carries, exchanged once at
// POST /console/login for a token of p valid ConsoleTokenTTL.
func MintLoginCode(key ed25519.PrivateKey, p Principal, ttl time.Duration, now time.Time) (string, error) {
	// The same rules as a token's: checked by minting one, not used.
	if _, _, err := MintWithID(key, p, time.Minute, now); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > time.Hour {
		return "", errors.New("a login code's lifetime is positive and at most an hour")
	}
	payload, err := json.Marshal(loginClaims{ID: rand.Text(), OwnerID: p.OwnerID, AgentID: p.AgentID, Roles: p.Roles,
		Issued: now.UnixMicro(), Expires: now.Add(ttl).Unix()})
	if err != nil {
		return "", err
	}
	mk, err := loginKey(key)
	if err != nil {
		return "", err
	}
	body := loginCodePrefix + base64.RawURLEncoding.EncodeToString(payload)
	mac := hmac.New(sha256.New, mk)
	mac.Write([]byte(body))
	code := body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	if len(code) > maxLoginCode {
		return "", fmt.Errorf("the login code would be %d bytes, over %d: shorter owner or agent ids", len(code), maxLoginCode)
	}
	return code, nil
}

// errLoginCode is every refusal of a login code: which check failed is no
// business of whoever holds a bad one.
var errLoginCode = errorf(http.StatusUnauthorized, CodeUnauthorized,
	"this login code is wrong, expired or already used: mint a new link with 'ctxkit token --console'")

// openLoginCode checks a code's form, MAC (in constant time) and expiry,
// and returns its claims.
func openLoginCode(mk []byte, code string, now time.Time) (loginClaims, error) {
	var c loginClaims
	if len(code) > maxLoginCode || !strings.HasPrefix(code, loginCodePrefix) {
		return c, errLoginCode
	}
	// The prefix holds a dot: the payload and its MAC follow it.
	payload64, sig, ok := strings.Cut(code[len(loginCodePrefix):], ".")
	if !ok {
		return c, errLoginCode
	}
	body := loginCodePrefix + payload64
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil {
		return c, errLoginCode
	}
	mac := hmac.New(sha256.New, mk)
	mac.Write([]byte(body))
	if !hmac.Equal(got, mac.Sum(nil)) {
		return c, errLoginCode
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(payload64)
	if err != nil {
		return c, errLoginCode
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return loginClaims{}, errLoginCode
	}
	if !plainID(c.ID) || c.ID == "" || !plainID(c.OwnerID) || !plainID(c.AgentID) || len(c.Roles) == 0 || len(c.Roles) > len(ValidRoles) {
		return loginClaims{}, errLoginCode
	}
	for _, r := range c.Roles {
		if !slices.Contains(ValidRoles, r) {
			return loginClaims{}, errLoginCode
		}
	}
	if now.Unix() >= c.Expires {
		return loginClaims{}, errLoginCode
	}
	return c, nil
}

// loginRequest is POST /console/login's body.
type loginRequest struct {
	Code string `json:"code"`
}

// loginReply is a login's answer: the token and whom it names.
type loginReply struct {
	Token     string    `json:"token"`
	TokenID   string    `json:"token_id"`
	OwnerID   string    `json:"owner_id"`
	AgentID   string    `json:"agent_id"`
	Roles     []string  `json:"roles"`
	ExpiresAt time.Time `json:"expires_at"`
}

// consoleLogin serves POST /console/login: a login code in, once, a token
// of its principal out. A code is spent by recording it as a revocation
// (of a token id no token carries), the store's one record every replica
// already reads: of the replicas that record the same code, the one whose
// record has the lowest sequence number wins, and revocations commit in
// sequence order, so every other one sees the winner's record when it
// reloads after its own.
func (s *Server) consoleLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := s.exchangeLoginCode(w, r); err != nil {
		s.writeError(w, r, err)
	}
}

func (s *Server) exchangeLoginCode(w http.ResponseWriter, r *http.Request) error {
	var req loginRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Code == "" {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "code", "required: the code after #login= in the link")
	}
	mk, err := loginKey(s.opts.Key)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	c, err := openLoginCode(mk, req.Code, now)
	if err != nil {
		return err
	}
	p := Principal{OwnerID: c.OwnerID, AgentID: c.AgentID, Roles: c.Roles}
	set, err := s.revoked.current(r.Context())
	if err != nil {
		return err
	}
	// A spent code, or an agent whose tokens were revoked after the code
	// was minted: refused before anything is recorded.
	if _, ok := set.revoked(verified{p: p, id: c.ID, issued: time.UnixMicro(c.Issued)}); ok {
		return errLoginCode
	}
	spent, err := s.opts.Store.Revoke(r.Context(), store.Revocation{TokenID: c.ID, RevokedBy: loginSpentBy})
	if err != nil {
		return err
	}
	s.revoked.stale()
	if set, err = s.revoked.current(r.Context()); err != nil {
		return err
	}
	if set.spentBefore(c.ID, spent.Seq) {
		return errLoginCode // another request, perhaps on another replica, spent it first
	}
	tok, id, err := MintWithID(s.opts.Key, p, ConsoleTokenTTL, now)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, loginReply{Token: tok, TokenID: id, OwnerID: p.OwnerID, AgentID: p.AgentID, Roles: p.Roles,
		ExpiresAt: now.Add(ConsoleTokenTTL).UTC()})
	return nil
}

// spentBefore reports whether a revocation of token id was recorded
// before seq.
func (set *revocationSet) spentBefore(id string, seq int64) bool {
	set.mu.RLock()
	defer set.mu.RUnlock()
	for _, r := range set.byToken[id] {
		if r.Seq < seq {
			return true
		}
	}
	return false
}

// viewStats is GET /breadcrumbs/{id}/stats: what the view saves.
type viewStats struct {
	ID      string `json:"id"`
	Version int64  `json:"version"`
	view.Stats
	Status string `json:"status"` // the view's: OK, or FALLBACK when it is the filtered context
}

// stats serves GET /breadcrumbs/{id}/stats: the token counts of the
// record's context and of its view, by the server's counter (the
// o200k_base encoding, offline). A lookup, not a read: it delivers no
// content, so it spends no read budget.
func (s *Server) stats(w http.ResponseWriter, r *http.Request, p Principal) error {
	b, err := s.opts.Store.Get(r.Context(), actor(p), r.PathValue("id"))
	if err != nil {
		return err
	}
	v, err := s.applyView(r.Context(), &b)
	if err != nil {
		return err
	}
	st, err := view.Measure("", b.Context, v.value)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(b.Version))
	writeJSON(w, http.StatusOK, viewStats{ID: b.ID, Version: b.Version, Stats: st, Status: string(viewStatus(v.status))})
	return nil
}
