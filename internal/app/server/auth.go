package server

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ctxkit/ctxkit/store"
)

// Roles a token may carry.
const (
	RoleCurator    = "curator"    // everything, including delete
	RoleEmitter    = "emitter"    // read, create, update
	RoleSubscriber = "subscriber" // read, stream events
)

// ValidRoles lists the roles in the order they are documented.
var ValidRoles = []string{RoleCurator, RoleEmitter, RoleSubscriber}

// Principal is the verified identity behind a request.
type Principal struct {
	AgentID string
	OwnerID string
	Roles   []string
	// The token's id and issue time, set for a request's caller: a
	// webhook is bound to the token that manages it, and lives by it.
	tokenID string
	issued  time.Time
}

// Has reports whether p holds role; curators hold every role.
func (p Principal) Has(role string) bool {
	return slices.Contains(p.Roles, role) || slices.Contains(p.Roles, RoleCurator)
}

type claims struct {
	OwnerID string   `json:"owner_id"`
	Roles   []string `json:"roles"`
	// IssuedAt shadows the registered iat claim, which the JWT library
	// writes in whole seconds: an agent revocation names the tokens issued
	// before an instant, and a token minted for the agent just after it,
	// in the same second, must not be born revoked.
	IssuedAt *issuedAt `json:"iat,omitempty"`
	jwt.RegisteredClaims
}

// issuedAt is a token's issue time to the microsecond: seconds since the
// epoch with up to six decimals (a JWT NumericDate may have a fraction).
// Tokens minted with whole seconds read as before.
type issuedAt struct{ time.Time }

func (t issuedAt) MarshalJSON() ([]byte, error) {
	us := t.Truncate(time.Microsecond).Nanosecond() / 1000
	if us == 0 {
		return strconv.AppendInt(nil, t.Unix(), 10), nil
	}
	return fmt.Appendf(nil, "%d.%06d", t.Unix(), us), nil
}

func (t *issuedAt) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<40 {
		return fmt.Errorf("iat: %s is not a time", b)
	}
	// A float64 holds today's times to a quarter of a microsecond:
	// rounding gives back the microsecond written.
	sec, frac := math.Modf(f)
	t.Time = time.Unix(int64(sec), int64(math.Round(frac*1e6))*1000)
	return nil
}

// Mint signs a bearer token (EdDSA JWT) for an agent of an owner.
func Mint(key ed25519.PrivateKey, p Principal, ttl time.Duration, now time.Time) (string, error) {
	tok, _, err := MintWithID(key, p, ttl, now)
	return tok, err
}

// MintWithID is Mint that also returns the token's id (its jti claim, 128
// random bits), by which the token can be revoked.
func MintWithID(key ed25519.PrivateKey, p Principal, ttl time.Duration, now time.Time) (token, id string, err error) {
	if p.AgentID == "" || p.OwnerID == "" {
		return "", "", errors.New("a token needs an agent and an owner")
	}
	if !plainID(p.AgentID) || !plainID(p.OwnerID) {
		return "", "", errors.New("agent and owner ids are at most 256 bytes of UTF-8 without control characters")
	}
	if len(p.Roles) == 0 {
		return "", "", errors.New("a token needs at least one role")
	}
	for _, r := range p.Roles {
		if !slices.Contains(ValidRoles, r) {
			return "", "", fmt.Errorf("unknown role %q: use %s", r, strings.Join(ValidRoles, ", "))
		}
	}
	if ttl <= 0 {
		return "", "", errors.New("the token's lifetime must be positive")
	}
	id = rand.Text()
	c := claims{OwnerID: p.OwnerID, Roles: p.Roles, IssuedAt: &issuedAt{now}, RegisteredClaims: jwt.RegisteredClaims{
		ID:        id,
		Subject:   p.AgentID,
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	token, err = jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(key)
	return token, id, err
}

// verified is a token that passed verifyClaims, with the times it is
// valid between, so it need not be verified again until then.
type verified struct {
	p                  Principal
	notBefore, expires time.Time
	// What a revocation may name besides the principal: the token's id
	// (empty for tokens minted before ids) and its issue time (zero when
	// it has none).
	id     string
	issued time.Time
}

// verifyClaims checks a token's signature, algorithm, expiry and claims.
func verifyClaims(pub ed25519.PublicKey, token string, now time.Time) (Principal, verified, error) {
	p, c, err := parseToken(pub, token, now)
	if err != nil {
		return Principal{}, verified{}, err
	}
	v := verified{p: p, expires: c.ExpiresAt.Time, id: c.ID}
	if c.NotBefore != nil {
		v.notBefore = c.NotBefore.Time
	}
	if c.IssuedAt != nil {
		v.issued = c.IssuedAt.Time
	}
	return p, v, nil
}

func parseToken(pub ed25519.PublicKey, token string, now time.Time) (Principal, claims, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithExpirationRequired(),
		// One spelling per token: lenient base64 lets the spare bits of a
		// segment's last character vary, and every spelling would be a
		// new entry in the cache of verified tokens.
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return Principal{}, c, err
	}
	if c.Subject == "" || c.OwnerID == "" || len(c.Roles) == 0 {
		return Principal{}, c, errors.New("token lacks sub, owner_id or roles")
	}
	if !plainID(c.Subject) || !plainID(c.OwnerID) || !plainID(c.ID) {
		return Principal{}, c, errors.New("token's sub, owner_id or jti holds control characters or is over 256 bytes")
	}
	for _, r := range c.Roles {
		if !slices.Contains(ValidRoles, r) {
			return Principal{}, c, fmt.Errorf("token has unknown role %q", r)
		}
	}
	return Principal{AgentID: c.Subject, OwnerID: c.OwnerID, Roles: c.Roles}, c, nil
}

// plainID reports whether an owner, agent or token id is one every
// backend stores (store.PlainID).
func plainID(s string) bool { return store.PlainID(s) }

// KeyFile is the signing key's file name in the data directory.
const KeyFile = "signing.key"

// LoadOrCreateKey reads the Ed25519 signing key at path (PKCS #8 PEM), or
// creates it when the file does not exist; created reports the latter.
func LoadOrCreateKey(path string) (key ed25519.PrivateKey, created bool, err error) {
	key, err = LoadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	_, key, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	// Written whole to a temporary file, then linked into place: link fails
	// if the file exists, so servers starting together on a shared key path
	// agree on the first key written, and none reads a partial file.
	f, err := os.CreateTemp(filepath.Dir(path), ".signing-*.tmp")
	if err != nil {
		return nil, false, err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, false, err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return nil, false, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, false, err
	}
	if err := f.Close(); err != nil {
		return nil, false, err
	}
	if err := os.Link(f.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			key, err = LoadKey(path)
			return key, false, err
		}
		return nil, false, err
	}
	return key, true, nil
}

// LoadKey reads an Ed25519 signing key (PKCS #8 PEM).
func LoadKey(path string) (ed25519.PrivateKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: readable by others (mode %o): anyone who can read it can mint tokens; chmod 600 it", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: not a PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an Ed25519 key", path)
	}
	return key, nil
}
