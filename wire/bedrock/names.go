package bedrock

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// maxIdent is the longest tool name or tool use id Bedrock takes.
const maxIdent = 64

// validIdent reports whether s matches Bedrock's pattern for tool names
// and tool use ids: [a-zA-Z0-9_-]{1,64}.
func validIdent(s string) bool {
	if s == "" || len(s) > maxIdent {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !identByte(s[i]) {
			return false
		}
	}
	return true
}

func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// renamer maps identifiers that break Bedrock's pattern to ones that keep
// it. Valid identifiers map to themselves; distinct identifiers always map
// to distinct results, so a tool use and its result stay paired and two
// calls never share an id.
type renamer struct {
	m map[string]string // invalid identifier -> replacement; nil when none
}

// newRenamer builds the mapping for idents, given in order of first
// appearance (repeats allowed). The result depends only on that list.
func newRenamer(idents []string) renamer {
	var r renamer
	taken := map[string]bool{}
	for _, s := range idents {
		if validIdent(s) {
			taken[s] = true
		}
	}
	for _, s := range idents {
		if validIdent(s) {
			continue
		}
		if _, done := r.m[s]; done {
			continue
		}
		if r.m == nil {
			r.m = map[string]string{}
		}
		cand := cleanIdent(s)
		for n := 0; cand == "" || len(cand) > maxIdent || taken[cand]; n++ {
			cand = hashed(s, n)
		}
		taken[cand] = true
		r.m[s] = cand
	}
	return r
}

// get is the Bedrock spelling of s.
func (r renamer) get(s string) string {
	if v, ok := r.m[s]; ok {
		return v
	}
	return s
}

// cleanIdent replaces every character outside [a-zA-Z0-9_-] by '_'.
func cleanIdent(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0x80 && identByte(byte(r)) {
			b.WriteByte(byte(r))
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// hashed is the cleaned identifier cut to leave room for "_" and eight hex
// digits of a hash of the original (salted by n after a collision).
func hashed(s string, n int) string {
	key := s
	if n > 0 {
		key += "\x00" + strconv.Itoa(n)
	}
	sum := sha256.Sum256([]byte(key))
	suffix := "_" + hex.EncodeToString(sum[:4])
	base := cleanIdent(s)
	if len(base) > maxIdent-len(suffix) {
		base = base[:maxIdent-len(suffix)]
	}
	return base + suffix
}

// maxDocName is the longest document name Bedrock takes.
const maxDocName = 200

// docName makes a document name Bedrock accepts from a title: ASCII
// letters and digits, hyphens, parentheses and square brackets are kept,
// a run of whitespace becomes one space, any other character becomes a
// hyphen; leading and trailing spaces are trimmed and the name is cut to
// 200 bytes.
func docName(title string) string {
	var b strings.Builder
	b.Grow(len(title))
	space := false
	for _, r := range title {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
			space = true
			continue
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '-' || r == '(' || r == ')' || r == '[' || r == ']'):
		default:
			r = '-'
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	name := b.String()
	if len(name) > maxDocName {
		name = strings.TrimRight(name[:maxDocName], " ")
	}
	return name
}
