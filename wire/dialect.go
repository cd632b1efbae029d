package wire

import (
	"io"
	"iter"
	"net/url"

	"github.com/ctxkit/ctxkit/chat"
)

// Dialect is a client dialect: an API shape a client of the gateway
// speaks (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
// Gemini generateContent). Each dialect's package declares its row; the
// gateway decodes a client's request with it, routes the canonical
// request to any upstream, and answers with it.
type Dialect struct {
	// Name is the dialect's name: "anthropic", "openai", "responses",
	// "gemini".
	Name string
	// Decode reads a request body of the dialect. in is what the
	// request says outside its body (Gemini's model and stream mode are
	// in the path). Fields of the body that have no canonical meaning
	// are kept in chat.Request.Extra under the dialect's own names.
	Decode func(body []byte, in Incoming) (chat.Request, error)
	// Response is the body of a collected, non-streamed response.
	Response func(res chat.Response, out Outgoing) ([]byte, error)
	// Stream writes chunks as the dialect's stream, event by event; the
	// gateway flushes what was written whenever it waits for the
	// upstream.
	Stream func(w io.Writer, out Outgoing, chunks iter.Seq2[chat.Chunk, error]) error
	// StreamType is the Content-Type of a stream (nil:
	// "text/event-stream").
	StreamType func(in Incoming) string
	// Error is the body of an error response in the dialect's shape.
	Error func(e ErrorReply) []byte
	// IDPrefix starts the ids the gateway gives responses ("msg_",
	// "chatcmpl-").
	IDPrefix string
}

// Incoming is what a request says outside its body.
type Incoming struct {
	Model  string     // from the path, "" when the body names it
	Stream bool       // the path asks for a stream
	Query  url.Values // the request's query
}

// Outgoing is what a response is written for.
type Outgoing struct {
	Incoming
	// Request is the client's request as Decode read it.
	Request *chat.Request
	Model   string // the model the client asked for
	ID      string // the response's id
	Created int64  // unix seconds
}

// ErrorReply is an error response, in the vocabulary the dialects share.
type ErrorReply struct {
	Status int
	// Type is the error's kind in Anthropic's vocabulary, which the
	// gateway speaks: invalid_request_error, not_found_error,
	// rate_limit_error, overloaded_error, api_error,
	// authentication_error, request_too_large.
	Type string
	// Code is a finer code where there is one ("unsupported_field"),
	// for the dialects whose shape has one.
	Code string
	// Param is the request field at fault, for the dialects whose shape
	// has one.
	Param   string
	Message string
}
