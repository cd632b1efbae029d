package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/view"
)

// Limits on one breadcrumb.
const (
	MaxTitleBytes   = 512
	MaxTextBytes    = 64 << 10 // description, semantic_version
	MaxSchemaBytes  = 512      // schema_name, which is indexed
	MaxTags         = 64
	MaxTagBytes     = 128
	MaxContextBytes = 1 << 20
)

// Prepare validates the content fields of b and puts them in canonical form:
// the context and hints as compact JSON with sorted keys, the tags as a
// sorted set, defaults for visibility and sensitivity; it sets Checksum and
// SizeBytes. Backends call it on every write, so every backend stores the
// same thing and refuses the same input. Errors are *Error with the field.
func Prepare(b *Breadcrumb) error {
	if b.Title == "" {
		return invalid("title", "required")
	}
	for _, f := range []struct {
		name, val string
		max       int
	}{
		{"title", b.Title, MaxTitleBytes},
		{"description", b.Description, MaxTextBytes},
		{"semantic_version", b.SemanticVersion, MaxTextBytes},
		{"schema_name", b.SchemaName, MaxSchemaBytes},
	} {
		if !utf8.ValidString(f.val) {
			return invalid(f.name, "not valid UTF-8")
		}
		if strings.IndexByte(f.val, 0) >= 0 {
			return invalid(f.name, "contains a NUL character")
		}
		if len(f.val) > f.max {
			return invalid(f.name, "%d bytes; the limit is %d", len(f.val), f.max)
		}
	}

	if len(b.Context) == 0 {
		return invalid("context", "required: a JSON object")
	}
	if len(b.Context) > MaxContextBytes {
		return &Error{Code: CodeTooLarge, Path: "context", Msg: "larger than 1 MiB"}
	}
	if !utf8.Valid(b.Context) {
		return invalid("context", "not valid UTF-8")
	}
	var canon []byte
	if canonicalObject(b.Context) {
		// Canonical already: the record gets its own copy, as it
		// gets a new encoding otherwise.
		canon = slices.Clone(b.Context)
	} else {
		doc, err := view.DecodeJSON(b.Context)
		if err != nil {
			return invalid("context", "%v", err)
		}
		if _, ok := doc.(map[string]any); !ok {
			return invalid("context", "must be a JSON object")
		}
		if hasNUL(doc) {
			return invalid("context", "contains a NUL character (\\u0000), which no backend stores")
		}
		if canon, err = canonjson.Append(make([]byte, 0, len(b.Context)), doc); err != nil {
			return invalid("context", "%v", err)
		}
	}
	b.Context = canon
	sum := sha256.Sum256(canon)
	b.Checksum = "sha256:" + hex.EncodeToString(sum[:])

	tags, err := normalizeTags(b.Tags)
	if err != nil {
		return err
	}
	b.Tags = tags

	if h := bytes.TrimSpace(b.LLMHints); len(h) == 0 || bytes.Equal(h, []byte("null")) {
		b.LLMHints = nil
	} else {
		canon, err := prepareHints(h)
		if err != nil {
			return err
		}
		b.LLMHints = canon
	}

	switch b.Visibility {
	case "":
		b.Visibility = Team
	case Team, Private, Public:
	default:
		return invalid("visibility", "%q is not one of public, team, private", b.Visibility)
	}
	switch b.Sensitivity {
	case "":
		b.Sensitivity = Low
	case Low, PII, Secret:
	default:
		return invalid("sensitivity", "%q is not one of low, pii, secret", b.Sensitivity)
	}
	if b.MaxReads < 0 {
		return invalid("max_reads", "must not be negative")
	}
	if b.ExpiresAt != nil {
		t := b.ExpiresAt.UTC().Truncate(time.Microsecond)
		if t.Year() < 1 || t.Year() > 9999 {
			return invalid("expires_at", "year %d is outside 0001..9999", t.Year())
		}
		b.ExpiresAt = &t
	}
	b.SizeBytes = int64(len(b.Context) + len(b.LLMHints) + len(b.Title) + len(b.Description) +
		len(b.SemanticVersion) + len(b.SchemaName))
	for _, t := range b.Tags {
		b.SizeBytes += int64(len(t))
	}
	return nil
}

