package anthropic

import (
	"encoding/json"
	"io"
	"iter"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// Dialect is the Messages client dialect's row: requests read by
// chat.DecodeRequest (the canonical form is Anthropic's), answered by
// EncodeResponse and EncodeStream, errors in Anthropic's
// {"type":"error","error":{"type","message"}}. From an Anthropic
// upstream, its stream's content deltas are forwarded as they came (see
// wire.Forwarder).
func Dialect() wire.Dialect {
	return wire.Dialect{
		Name:   "anthropic",
		Decode: func(body []byte, _ wire.Incoming) (chat.Request, error) { return chat.DecodeRequest(body) },
		Response: func(res chat.Response, out wire.Outgoing) ([]byte, error) {
			return EncodeResponse(res, out.Model, out.ID)
		},
		Stream: func(w io.Writer, out wire.Outgoing, chunks iter.Seq2[chat.Chunk, error]) error {
			return EncodeStream(w, func() {}, out.Model, out.ID, chunks)
		},
		Error:    ErrorBody,
		IDPrefix: "msg_",
		Forward:  forward,
	}
}

// ErrorBody is an error response in Anthropic's shape.
func ErrorBody(e wire.ErrorReply) []byte {
	data, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{e.Type, e.Message}})
	return append(data, '\n')
}
