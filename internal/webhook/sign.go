// Package webhook delivers ctxkit's events to the HTTP endpoints agents
// register, the way the Standard Webhooks specification describes: each
// request is signed (webhook-id, webhook-timestamp, webhook-signature),
// retried with backoff when the endpoint fails for a reason that may pass,
// and dead-lettered when it does not.
//
// The package is the engine alone: signing and verification, an HTTP
// client that is safe to point at the internet (the address connected to
// is checked, redirects are not followed), a retry policy of pure
// functions, and a Dispatcher that takes due deliveries from a Queue a
// store implements. It knows nothing of breadcrumbs or selectors.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks request headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

const (
	secretPrefix = "whsec_"
	// The specification asks for keys of 24 to 64 bytes; ctxkit makes 32.
	minKey, maxKey, newKey = 24, 64, 32
	// Bounds on what Verify reads from a request: a rotation needs two
	// signatures, a generous sender a handful.
	maxIDLen        = 256
	maxSignatureLen = 4096
	maxSignatures   = 16
	// DefaultTolerance is how far a timestamp may be from the receiver's
	// clock before Verify refuses it (a replayed request is older).
	DefaultTolerance = 5 * time.Minute
	// RotationOverlap is how long a rotated-out secret keeps signing beside
	// the new one, so receivers can switch without losing a delivery.
	RotationOverlap = 24 * time.Hour
)

// Secret is an endpoint's signing key. Its String and LogValue never show
// the key; Reveal gives the whsec_ form, to return once to its owner and
// to store.
type Secret struct{ key []byte }

// NewSecret makes a secret of 32 random bytes.
func NewSecret() (Secret, error) {
	k := make([]byte, newKey)
	if _, err := rand.Read(k); err != nil {
		return Secret{}, fmt.Errorf("webhook: generating a secret: %w", err)
	}
	return Secret{key: k}, nil
}

// ParseSecret reads a secret in the whsec_<base64> form.
func ParseSecret(s string) (Secret, error) {
	if len(s) > len(secretPrefix)+base64.StdEncoding.EncodedLen(maxKey) {
		return Secret{}, &SecretError{Reason: "longer than a 64-byte key"}
	}
	b64, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return Secret{}, &SecretError{Reason: "does not start with " + secretPrefix}
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return Secret{}, &SecretError{Reason: "not standard base64 after " + secretPrefix}
	}
	if len(k) < minKey || len(k) > maxKey {
		return Secret{}, &SecretError{Reason: fmt.Sprintf("key of %d bytes, want %d to %d", len(k), minKey, maxKey)}
	}
	return Secret{key: k}, nil
}

// SecretError says why a secret was refused; it never holds the secret.
type SecretError struct{ Reason string }

func (e *SecretError) Error() string { return "webhook: secret: " + e.Reason }

// Reveal is the secret in the whsec_<base64> form.
func (s Secret) Reveal() string {
	return secretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// IsZero reports whether s holds no key.
func (s Secret) IsZero() bool { return len(s.key) == 0 }

func (s Secret) String() string { return "whsec_[redacted]" }

// LogValue keeps the key out of logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

func (s Secret) sign(id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Keyring is an endpoint's secrets: the current one, and during a
// rotation the previous one until PreviousUntil.
type Keyring struct {
	Current       Secret
	Previous      Secret
	PreviousUntil time.Time
}

// Rotate makes a new current secret; the old one keeps signing for
// RotationOverlap after now.
func (k Keyring) Rotate(now time.Time) (Keyring, error) {
	s, err := NewSecret()
	if err != nil {
		return Keyring{}, err
	}
	return Keyring{Current: s, Previous: k.Current, PreviousUntil: now.Add(RotationOverlap)}, nil
}

// Active is the secrets that sign at now: the current one first.
func (k Keyring) Active(now time.Time) []Secret {
	out := []Secret{k.Current}
	if !k.Previous.IsZero() && now.Before(k.PreviousUntil) {
		out = append(out, k.Previous)
	}
	return out
}

// Signature is the webhook-signature value for a message: one
// "v1,<base64>" per secret, separated by spaces.
func Signature(id string, ts time.Time, body []byte, secrets ...Secret) string {
	var b strings.Builder
	for i, s := range secrets {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(s.sign(id, ts.Unix(), body)))
	}
	return b.String()
}

// SetHeaders puts the three signing headers on h.
func SetHeaders(h http.Header, id string, ts time.Time, body []byte, secrets ...Secret) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Signature(id, ts, body, secrets...))
}

// Errors Verify wraps in a *VerifyError.
var (
	ErrMissingHeader = errors.New("missing header")
	ErrBadHeader     = errors.New("malformed header")
	ErrTooOld        = errors.New("timestamp too old")
	ErrTooNew        = errors.New("timestamp too new")
	ErrNoMatch       = errors.New("no signature matches")
)

// VerifyError names the header at fault.
type VerifyError struct {
	Header string
	Err    error
}

func (e *VerifyError) Error() string { return "webhook: " + e.Header + ": " + e.Err.Error() }
func (e *VerifyError) Unwrap() error { return e.Err }

// Verify checks a received request the way a receiver should: all three
// headers present, the timestamp within tolerance of now (0: 5 minutes),
// and one v1 signature made with one of secrets over exactly body. The
// comparison takes constant time. Receivers de-duplicate by webhook-id.
func Verify(h http.Header, body []byte, now time.Time, tolerance time.Duration, secrets ...Secret) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	for _, c := range []struct{ name, v string }{{HeaderID, id}, {HeaderTimestamp, tsText}, {HeaderSignature, sigs}} {
		if c.v == "" {
			return &VerifyError{c.name, ErrMissingHeader}
		}
	}
	if len(id) > maxIDLen {
		return &VerifyError{HeaderID, fmt.Errorf("%w: longer than %d bytes", ErrBadHeader, maxIDLen)}
	}
	if len(sigs) > maxSignatureLen {
		return &VerifyError{HeaderSignature, fmt.Errorf("%w: longer than %d bytes", ErrBadHeader, maxSignatureLen)}
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || len(tsText) > 19 || tsText[0] == '+' {
		return &VerifyError{HeaderTimestamp, fmt.Errorf("%w: not whole seconds since 1970", ErrBadHeader)}
	}
	// Compare in seconds: a timestamp far outside time.Time's range must
	// not wrap around into the window.
	switch n := now.Unix(); {
	case ts < n-int64(tolerance/time.Second):
		return &VerifyError{HeaderTimestamp, ErrTooOld}
	case ts > n+int64(tolerance/time.Second):
		return &VerifyError{HeaderTimestamp, ErrTooNew}
	}
	fields := strings.Fields(sigs)
	if len(fields) > maxSignatures {
		return &VerifyError{HeaderSignature, fmt.Errorf("%w: more than %d signatures", ErrBadHeader, maxSignatures)}
	}
	want := make([][]byte, len(secrets))
	for i, s := range secrets {
		want[i] = s.sign(id, ts, body)
	}
	for _, f := range fields {
		version, b64, ok := strings.Cut(f, ",")
		if !ok || version != "v1" {
			continue // other schemes (v1a, …) are not ours to judge
		}
		got, err := base64.StdEncoding.Strict().DecodeString(b64)
		if err != nil {
			continue
		}
		for _, w := range want {
			if hmac.Equal(got, w) {
				return nil
			}
		}
	}
	return &VerifyError{HeaderSignature, ErrNoMatch}
}
