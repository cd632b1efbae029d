// Package secret takes a credential out of text that came back from the
// place it was sent to: a provider or a proxy in front of it may quote
// the key or the Authorization header it was given, in an error body, an
// error inside a stream or anything else it writes.
package secret

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Placeholder stands for the key in redacted text.
const Placeholder = "[redacted]"

// MinKey is the length of the shortest key redacted wherever it appears;
// a shorter one is redacted only as "Bearer KEY", so that a short key
// does not garble the text around it.
const MinKey = 8

// Redactor replaces every form of one key in text: the key as written
// and as a JSON string holds it, alone and after "Bearer " (in any of
// its usual cases). The zero value and nil redact nothing.
type Redactor struct {
	forms    []string // "Bearer KEY" forms first
	replacer *strings.Replacer
}

// New is a redactor of key (one of nothing when key is empty).
func New(key string) *Redactor {
	r := &Redactor{}
	if key == "" {
		return r
	}
	var pairs []string
	add := func(form, with string) {
		for _, f := range []string{form, jsonEscaped(form, true), jsonEscaped(form, false)} {
			if !slices.Contains(r.forms, f) {
				r.forms = append(r.forms, f)
				pairs = append(pairs, f, with)
			}
		}
	}
	for _, bearer := range []string{"Bearer ", "bearer ", "BEARER "} {
		add(bearer+key, bearer+Placeholder)
	}
	if len(key) >= MinKey {
		add(key, Placeholder)
	}
	r.replacer = strings.NewReplacer(pairs...)
	return r
}

// Redact is s with every form of the key replaced by Placeholder.
func (r *Redactor) Redact(s string) string {
	if r == nil || r.replacer == nil {
		return s
	}
	return r.replacer.Replace(s)
}

// HeldTail is the length of the longest end of s that could be the start
// of a form of the key: what a stream of text must hold back until more
// comes, so that a key cut between two pieces is still redacted.
func (r *Redactor) HeldTail(s string) int {
	if r == nil {
		return 0
	}
	held := 0
	for _, f := range r.forms {
		for n := min(len(s), len(f)-1); n > held; n-- {
			if strings.HasSuffix(s, f[:n]) {
				held = n
				break
			}
		}
	}
	return held
}

// jsonEscaped is s as the inside of a JSON string.
func jsonEscaped(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`)
}
