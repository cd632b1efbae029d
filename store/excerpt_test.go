package store_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

// TestCutExcerptValidUTF8: an excerpt or error text kept with an
// attempt is text on both backends; PostgreSQL's text refuses bytes
// that are not UTF-8 as it refuses NUL, and SQLite keeps them as they
// are, so CutExcerpt's answer must be valid UTF-8, within the bound and
// free of NUL, whatever it is given.
func TestCutExcerptValidUTF8(t *testing.T) {
	for _, in := range []string{
		"caf\xe9",
		"\xff\xfe\x00",
		"ok \xc3",
		strings.Repeat("\x80", store.MaxAttemptExcerpt+10),
		strings.Repeat("é", store.MaxAttemptExcerpt) + "\xff",
		strings.Repeat("\x00", store.MaxAttemptExcerpt),
	} {
		out := store.CutExcerpt(in)
		if !utf8.ValidString(out) || strings.Contains(out, "\x00") || len(out) > store.MaxAttemptExcerpt {
			t.Errorf("CutExcerpt(%.40q) = %.40q (%d bytes): want valid UTF-8 without NUL, at most %d bytes",
				in, out, len(out), store.MaxAttemptExcerpt)
		}
	}
}

// FuzzCutExcerpt: the same, for any input.
func FuzzCutExcerpt(f *testing.F) {
	for _, s := range []string{"", "ok", "caf\xe9", "\x00", strings.Repeat("é", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := store.CutExcerpt(in)
		if !utf8.ValidString(out) || strings.Contains(out, "\x00") || len(out) > store.MaxAttemptExcerpt {
			t.Fatalf("CutExcerpt(%.40q) = %.40q (%d bytes)", in, out, len(out))
		}
	})
}
