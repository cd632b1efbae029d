package secret

import (
	"strings"
	"testing"
)

// TestRedact: the key alone, after Bearer in its usual cases and as JSON
// writes it is replaced; a short key only after Bearer; nil and the zero
// value change nothing.
func TestRedact(t *testing.T) {
	const key = `sk-<test>&"key"`
	r := New(key)
	for in, want := range map[string]string{
		"bad key " + key:                                 "bad key [redacted]",
		"Authorization: Bearer " + key:                   "Authorization: Bearer [redacted]",
		"bearer " + key + " and BEARER " + key:           "bearer [redacted] and BEARER [redacted]",
		`{"message":"sk-\u003ctest\u003e\u0026\"key\""}`: `{"message":"[redacted]"}`,
		`{"message":"sk-<test>&\"key\""}`:                `{"message":"[redacted]"}`,
		"nothing here":                                   "nothing here",
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	short := New("k-42")
	if got := short.Redact("Bearer k-42, k-42"); got != "Bearer [redacted], k-42" {
		t.Errorf("short key: %q", got)
	}
	var none *Redactor
	if none.Redact("x "+key) != "x "+key || New("").Redact(key) != key || none.HeldTail("Bear") != 0 {
		t.Error("an empty redactor changed something")
	}
}

// TestHeldTail: the end of a piece of text that could begin a form of the
// key is held back, and nothing else.
func TestHeldTail(t *testing.T) {
	const key = "sk-0123456789"
	r := New(key)
	for s, want := range map[string]int{
		"your key is sk-01":   len("sk-01"),
		"Authorization: Bear": len("Bear"),
		"done.":               0,
		"s":                   1,
		"your key is " + key:  0, // whole: Redact has already replaced it
	} {
		if got := r.HeldTail(s); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
	if got := r.HeldTail(strings.Repeat("x", 100) + key[:len(key)-1]); got != len(key)-1 {
		t.Errorf("a key short of one byte: %d", got)
	}
}
