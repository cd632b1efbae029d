// Package wire holds what ctxkit knows of every wire format in one shape:
// the row each provider package declares for the provider table
// (wire/providers). A row says how a canonical request is encoded, and,
// for a provider ctxkit calls over HTTP, the endpoint path, the headers
// that carry the key, how its stream is decoded and how its error
// responses read. The gateway, `ctxkit convert` and `ctxkit scaffold` use
// the rows, never a switch on the provider's name: adding a provider is
// one package and one row of the table.
package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"net/http"

	"github.com/ctxkit/ctxkit/chat"
)

// Provider is one row of the provider table.
type Provider struct {
	// Name is the format's name: a gateway provider's type and
	// `ctxkit convert --to`.
	Name string
	// Encode converts a canonical request. options is the provider
	// package's Options as JSON (nil: the defaults); state is the cache
	// state a Stateful format kept from the previous turn (nil: none),
	// and newState the state to keep for the next one.
	Encode func(req chat.Request, options json.RawMessage, state []byte) (body any, newState []byte, warns []chat.Warning, err error)
	// Caches are the prompt-caching strategies the Options' "cache"
	// field takes.
	Caches []string
	// Stateful formats keep cache state between turns.
	Stateful bool
	// Upstream is how ctxkit calls the provider; nil for a format ctxkit
	// only converts to.
	Upstream *Upstream
}

// Upstream is how ctxkit calls a provider: its streaming API and, in
// Unary, its non-streamed one.
type Upstream struct {
	// Path is the path, appended to the provider's base URL, of a
	// streamed request for model (query included).
	Path func(model string) string
	// SetHeader sets the headers of a streamed request: the key in the
	// provider's own header, and what the stream is accepted as.
	SetHeader func(h http.Header, key string)
	// Decode reads the provider's stream as chat chunks.
	Decode func(r io.Reader) iter.Seq2[chat.Chunk, error]
	// ParseError reads an error response (status, headers and the
	// start of its body).
	ParseError func(status int, h http.Header, body []byte) APIError
	// RateLimit reports whether the type of an error inside the
	// provider's stream (chat.StreamError.Type) names a rate limit.
	RateLimit func(typ string) bool
	// Embed is the provider's embedding call; nil when it has none.
	Embed *EmbedCall
	// CountTokens is the provider's own count of a request's input
	// tokens; nil when it has none (ctxkit then estimates offline).
	CountTokens *CountCall
	// ToolIDs is the rule for the tool-call ids the provider accepts; the
	// gateway rewrites the others (RewriteToolIDs). The zero rule accepts
	// every id.
	ToolIDs ToolIDRule
	// Unary is how ctxkit asks the provider for a response that is not
	// streamed, for a client that does not stream: the row's Encode
	// writes such a request when chat.Request.Stream is false. Its
	// error responses read as a stream's (ParseError, RateLimit).
	Unary *Unary
}

// Unary is how ctxkit calls a provider for one whole response: a request
// without streaming, answered by one JSON body.
type Unary struct {
	// Path is the path, appended to the provider's base URL, of a
	// request for model (query included).
	Path func(model string) string
	// SetHeader sets the headers of the request: the key in the
	// provider's own header, and what the response is accepted as.
	SetHeader func(h http.Header, key string)
	// Decode reads a response body (whole, its size bounded by the
	// caller) as the response a collected stream would be: the same
	// content, usage and stop as chat.Collect makes of the provider's
	// stream of the same answer. An error the provider put in a body of
	// status 200 is Response.Error, as in a stream; a body that is not
	// the provider's response shape, or that goes past the decoder's
	// bounds, is the error.
	Decode func(body []byte) (chat.Response, error)
}

// APIError is a provider's error response as its parser reads it.
type APIError struct {
	Status int // the HTTP status of the response
	// Type is the provider's error type or code ("rate_limit_error",
	// "RESOURCE_EXHAUSTED", "ThrottlingException"); "" when the body
	// names none.
	Type string
	// Message is the provider's message, or when the provider's own
	// shape has none the one Message finds in the common shapes; "" when
	// the body has none (a proxy's page, say).
	Message string
	// Retryable reports whether the same request may succeed later.
	Retryable bool
	// RetryAfter is the Retry-After header as sent, "" when absent.
	RetryAfter string
}

// Message finds the message of an error body in the shapes providers and
// the proxies before them answer with, whatever the provider: {"message"},
// {"error":{"message"}} or {"error":"text"}, alone or first in an array.
// A row's error parser falls back on it, so that a body in another
// provider's shape still reaches the client with its text; "" when the
// body has none.
func Message(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
			body = arr[0]
		}
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	if v.Message != "" {
		return v.Message
	}
	var inner struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
		return inner.Message
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil {
		return s
	}
	return ""
}

// RetryableStatus reports whether an HTTP status says that the same
// request may succeed later: 408, 429 and 5xx (529 is Anthropic's
// overload).
func RetryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status/100 == 5
}

// Code is the machine-readable kind of an Error.
type Code string

// Codes of Error.
const (
	// CodeOptions: the options JSON does not fit the format's Options.
	CodeOptions Code = "WIRE_OPTIONS"
	// CodeState: the cache state is not the format's.
	CodeState Code = "WIRE_STATE"
)

// Error is a failure of a row's Encode that is not the request's fault
// (those are *chat.Error): its options or its cache state.
type Error struct {
	Code Code
	Path string // where in the options or state the fault is; "" = all of it
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Stateless makes a row's Encode of a package's EncodeRequest that keeps
// no cache state: options are decoded strictly into O (an unknown field is
// a CodeOptions error), and absent or null options are O's zero value.
func Stateless[O any, R any](enc func(chat.Request, O) (R, []chat.Warning, error)) func(chat.Request, json.RawMessage, []byte) (any, []byte, []chat.Warning, error) {
	return func(req chat.Request, options json.RawMessage, _ []byte) (any, []byte, []chat.Warning, error) {
		// The options are decoded in a function of their own: the
		// defaults (the gateway's case) then stay off the heap.
		opts, err := decodeOptions[O](options)
		if err != nil {
			return nil, nil, nil, err
		}
		out, warns, err := enc(req, opts)
		if err != nil {
			return nil, nil, warns, err
		}
		return out, nil, warns, nil
	}
}

func decodeOptions[O any](options json.RawMessage) (O, error) {
	var opts O
	if len(options) == 0 {
		return opts, nil
	}
	err := DecodeOptions(options, &opts)
	return opts, err
}

// DecodeOptions decodes options JSON strictly into opts (an unknown field
// is an error); absent or null options leave opts as it is. The error is
// a CodeOptions *Error.
func DecodeOptions(options json.RawMessage, opts any) error {
	options = bytes.TrimSpace(options)
	if len(options) == 0 || string(options) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(options))
	dec.DisallowUnknownFields()
	if err := dec.Decode(opts); err != nil {
		return &Error{Code: CodeOptions, Msg: err.Error(), Err: err}
	}
	return nil
}