// prepareHints validates a hints document (h, not empty) and returns its
// canonical form. What it returns is a function of h's bytes alone:
// view.Compile runs with the default Options, whose bounds are constants,
// and reads nothing else (no clock, no environment, no registry that
// changes), and decoding and canonical encoding are pure. So an accepted
// document is remembered in acceptedHints and not compiled again: the
// gateway's records all carry the same hints, and compiling them was
// about a fifth of Prepare's cost. Refused documents are not remembered,
// so input that fails cannot push accepted hints out.
func prepareHints(h []byte) (json.RawMessage, error) {
	if canon, ok := acceptedHints.get(h); ok {
		return canon, nil
	}
	if !utf8.Valid(h) {
		return nil, invalid("llm_hints", "not valid UTF-8")
	}
	if _, err := view.Compile(h); err != nil {
		var ve *view.Error
		if errors.As(err, &ve) && ve.Path != "" {
			return nil, &Error{Code: CodeInvalid, Path: "llm_hints." + ve.Path, Msg: ve.Msg, Err: err}
		}
		return nil, &Error{Code: CodeInvalid, Path: "llm_hints", Msg: err.Error(), Err: err}
	}
	hd, _ := view.DecodeJSON(h)
	if hasNUL(hd) {
		return nil, invalid("llm_hints", "contains a NUL character (\\u0000), which no backend stores")
	}
	canon, err := canonjson.Marshal(hd)
	if err != nil {
		return nil, invalid("llm_hints", "%v", err)
	}
	acceptedHints.put(h, canon)
	return canon, nil
}

// Bounds of acceptedHints. A document larger than hintsCacheMaxEntry is
// compiled every time, so that one large document cannot push out the
// small ones that repeat.
const (
	hintsCacheEntries  = 64
	hintsCacheBytes    = 1 << 20 // hints as given plus canonical form, over all entries
	hintsCacheMaxEntry = 32 << 10
)

// acceptedHints holds hints documents Prepare has accepted, by their bytes
// as given (spaces trimmed), with their canonical form.
var acceptedHints = hintsCache{m: map[string][]byte{}}

// hintsCache is a small set of accepted hints documents, bounded in entries
// and bytes. When it is full an arbitrary entry makes room: the documents
// that repeat are few (a program writes the same hints again and again),
// so whatever is pushed out comes back on its next write.
type hintsCache struct {
	mu    sync.RWMutex
	m     map[string][]byte // hints as given → canonical form
	bytes int               // len(key)+len(value) over m
}

// get returns a copy of h's canonical form: callers own the record they
// prepare and may change it.
func (c *hintsCache) get(h []byte) (json.RawMessage, bool) {
	c.mu.RLock()
	canon, ok := c.m[string(h)]
	c.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return slices.Clone(canon), true
}

func (c *hintsCache) put(h, canon []byte) {
	size := len(h) + len(canon)
	if size > hintsCacheMaxEntry {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[string(h)]; ok {
		return
	}
	for k, v := range c.m {
		if len(c.m) < hintsCacheEntries && c.bytes+size <= hintsCacheBytes {
			break
		}
		delete(c.m, k)
		c.bytes -= len(k) + len(v)
	}
	c.m[string(h)] = slices.Clone(canon)
	c.bytes += size
}

func normalizeTags(tags []string) ([]string, error) {
	set := make(map[string]bool, len(tags))
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		switch {
		case t == "":
			return nil, invalid("tags", "empty tag")
		case len(t) > MaxTagBytes:
			return nil, invalid("tags", "tag of %d bytes; the limit is %d", len(t), MaxTagBytes)
		case !utf8.ValidString(t):
			return nil, invalid("tags", "tag not valid UTF-8")
		case strings.IndexByte(t, 0) >= 0:
			return nil, invalid("tags", "tag contains a NUL character")
		}
		if !set[t] {
			set[t] = true
			out = append(out, t)
		}
	}
	if len(out) > MaxTags {
		return nil, invalid("tags", "%d tags; the limit is %d", len(out), MaxTags)
	}
	sort.Strings(out)
	return out, nil
}

