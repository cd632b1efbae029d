package mistral

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// A chat completion response, only the fields ctxkit reads; a choice's
// message has the fields of a stream chunk's delta, and C is the type of
// its content, as in streamChunk.
type unaryResponse[C any] struct {
	Choices []unaryChoice[C] `json:"choices"`
	Usage   *oaicompat.Usage `json:"usage"`
	Error   json.RawMessage  `json:"error"`
}

type unaryChoice[C any] struct {
	Index        int            `json:"index"`
	Message      streamDelta[C] `json:"message"`
	FinishReason string         `json:"finish_reason"`
}

// DecodeResponse reads the body of a non-streamed Mistral chat completion
// as the response DecodeStream makes of the stream of the same answer,
// through chat.Collect: choice 0's message is read as one delta carrying
// all of it (content as a string or an array of content chunks, thinking
// chunks included; tool_calls), finish_reason as the stop, usage as the
// usage, and an error ({"object":"error",…} or an "error" key) as the
// response's Error.
//
// A body that is not a JSON object of that shape is an error naming the
// field at fault; so is one with more than openai.MaxChoices choices, or
// tool calls past the stream's bounds.
func DecodeResponse(body []byte) (chat.Response, error) {
	if !bytes.Contains(body, arrayContent) {
		var r unaryResponse[string]
		err := json.Unmarshal(body, &r)
		if err == nil {
			return collect(&r, body, func(s string) (string, []contentChunk) { return s, nil })
		}
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field != "choices.message.content" {
			return chat.Response{}, oaicompat.BodyError("mistral response", err)
		}
	}
	var r unaryResponse[[]contentChunk]
	if err := json.Unmarshal(body, &r); err != nil {
		return chat.Response{}, oaicompat.BodyError("mistral response", err)
	}
	return collect(&r, body, func(cs []contentChunk) (string, []contentChunk) { return "", cs })
}

// collect reads r, the decoded body, with the stream decoder.
func collect[C any](r *unaryResponse[C], body []byte, content func(C) (string, []contentChunk)) (chat.Response, error) {
	if n := len(r.Choices); n > openai.MaxChoices {
		return chat.Response{}, fmt.Errorf("mistral response: choices: %d choices, more than %d", n, openai.MaxChoices)
	}
	c := streamChunk[C]{Usage: r.Usage, Error: r.Error}
	for i := range r.Choices {
		if ch := &r.Choices[i]; ch.Index == 0 {
			c.Choices = []streamChoice[C]{{Delta: ch.Message, FinishReason: ch.FinishReason}}
			break
		}
	}
	return chat.Collect(chat.Stream(nil, func(yield func(chat.Chunk) bool) error {
		d := decoder{yield: yield, ok: true}
		handle(&d, &c, body, content)
		if err := d.argumentsErr(); err != nil {
			return err
		}
		d.end()
		return nil
	}))
}
