package store

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// wordsGrown is Words as it was before it made its slice at once: the
// slice grown word by word, nil for no words.
func wordsGrown(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, word(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, word(s[start:]))
	}
	return out
}

// FuzzWords: Words splits any text into the same words, in the same
// order, as the slice grown word by word did; no words is nil.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"", " ,; ", "a", "Hello, World 42", "ÉTÉ straße İstanbul ǅ", "x\xffy\xc3", "\u0660\u0661 ١٢",
		strings.Repeat("ab ", 1500), strings.Repeat("z", 3*MaxWordBytes), "\u00a0\u2000a\u3000b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := Words(s), wordsGrown(s)
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("Words(%q) = %q, want %q", s, got, want)
		}
	})
}
