package cli

import (
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/secret"
	"github.com/ctxkit/ctxkit/plan"
)

// What `ctxkit scaffold` does to text that came from the model's server
// before it reaches a terminal, standard output or the audit record.

// upstreamText cleans text that came from the upstream (error bodies and
// messages, errors in the stream, decode errors quoting its data, the
// reply's text, the plan) before it reaches a terminal, stdout or the
// record: control characters dropped, the API key redacted. It is made
// once per run from the key.
type upstreamText struct {
	key *secret.Redactor
}

func newUpstreamText(key string) *upstreamText {
	return &upstreamText{key: secret.New(key)}
}

// clean is text fit for a terminal and a log: control characters dropped
// (see printable), then the key replaced by [redacted].
func (t *upstreamText) clean(s string) string { return t.redact(printable(s)) }

// redact replaces every form of the key in s by [redacted].
func (t *upstreamText) redact(s string) string { return t.key.Redact(s) }

// cleanError is err with its message cleaned; it still matches err's
// chain with errors.Is and errors.As.
func (t *upstreamText) cleanError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if c := t.clean(msg); c != msg {
		return &cleanedError{msg: c, err: err}
	}
	return err
}

type cleanedError struct {
	msg string
	err error
}

func (e *cleanedError) Error() string { return e.msg }
func (e *cleanedError) Unwrap() error { return e.err }

// redactRecord replaces the key in every string of rec: the record keeps
// the plan, its outcomes and its commands' output, all of which the
// upstream chose. The strings are otherwise kept as they are (JSON
// escapes control characters).
func (t *upstreamText) redactRecord(rec *plan.Record) {
	if rec == nil {
		return
	}
	redactStrings(reflect.ValueOf(rec).Elem(), t.redact)
}

func redactStrings(v reflect.Value, redact func(string) string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			redactStrings(v.Elem(), redact)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				redactStrings(v.Field(i), redact)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			redactStrings(v.Index(i), redact)
		}
	case reflect.String:
		if s := v.String(); v.CanSet() {
			if r := redact(s); r != s {
				v.SetString(r)
			}
		}
	}
}

// printable is s without the control characters a terminal acts on: C0
// controls but \n and \t (ESC among them), DEL and C1 controls (U+0080 to
// U+009F, CSI among them). Invalid UTF-8 becomes U+FFFD, so that no lone
// byte 0x9B (CSI to a terminal in 8-bit mode) gets through either.
func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, isTerminalControl) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !isTerminalControl(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isTerminalControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// cleanWriter writes text to w cleaned as upstreamText.clean does, also
// when a key or a UTF-8 sequence is cut between two writes: the end that
// could begin either is held until the next write or Flush.
type cleanWriter struct {
	w    io.Writer
	text *upstreamText
	raw  []byte // an incomplete UTF-8 sequence ending the last write
	held string // cleaned text that could begin a form of the key
	last byte   // the last byte written to w, 0 before any
	err  error
}

func newCleanWriter(w io.Writer, text *upstreamText) *cleanWriter {
	return &cleanWriter{w: w, text: text}
}

func (c *cleanWriter) Write(p []byte) (int, error) {
	buf := append(c.raw, p...)
	cut := len(buf) - incompleteRune(buf)
	c.raw = append([]byte(nil), buf[cut:]...)
	s := c.text.redact(c.held + printable(string(buf[:cut])))
	hold := c.text.key.HeldTail(s)
	c.held = s[len(s)-hold:]
	c.emit(s[:len(s)-hold])
	return len(p), c.err
}

// Flush writes what is held.
func (c *cleanWriter) Flush() error {
	s := c.text.redact(c.held + printable(string(c.raw)))
	c.raw, c.held = nil, ""
	c.emit(s)
	return c.err
}

func (c *cleanWriter) emit(s string) {
	if s == "" || c.err != nil {
		return
	}
	_, c.err = io.WriteString(c.w, s)
	c.last = s[len(s)-1]
}

// incompleteRune is the length of the UTF-8 sequence b ends with when it
// is cut short (0 when b ends with a whole rune or invalid bytes).
func incompleteRune(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}
