package relay

import (
	"strings"
	"testing"
)

// A keyword's scan (keyword.in) must agree with lower-casing the text and searching it.
func FuzzKeywordIn(f *testing.F) {
	for _, c := range [][2]string{
		{"The KEY is here", "key"}, {"a \u212Aey point", "key"}, {"ÉTÉ chaud", "été"},
		{"nothing \u00e9 to see", "key"}, {"ke", "key"}, {"\xff\xfe bad", "\ufffd"},
		{"İstanbul", "i"}, {"aaaaaaaaab", "aab"}, {"ΣΊΣΥΦΟΣ", "σίσυφος"}, {"x\xed\xa0\x80y", "\ufffd\ufffd"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, s, kw string) {
		kw = strings.ToLower(kw)
		if kw == "" {
			return
		}
		want := strings.Contains(strings.ToLower(s), kw)
		if got := newKeyword(kw).in(s); got != want {
			t.Fatalf("keyword %q in %q = %v, want %v", kw, s, got, want)
		}
		// Each scan, when it finishes within its budget, is right too.
		if isASCII(s) && isASCII(kw) {
			if got, done := containsFoldASCII(s, kw, rarestByte(kw), 1<<30); !done || got != want {
				t.Fatalf("containsFoldASCII(%q, %q) = %v, %v; want %v", s, kw, got, done, want)
			}
		}
		if got, done := containsFoldUnicode(s, kw, 1<<30); !done || got != want {
			t.Fatalf("containsFoldUnicode(%q, %q) = %v, %v; want %v", s, kw, got, done, want)
		}
	})
}

// Text built to make a scan compare at every place gives up on the
// byte-wise scans and still gets the right answer.
func TestKeywordInGivesUp(t *testing.T) {
	// The scan looks for the keyword's rarest letter, a: everywhere.
	s := strings.Repeat("a", 4096)
	kw := strings.Repeat("a", 512) + "e"
	if _, done := containsFoldASCII(s, kw, rarestByte(kw), 4*len(s)+64); done {
		t.Error("the ASCII scan did not give up")
	}
	if _, done := containsFoldUnicode(s+"é", kw, 4*len(s)+64); done {
		t.Error("the Unicode scan did not give up")
	}
	if newKeyword(kw).in(s) || newKeyword(kw).in(s+"é") {
		t.Error("found a keyword that is not there")
	}
	if !newKeyword(kw).in(s+"E") || !newKeyword(kw).in(s+"Eé") {
		t.Error("missed a keyword that is there")
	}
}

func TestPositionValidMatchesPositions(t *testing.T) {
	for _, p := range append(Positions(), "") {
		if !p.Valid() || p.index() < 0 {
			t.Errorf("%q: Valid %v, index %d", p, p.Valid(), p.index())
		}
	}
	for _, p := range []Position{"sytem", "System", " system", "user_prefix "} {
		if p.Valid() || p.index() >= 0 {
			t.Errorf("%q is valid", p)
		}
	}
}
