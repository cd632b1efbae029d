package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"", 0, ""},
		{"héllo", 2, "h"},  // é is two bytes: not split
		{"héllo", 3, "hé"}, // ends right after é
		{"a€b", 3, "a"},    // € is three bytes
		{"a€b", 4, "a€"},   // ends right after €
		{"😀x", 3, ""},      // a four-byte character at the start
		{"😀x", 4, "😀"},     // the whole character
		{"a\x80\x80\x80\x80\x80", 5, "a\x80\x80\x80\x80"}, // stray bytes: cut at the bound
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestClip(t *testing.T) {
	if got := Clip("short", 10, "…"); got != "short" {
		t.Errorf("Clip of a short string = %q", got)
	}
	if got := Clip("héllo world", 2, "..."); got != "h..." {
		t.Errorf("Clip = %q, want %q", got, "h...")
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("héllo", 2)
	f.Add("😀😀", 5)
	f.Add("a\x80\x80\x80\x80\x80", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Prefix(s, n)
		if len(got) > max(n, 0) && got != s {
			t.Fatalf("Prefix(%q, %d) = %q: longer than the bound", s, n, got)
		}
		if !strings.HasPrefix(s, got) {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q: split a character", s, n, got)
		}
		// Nothing longer would do: the next character does not fit.
		if len(got) < len(s) && utf8.ValidString(s) {
			_, size := utf8.DecodeRuneInString(s[len(got):])
			if len(got)+size <= n {
				t.Fatalf("Prefix(%q, %d) = %q: the next character fits", s, n, got)
			}
		}
	})
}
