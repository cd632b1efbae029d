package relay

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// secretSamples hold a secret of each built-in kind, and near misses.
var secretSamples = []string{
	"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
	"-----BEGIN OPENSSH PRIVATE KEY-----\ncut off",
	"token ghp_" + strings.Repeat("a1", 18) + " end",
	"github_pat_" + strings.Repeat("B_", 12),
	"id AKIAIOSFODNN7EXAMPLE and ASIA1234567890ABCDEF",
	"key sk-proj-" + strings.Repeat("x", 24),
	"AIza" + strings.Repeat("Q", 35),
	"xoxb-1234567890-abc",
	"Authorization: Bearer abc.def-123456789012",
	"Bearer authentication and authorization",
	"mail ann@example.com, bob@mail.example.org",
	"plain prose with no secret in it at all",
}

func newTestRedactor(t testing.TB, own ...Pattern) *Redactor {
	t.Helper()
	r, err := NewRedactor(RedactorOptions{Emails: true, Patterns: own})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// withoutNeedles is r searching every text with every pattern.
func withoutNeedles(r *Redactor) *Redactor {
	bare := &Redactor{rules: slices.Clone(r.rules)}
	for i := range bare.rules {
		bare.rules[i].needles = nil
	}
	return bare
}

func TestBuiltinNeedles(t *testing.T) {
	for _, p := range append(slices.Clone(BuiltinPatterns), EmailPattern) {
		if len(needles[p.Kind]) == 0 {
			t.Errorf("the built-in %s pattern has no needles: every text is searched with it", p.Kind)
		}
	}
	r := newTestRedactor(t, Pattern{Kind: "ticket", Regex: `TICKET-[0-9]+`}, Pattern{Kind: "any", Regex: `(?i)secret=\w+`})
	if got := r.rules[len(r.rules)-2].needles; !slices.Equal(got, []string{"TICKET-"}) {
		t.Errorf("own pattern needles = %q, want its literal prefix", got)
	}
	if got := r.rules[len(r.rules)-1].needles; got != nil {
		t.Errorf("a case-insensitive own pattern got needles %q: it must run on every text", got)
	}
	bare := withoutNeedles(r)
	for _, s := range append(secretSamples, "TICKET-42 and SECRET=abc") {
		got, gotFound := r.Redact(s)
		want, wantFound := bare.Redact(s)
		if got != want || !maps.Equal(gotFound, wantFound) {
			t.Errorf("Redact(%q) = %q %v; searching every text gives %q %v", s, got, gotFound, want, wantFound)
		}
	}
}

// FuzzRedactNeedles holds the needles to the patterns: skipping a pattern
// for text without its needles changes nothing.
func FuzzRedactNeedles(f *testing.F) {
	for _, s := range secretSamples {
		f.Add(s)
	}
	r := newTestRedactor(f, Pattern{Kind: "ticket", Regex: `TICKET-[0-9]+`})
	bare := withoutNeedles(r)
	f.Fuzz(func(t *testing.T, s string) {
		got, gotFound := r.Redact(s)
		want, wantFound := bare.Redact(s)
		if got != want || !maps.Equal(gotFound, wantFound) {
			t.Fatalf("Redact(%q) = %q %v; searching every text gives %q %v", s, got, gotFound, want, wantFound)
		}
	})
}

// BenchmarkRedactProse is the redactor over 16 KiB of ordinary text with
// one secret, searched as the redactor does and with every pattern run on
// the whole text (the ratio is what the needles save).
func BenchmarkRedactProse(b *testing.B) {
	text := strings.Repeat("The deployment runbook says to drain the node, then restart the service and watch the logs. ", 170) +
		"Authorization: Bearer abc.def-123456789012"
	r := newTestRedactor(b)
	for _, c := range []struct {
		name string
		r    *Redactor
	}{{"needles", r}, {"every-pattern", withoutNeedles(r)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				c.r.Redact(text)
			}
		})
	}
}
