package anthropic

import (
	"fmt"
	"net/http"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// unary is the non-streamed Messages call: the same path and headers as a
// stream, a JSON answer.
func unary() *wire.Unary {
	return &wire.Unary{
		Path: func(string) string { return "/v1/messages" },
		SetHeader: func(h http.Header, key string) {
			h.Set("x-api-key", key)
			h.Set("anthropic-version", apiVersion)
			h.Set("Accept", "application/json")
		},
		Decode: DecodeResponse,
	}
}

// unaryMessage is a Message object, only the fields ctxkit reads; an
// error body ({"type":"error","error":{…}}) fits it too.
type unaryMessage struct {
	Type       kind         `json:"type"`
	Content    []startBlock `json:"content"`
	StopReason *string      `json:"stop_reason"`
	Usage      *usage       `json:"usage"`
	Error      *apiError    `json:"error"`
}

// DecodeResponse reads the body of a non-streamed Messages API response
// (a Message object) as the response DecodeStream makes of the stream of
// the same message, through chat.Collect: each content block is read as a
// content_block_start carrying the whole block (text, thinking with its
// signature, redacted_thinking, tool_use with its input; server tool
// blocks and other types are skipped, as in a stream), usage as
// message_start's, stop_reason as message_delta's. An error object is the
// response's Error.
//
// A body that is not a JSON object of that shape is an error naming the
// field at fault; so is one with more than chat.MaxCollectedBlocks
// content blocks, or tool calls past DecodeStream's bounds (MaxToolCalls,
// MaxToolCallBytes).
func DecodeResponse(body []byte) (chat.Response, error) {
	var m unaryMessage
	if err := parseMessage(body, &m); err != nil {
		return chat.Response{}, oaicompat.BodyError("anthropic response", err)
	}
	if len(m.Content) > chat.MaxCollectedBlocks {
		return chat.Response{}, fmt.Errorf("anthropic response: content: %d blocks, more than %d", len(m.Content), chat.MaxCollectedBlocks)
	}
	return chat.Collect(chat.Stream(nil, func(yield func(chat.Chunk) bool) error {
		d := decoder{yield: yield, blocks: map[int]*openBlock{}}
		if m.Type == kindError || m.Error != nil {
			_, err := d.event(kindError, &event{Error: m.Error})
			return err
		}
		if m.Usage != nil {
			if more, err := d.event(kindMessageStart, &event{Message: &message{Usage: m.Usage}}); !more || err != nil {
				return err
			}
		}
		for i := range m.Content {
			more, err := d.event(kindBlockStart, &event{Index: i, ContentBlock: &m.Content[i]})
			if !more || err != nil {
				return err
			}
			if more, err := d.event(kindBlockStop, &event{Index: i}); !more || err != nil {
				return err
			}
		}
		_, err := d.event(kindMessageDelta, &event{Delta: delta{StopReason: m.StopReason}})
		return err
	}))
}
