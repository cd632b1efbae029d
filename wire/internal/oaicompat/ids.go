package oaicompat

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// IDMode names a tool-call id normaliser.
type IDMode string

// Tool-call id normalisers.
//
//   - IDsAsIs ("") keeps ids as they are.
//   - IDsSanitize ("sanitize") makes ids OpenAI accepts everywhere: at most
//     40 characters of [A-Za-z0-9_-]. A valid id is kept; otherwise every
//     other byte becomes "_", and an id longer than 40 is cut to 31
//     characters followed by "_" and 8 hex digits of the SHA-256 of the
//     original.
//   - IDsAlnum9 ("alnum9") makes ids of exactly 9 characters of
//     [A-Za-z0-9], as Mistral wants: an id of that shape is kept, any
//     other is the first 9 base-62 digits of its SHA-256.
//
// Different ids always map to different ids: when a new id maps to one an
// earlier id already has, it is derived again from a hash of the id and a
// counter until it is free. Ids are mapped in the order they occur in the
// request, so the result is deterministic.
const (
	IDsAsIs     IDMode = ""
	IDsSanitize IDMode = "sanitize"
	IDsAlnum9   IDMode = "alnum9"
)

// IDMap maps tool-call ids consistently: the same id always maps to the
// same id, different ids to different ones. A nil *IDMap keeps ids.
type IDMap struct {
	mode IDMode
	to   map[string]string // source id -> wire id
	used map[string]bool   // wire ids given out
}

// NewIDMap is a map for mode; nil for IDsAsIs.
func NewIDMap(mode IDMode) (*IDMap, error) {
	switch mode {
	case IDsAsIs:
		return nil, nil
	case IDsSanitize, IDsAlnum9:
		return &IDMap{mode: mode, to: map[string]string{}, used: map[string]bool{}}, nil
	}
	return nil, fmt.Errorf("options.tool_call_ids: %q is not one of %q, %q", mode, IDsSanitize, IDsAlnum9)
}

// Map is the wire id for id.
func (m *IDMap) Map(id string) string {
	if m == nil {
		return id
	}
	if out, ok := m.to[id]; ok {
		return out
	}
	out := m.candidate(id, 0)
	for n := 1; m.used[out]; n++ {
		out = m.candidate(id, n)
	}
	m.to[id] = out
	m.used[out] = true
	return out
}

// candidate is the n-th try for id: n = 0 keeps a valid id.
func (m *IDMap) candidate(id string, n int) string {
	if m.mode == IDsAlnum9 {
		if n == 0 && isAlnum9(id) {
			return id
		}
		sum := digest(id, n)
		const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		b := make([]byte, 9)
		for i := range b {
			b[i] = digits[sum[i]%62]
		}
		return string(b)
	}
	if n == 0 && isSafe(id) {
		return id
	}
	b := []byte(id)
	for i, c := range b {
		if !safeByte(c) {
			b[i] = '_'
		}
	}
	if n == 0 && len(b) > 0 && len(b) <= 40 {
		return string(b)
	}
	if len(b) > 31 {
		b = b[:31]
	}
	sum := digest(id, n)
	return string(b) + "_" + hex.EncodeToString(sum[:4])
}

func digest(id string, n int) [32]byte {
	if n == 0 {
		return sha256.Sum256([]byte(id))
	}
	return sha256.Sum256([]byte(id + "\x00" + strconv.Itoa(n)))
}

func isAlnum9(id string) bool {
	if len(id) != 9 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func isSafe(id string) bool {
	if id == "" || len(id) > 40 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !safeByte(id[i]) {
			return false
		}
	}
	return true
}

func safeByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-'
}