// MergeContext applies patch to context as an RFC 7396 JSON Merge Patch:
// objects merge recursively, a null deletes the member, and any other
// value (arrays included) replaces. patch is a JSON object; a context that
// is not one is replaced by the patch's members. The result is canonical.
func MergeContext(context, patch json.RawMessage) (json.RawMessage, error) {
	base, err := view.DecodeJSON(context)
	if err != nil {
		return nil, invalid("context", "%v", err)
	}
	p, err := view.DecodeJSON(patch)
	if err != nil {
		return nil, invalid("context", "%v", err)
	}
	if _, ok := p.(map[string]any); !ok {
		return nil, invalid("context", "a merge takes a JSON object")
	}
	return canonjson.Marshal(mergePatch(base, p))
}

// mergePatch is RFC 7396's MergePatch(target, patch).
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, _ := target.(map[string]any)
	out := make(map[string]any, len(tm)+len(pm))
	for k, v := range tm {
		out[k] = v
	}
	for k, pv := range pm {
		if pv == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], pv)
	}
	return out
}

// Writable reports whether a may change b: only its own owner's, and a
// private one only by its creator or a curator.
func Writable(a Actor, b *Breadcrumb) bool { return mayWrite(a, b.OwnerID, b.Visibility, b.CreatedBy) }

// mayWrite is the rule of Writable (and of the backends' writableBy SQL)
// on a breadcrumb's owner, visibility and creator.
func mayWrite(a Actor, owner string, v Visibility, createdBy string) bool {
	return owner == a.OwnerID && (v != Private || createdBy == a.AgentID || a.Curator)
}

// hasNUL reports whether a decoded JSON value holds U+0000 in a string or a
// key: PostgreSQL's text and jsonb cannot store it.
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0) >= 0
	case []any:
		for _, x := range v {
			if hasNUL(x) {
				return true
			}
		}
	case map[string]any:
		for k, x := range v {
			if strings.IndexByte(k, 0) >= 0 || hasNUL(x) {
				return true
			}
		}
	}
	return false
}

// canonicalDepth bounds how deep canonicalObject follows a document: a
// deeper one takes Prepare's decoding path, as does anything the check
// does not prove canonical.
const canonicalDepth = 512

// canonicalObject reports whether data is a JSON object already in the
// canonical form Prepare writes, with no NUL character: decoding it and
// encoding it again (view.DecodeJSON, canonjson) would give the same
// bytes back. Then Prepare keeps the bytes as they are, which costs a
// scan instead of a decoded tree and a second encoding: a writer that
// encodes its contexts canonically (the gateway's traffic records) pays
// for the form once. It proves only what it can see at once, and says
// false for the rest (whitespace, unsorted or escaped keys, escapes the
// encoder would not write), which the decoding path canonicalises or
// refuses; false is never wrong, true must be. data must be valid UTF-8.
func canonicalObject(data []byte) bool {
	if len(data) == 0 || data[0] != '{' {
		return false
	}
	c := canonScanner{data: data}
	return c.value(0) && c.i == len(data)
}

// canonScanner reads one canonical JSON value from data[i:].
type canonScanner struct {
	data []byte
	i    int
}

func (c *canonScanner) value(depth int) bool {
	if c.i >= len(c.data) {
		return false
	}
	switch ch := c.data[c.i]; {
	case ch == '{':
		return depth < canonicalDepth && c.object(depth)
	case ch == '[':
		return depth < canonicalDepth && c.array(depth)
	case ch == '"':
		_, ok := c.str()
		return ok
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.number()
	}
	return false
}

func (c *canonScanner) literal(lit string) bool {
	if !bytes.HasPrefix(c.data[c.i:], []byte(lit)) {
		return false
	}
	c.i += len(lit)
	return true
}

