package relay

import (
	"fmt"
	"strconv"
	"strings"
)

// Code is a relay error's code, one of the constants below. Its values
// (RELAY_*) are documented wire values.
type Code string

// Error codes are stable and machine-readable: the server puts them in API
// errors and scripts match on them.
const (
	// CodeTransformFailed: a transformer returned an error, panicked, or
	// returned invalid prompts.
	CodeTransformFailed Code = "RELAY_TRANSFORM_FAILED"
	// CodeInvalidPrompt: a prompt is not valid (missing ID or content,
	// unknown position, duplicate ID, malformed condition, ...).
	CodeInvalidPrompt Code = "RELAY_INVALID_PROMPT"
	// CodeInvalidContext: a relay context that is not valid JSON or has a
	// field of the wrong type or an unknown field.
	CodeInvalidContext Code = "RELAY_INVALID_CONTEXT"
	// CodeInvalidPipeline: a pipeline file that does not parse, names an
	// unknown transformer type or setting, or has a setting out of range.
	CodeInvalidPipeline Code = "RELAY_INVALID_PIPELINE"
	// CodeTooLarge: an input past one of the Limits, or text that would
	// grow past them (expanded {{variables}}, an injector's template).
	CodeTooLarge Code = "RELAY_TOO_LARGE"
	// CodeCancelled: the relay's context ended (cancelled, or past its
	// deadline) before the relay was done. errors.Is(err,
	// context.Canceled) or context.DeadlineExceeded says which.
	CodeCancelled Code = "RELAY_CANCELLED"
)

// ErrTransformFailed matches (with errors.Is) every error of code
// CodeTransformFailed.
var ErrTransformFailed error = &Error{Code: CodeTransformFailed}

// Error is a relay error with the place at fault.
type Error struct {
	Code Code // one of the Code constants
	// Transformer names the transformer that failed (CodeTransformFailed,
	// or CodeCancelled when it was stopped), as its Name says; Targets are
	// the target agents it applies to under ForTargets; Step is its index
	// in the list of transformers.
	Transformer string
	Targets     []string
	Step        int
	// Path is where the fault is in the input: "prompts[3].position",
	// "transformers[1].keywords", "memory"; empty for the input as a whole.
	Path string
	Msg  string // what is wrong, in words that say what to fix
	Err  error  // the underlying cause, if any
}

func (e *Error) Error() string {
	s := ""
	if e.Transformer != "" {
		s = "transformers[" + strconv.Itoa(e.Step) + "] (" + e.Transformer
		if len(e.Targets) > 0 {
			s += "@" + strings.Join(e.Targets, ",")
		}
		s += "): "
	}
	if e.Path != "" {
		s += e.Path + ": "
	}
	return s + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports a match on Code (and, when the target names one, on the
// transformer's name, which has no targets in it): errors.Is(err, relay.ErrTransformFailed) or
// errors.Is(err, &relay.Error{Code: relay.CodeTransformFailed, Transformer: "token_budget"}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != "" && t.Code == e.Code && (t.Transformer == "" || t.Transformer == e.Transformer)
}

func errorf(code Code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Msg: fmt.Sprintf(format, args...)}
}
