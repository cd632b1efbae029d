package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks specification's published example.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t testing.TB, s string) Secret {
	t.Helper()
	sec, err := ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func TestSpecificationVector(t *testing.T) {
	s := mustSecret(t, specSecret)
	ts := time.Unix(specTimestamp, 0)
	if got := Signature(specID, ts, []byte(specBody), s); got != specSignature {
		t.Fatalf("Signature = %q, want %q", got, specSignature)
	}
	h := http.Header{}
	SetHeaders(h, specID, ts, []byte(specBody), s)
	if err := Verify(h, []byte(specBody), ts.Add(time.Minute), 0, s); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if s.Reveal() != specSecret {
		t.Fatalf("Reveal = %q", s.Reveal())
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.key) < minKey {
		t.Fatalf("key of %d bytes", len(s.key))
	}
	raw := strings.TrimPrefix(s.Reveal(), secretPrefix)
	for _, out := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%v %+v", s, s), s.LogValue().String()} {
		if strings.Contains(out, raw) {
			t.Errorf("printed form %q shows the key", out)
		}
	}
	back := mustSecret(t, s.Reveal())
	if back.Reveal() != s.Reveal() {
		t.Fatal("Reveal and ParseSecret do not round-trip")
	}
	other, _ := NewSecret()
	if other.Reveal() == s.Reveal() {
		t.Fatal("two new secrets are equal")
	}
}

func TestParseSecretErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "does not start with whsec_"},
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "does not start with whsec_"},
		{"whsec_!!!", "not standard base64"},
		{"whsec_c2hvcnQ=", "key of 5 bytes"},
		{"whsec_" + strings.Repeat("A", 200), "longer than"},
	} {
		_, err := ParseSecret(c.in)
		var se *SecretError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSecret(%.20q) = %v, want a SecretError saying %q", c.in, err, c.want)
		}
	}
}