// object reads an object whose keys are in strictly increasing order
// (sorted, none twice) and hold no escape: an escaped key's order would
// be that of its decoded text.
func (c *canonScanner) object(depth int) bool {
	c.i++ // {
	var prev []byte
	for first := true; ; first = false {
		if c.i >= len(c.data) {
			return false
		}
		if c.data[c.i] == '}' {
			if !first {
				return false // a comma before it
			}
			c.i++
			return true
		}
		if c.data[c.i] != '"' {
			return false
		}
		key, ok := c.str()
		if !ok || bytes.IndexByte(key, '\\') >= 0 || !first && bytes.Compare(prev, key) >= 0 {
			return false
		}
		prev = key
		if c.i >= len(c.data) || c.data[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value(depth + 1) {
			return false
		}
		if c.i >= len(c.data) {
			return false
		}
		switch c.data[c.i] {
		case ',':
			c.i++
			if c.i < len(c.data) && c.data[c.i] == '}' {
				return false
			}
		case '}':
			c.i++
			return true
		default:
			return false
		}
	}
}

func (c *canonScanner) array(depth int) bool {
	c.i++ // [
	if c.i < len(c.data) && c.data[c.i] == ']' {
		c.i++
		return true
	}
	for {
		if !c.value(depth + 1) {
			return false
		}
		if c.i >= len(c.data) {
			return false
		}
		switch c.data[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string as canonjson.AppendString writes one and returns
// its text between the quotes, escapes as they are: no control
// character, U+2028 or U+2029 written as it is; no escape but those the
// encoder writes (\" \\ \b \f \n \r \t, \u00XX in lower case for the
// other control characters but NUL, which no backend stores, and
// \u2028, \u2029).
func (c *canonScanner) str() ([]byte, bool) {
	c.i++ // "
	start := c.i
	for c.i < len(c.data) {
		ch := c.data[c.i]
		switch {
		case ch == '"':
			s := c.data[start:c.i]
			c.i++
			return s, true
		case ch < 0x20:
			return nil, false
		case ch == '\\':
			if !c.escape() {
				return nil, false
			}
		case ch == 0xe2 && c.i+2 < len(c.data) && c.data[c.i+1] == 0x80 && (c.data[c.i+2] == 0xa8 || c.data[c.i+2] == 0xa9):
			return nil, false // U+2028, U+2029 as they are
		default:
			c.i++
		}
	}
	return nil, false
}

// escape reads one escape at c.i, if the encoder writes it.
func (c *canonScanner) escape() bool {
	if c.i+1 >= len(c.data) {
		return false
	}
	switch c.data[c.i+1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		c.i += 2
		return true
	case 'u':
	default:
		return false
	}
	if c.i+6 > len(c.data) {
		return false
	}
	hex := string(c.data[c.i+2 : c.i+6])
	switch {
	case hex == "2028", hex == "2029":
	case hex[0] == '0' && hex[1] == '0' && (hex[2] == '0' || hex[2] == '1') && isLowerHex(hex[3]):
		ch := (hex[2]-'0')<<4 | fromHex(hex[3])
		if ch == 0 || ch == '\b' || ch == '\f' || ch == '\n' || ch == '\r' || ch == '\t' {
			return false // NUL, or one with a short form
		}
	default:
		return false
	}
	c.i += 6
	return true
}

func isLowerHex(ch byte) bool { return ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f' }

func fromHex(ch byte) byte {
	if ch <= '9' {
		return ch - '0'
	}
	return ch - 'a' + 10
}

// number reads a number as JSON writes one (the decoder keeps it as a
// json.Number, which the encoder writes as it was read):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *canonScanner) number() bool {
	d := c.data
	digits := func() int {
		n := 0
		for c.i < len(d) && d[c.i] >= '0' && d[c.i] <= '9' {
			c.i++
			n++
		}
		return n
	}
	if d[c.i] == '-' {
		c.i++
	}
	switch {
	case c.i < len(d) && d[c.i] == '0':
		c.i++
	case digits() == 0:
		return false
	}
	if c.i < len(d) && d[c.i] == '.' {
		c.i++
		if digits() == 0 {
			return false
		}
	}
	if c.i < len(d) && (d[c.i] == 'e' || d[c.i] == 'E') {
		c.i++
		if c.i < len(d) && (d[c.i] == '+' || d[c.i] == '-') {
			c.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
