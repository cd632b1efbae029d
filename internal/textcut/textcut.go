// Package textcut shortens text for messages, excerpts and labels without
// splitting a character: the one rule for every place ctxkit quotes the
// start of a longer string.
package textcut

import "unicode/utf8"

// Prefix is the longest start of s that is at most n bytes long and does
// not end inside a UTF-8 encoded character. It is s itself when s is no
// longer than n, and "" when n <= 0. Bytes that are not valid UTF-8 are
// kept as they are: Prefix only never adds a broken character of its own.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	// A character is at most utf8.UTFMax bytes: look back no further, so
	// a run of stray continuation bytes is cut where the bound says.
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// Clip is Prefix of s followed by mark when s was longer than n bytes (the
// mark is not counted in n), and s unchanged otherwise.
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + mark
}
