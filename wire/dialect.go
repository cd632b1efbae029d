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
	// Forward, when not nil, answers a client of the dialect from a
	// stream of its own API (an upstream whose provider row has the
	// dialect's Name) by passing the upstream's events on with only what
	// the gateway changes rewritten, rather than decoding every event and
	// encoding it again. See Forwarder.
	Forward func(out Outgoing, o ForwardOptions) Forwarder
}

// Forwarder passes one upstream stream of a dialect's own API to a client
// of the dialect. Decode reads the upstream's stream and Stream writes the
// client's; the gateway's chunk pipeline runs between them:
//
//	f.Stream(w, pipeline(f.Decode(upstreamBody)))
//
// An event whose meaning for the client is the same once a few of its
// fields are rewritten (a text delta: the response's id and model) is
// written by Decode itself, as it came but for those fields, and its
// chunks are not yielded (but see ForwardOptions.Chunks). Every other
// event (the stream's start and end, usage, stops, errors, tool-call
// starts, anything in doubt) is decoded to chunks as the provider row's
// Decode does, and Stream encodes them as the dialect's Stream does. What
// the client reads is the same either way; the forwarded events only cost
// less.
//
// The pipeline must pass each chunk on as it comes (it may change a
// tool-call start's id, an error, a usage's cost; end the stream after a
// chunk; add an error at the end): Decode forwards an event only while
// Stream has been given every chunk Decode yielded, so that events reach
// the client in order. The forwarded kinds (text, reasoning, tool-call
// argument deltas) must be ones the pipeline passes unchanged.
type Forwarder interface {
	// Decode reads the upstream's stream as the provider row's Decode
	// does, less the chunks of the events it forwards.
	Decode(r io.Reader) iter.Seq2[chat.Chunk, error]
	// Stream writes the client's stream, as the dialect's Stream does,
	// from the chunks of the events Decode did not forward; it returns
	// the first write error, Decode's included.
	Stream(w io.Writer, chunks iter.Seq2[chat.Chunk, error]) error
}

// ForwardOptions tune a Forwarder.
type ForwardOptions struct {
	// Chunks makes Decode yield the chunks of the events it forwards too,
	// for a pipeline that keeps the response (a recorder); Stream then
	// takes them as written.
	Chunks bool
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