// TestRotation: during the overlap both secrets sign, and a receiver
// holding either accepts; after it, only the new one.
func TestRotation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old, _ := NewSecret()
	k, err := Keyring{Current: old}.Rotate(now)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Active(now); len(got) != 2 || got[1].Reveal() != old.Reveal() {
		t.Fatalf("Active during overlap: %d secrets", len(got))
	}
	body := []byte(`{"kind":"created"}`)
	h := http.Header{}
	SetHeaders(h, "msg_1", now, body, k.Active(now)...)
	if n := len(strings.Fields(h.Get(HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures, want 2", n)
	}
	for name, s := range map[string]Secret{"old": old, "new": k.Current} {
		if err := Verify(h, body, now, 0, s); err != nil {
			t.Errorf("receiver with the %s secret: %v", name, err)
		}
	}
	later := now.Add(RotationOverlap)
	if got := k.Active(later); len(got) != 1 || got[0].Reveal() != k.Current.Reveal() {
		t.Fatalf("Active after overlap: %d secrets", len(got))
	}
}

func TestVerifyRefuses(t *testing.T) {
	s := mustSecret(t, specSecret)
	other, _ := NewSecret()
	ts := time.Unix(specTimestamp, 0)
	good := func() http.Header {
		h := http.Header{}
		SetHeaders(h, specID, ts, []byte(specBody), s)
		return h
	}
	cases := []struct {
		name   string
		edit   func(http.Header)
		body   string
		now    time.Time
		header string
		want   error
	}{
		{"no id", func(h http.Header) { h.Del(HeaderID) }, specBody, ts, HeaderID, ErrMissingHeader},
		{"no timestamp", func(h http.Header) { h.Del(HeaderTimestamp) }, specBody, ts, HeaderTimestamp, ErrMissingHeader},
		{"no signature", func(h http.Header) { h.Del(HeaderSignature) }, specBody, ts, HeaderSignature, ErrMissingHeader},
		{"tampered body", nil, `{"test": 2432232315}`, ts, HeaderSignature, ErrNoMatch},
		{"other id", func(h http.Header) { h.Set(HeaderID, "msg_other") }, specBody, ts, HeaderSignature, ErrNoMatch},
		{"moved timestamp", func(h http.Header) { h.Set(HeaderTimestamp, strconv.Itoa(specTimestamp+1)) }, specBody, ts, HeaderSignature, ErrNoMatch},
		{"too old", nil, specBody, ts.Add(DefaultTolerance + time.Second), HeaderTimestamp, ErrTooOld},
		{"too new", nil, specBody, ts.Add(-DefaultTolerance - time.Second), HeaderTimestamp, ErrTooNew},
		{"timestamp not a number", func(h http.Header) { h.Set(HeaderTimestamp, "1614265330.5") }, specBody, ts, HeaderTimestamp, ErrBadHeader},
		{"timestamp signed", func(h http.Header) { h.Set(HeaderTimestamp, "+1614265330") }, specBody, ts, HeaderTimestamp, ErrBadHeader},
		{"wrong version", func(h http.Header) { h.Set(HeaderSignature, strings.Replace(h.Get(HeaderSignature), "v1,", "v2,", 1)) }, specBody, ts, HeaderSignature, ErrNoMatch},
		{"other secret's signature", func(h http.Header) { h.Set(HeaderSignature, Signature(specID, ts, []byte(specBody), other)) }, specBody, ts, HeaderSignature, ErrNoMatch},
		{"too many signatures", func(h http.Header) { h.Set(HeaderSignature, strings.Repeat("v1,AAAA ", 17)+h.Get(HeaderSignature)) }, specBody, ts, HeaderSignature, ErrBadHeader},
		{"signature header too long", func(h http.Header) { h.Set(HeaderSignature, strings.Repeat("x", 5000)) }, specBody, ts, HeaderSignature, ErrBadHeader},
		{"id too long", func(h http.Header) { h.Set(HeaderID, strings.Repeat("x", 300)) }, specBody, ts, HeaderID, ErrBadHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := good()
			if c.edit != nil {
				c.edit(h)
			}
			err := Verify(h, []byte(c.body), c.now, 0, s)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Header != c.header || !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v naming %s", err, c.want, c.header)
			}
		})
	}
	// Among several signatures, one good one is enough.
	h := good()
	h.Set(HeaderSignature, "v1a,xyz v1,AAAA "+h.Get(HeaderSignature))
	if err := Verify(h, []byte(specBody), ts, 0, other, s); err != nil {
		t.Fatalf("Verify with a good signature among others: %v", err)
	}
}

// FuzzVerify: any header values and body are refused or accepted without
// a panic; a request signed with the secret is accepted whatever the id
// and body, and changing the body's last byte makes it refused.
func FuzzVerify(f *testing.F) {
	f.Add(specID, strconv.Itoa(specTimestamp), specSignature, []byte(specBody))
	f.Add("", "", "", []byte{})
	f.Add("a", "-9223372036854775808", "v1,", []byte("x"))
	f.Add("msg", "9223372036854775807", "v1,=== v1 ,v1", []byte("{}"))
	f.Add("m", "00001614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=  \t v1,a", []byte(specBody))
	s := mustSecret(f, specSecret)
	now := time.Unix(specTimestamp, 0)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		if Verify(h, body, now, 0, s) == nil && sig != Signature(id, now, body, s) && !strings.Contains(sig, Signature(id, now, body, s)[3:]) {
			t.Fatalf("accepted a signature that is not the secret's: %q", sig)
		}
		if id == "" || len(id) > maxIDLen {
			return
		}
		SetHeaders(h, id, now, body, s)
		if err := Verify(h, body, now, 0, s); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		if len(body) > 0 {
			tampered := append([]byte(nil), body...)
			tampered[len(tampered)-1] ^= 1
			if Verify(h, tampered, now, 0, s) == nil {
				t.Fatal("tampered body accepted")
			}
		}
	})
}
