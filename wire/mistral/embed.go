package mistral

import (
	"encoding/json"
	"net/http"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// embedCall is Mistral's embedding call: POST {base}/embeddings with
// {"model","input":[texts],"output_dimension"}, answered in OpenAI's shape
// (with an id and completion_tokens beside). Mistral takes text only, and
// no end-user id: user is dropped with a warning.
func embedCall() *wire.EmbedCall {
	return &wire.EmbedCall{
		Encode: func(req wire.EmbedRequest) ([]wire.EmbedPart, []chat.Warning, error) {
			if req.Tokens != nil {
				return nil, nil, &chat.Error{Code: chat.CodeInvalidValue, Path: "input", Msg: "mistral takes text inputs, not token ids"}
			}
			body := struct {
				Model           string   `json:"model"`
				Input           []string `json:"input"`
				OutputDimension int      `json:"output_dimension,omitempty"`
			}{req.Model, req.Texts, req.Dimensions}
			data, err := json.Marshal(body)
			if err != nil {
				return nil, nil, err
			}
			var warns []chat.Warning
			if req.User != "" {
				warns = append(warns, chat.Warnf("user", "mistral takes no end-user id: not sent"))
			}
			return []wire.EmbedPart{{Path: "/embeddings", Body: data, Inputs: len(req.Texts)}}, warns, nil
		},
		Decode: func(part wire.EmbedPart, _ http.Header, body []byte) (wire.Embeddings, error) {
			return openai.DecodeEmbeddings(body, part.Inputs)
		},
	}
}
