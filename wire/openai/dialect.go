package openai

import (
	"encoding/json"
	"io"
	"iter"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/reqjson"
)

// Dialect is the Chat Completions client dialect's row: requests read by
// DecodeRequest, answered by EncodeResponse and EncodeStream, errors in
// OpenAI's {"error":{"message","type","param","code"}}. Its streams carry
// usage only when the request asked for it
// (stream_options.include_usage, kept in chat.Request.StreamUsage), as
// the API's do. From an OpenAI upstream, its stream's text and tool-call
// argument deltas are forwarded as they came (see wire.Forwarder).
func Dialect() wire.Dialect {
	return wire.Dialect{
		Name:   "openai",
		Decode: func(body []byte, _ wire.Incoming) (chat.Request, error) { return DecodeRequest(body) },
		Response: func(res chat.Response, out wire.Outgoing) ([]byte, error) {
			return EncodeResponse(res, out.Model, out.ID, out.Created)
		},
		Stream: func(w io.Writer, out wire.Outgoing, chunks iter.Seq2[chat.Chunk, error]) error {
			withUsage := out.Request != nil && out.Request.StreamUsage
			return encodeStream(w, nil, out.Model, out.ID, out.Created, withUsage, chunks)
		},
		Error:    ErrorBody,
		IDPrefix: "chatcmpl-",
		Forward:  forward,
	}
}

// ErrorBody is an error response in OpenAI's shape, which the Responses
// API shares: {"error":{"message","type","param","code"}}, param and code
// null when the reply has none.
func ErrorBody(e wire.ErrorReply) []byte {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		b.Param = &e.Param
	}
	if e.Code != "" {
		b.Code = &e.Code
	}
	data, _ := json.Marshal(struct {
		Error body `json:"error"`
	}{b})
	return append(data, '\n')
}

// streamOptions reads stream_options: include_usage → StreamUsage;
// include_obfuscation (padding against length side channels) is the
// transport's business and dropped.
func (d *requestDecoder) streamOptions(v json.RawMessage) error {
	f, err := d.object(v, "stream_options", streamOptionKeys...)
	if err != nil {
		return err
	}
	if u := reqjson.Get(f, "include_usage"); !reqjson.IsNull(u) {
		d.r.StreamUsage, err = reqjson.Bool(u, "stream_options.include_usage")
	}
	return err
}
