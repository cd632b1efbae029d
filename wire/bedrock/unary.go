package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// unary is the non-streamed call, POST /model/{modelId}/converse: the
// same request body as ConverseStream, a JSON answer.
func unary() *wire.Unary {
	return &wire.Unary{
		Path: func(model string) string { return "/model/" + url.PathEscape(model) + "/converse" },
		SetHeader: func(h http.Header, key string) {
			h.Set("Authorization", "Bearer "+key)
			h.Set("Accept", "application/json")
		},
		Decode: DecodeResponse,
	}
}

// converseResponse is a Converse response, only the fields ctxkit reads.
type converseResponse struct {
	Output struct {
		Message struct {
			Content []converseBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string      `json:"stopReason"`
	Usage      *eventUsage `json:"usage"`
}

// converseBlock is a ContentBlock of the response's message; blocks of
// other types (citationsContent, images, ...) have none of these set.
type converseBlock struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ReasoningContent *struct {
		ReasoningText struct {
			Text      string `json:"text"`
			Signature string `json:"signature"`
		} `json:"reasoningText"`
		RedactedContent string `json:"redactedContent"`
	} `json:"reasoningContent"`
}

// DecodeResponse reads the body of a Converse response as the response
// DecodeStream makes of the ConverseStream of the same answer, through
// chat.Collect: each block of output.message.content is read as the
// events that stream it (text → text; toolUse → a tool call whose
// arguments are its input, compacted, "{}" when it has none;
// reasoningContent → reasoning with its text and signature, or Redacted;
// other blocks give nothing), stopReason as messageStop's, usage as
// metadata's.
//
// A body that is not a JSON object of that shape is an error naming the
// field at fault; so is one with more than chat.MaxCollectedBlocks
// blocks, or tool calls past DecodeStream's bounds (MaxArguments,
// MaxToolCalls, MaxToolCallBytes).
func DecodeResponse(body []byte) (chat.Response, error) {
	var r converseResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return chat.Response{}, fmt.Errorf("bedrock response: %w", fieldError(err))
	}
	content := r.Output.Message.Content
	if len(content) > chat.MaxCollectedBlocks {
		return chat.Response{}, fmt.Errorf("bedrock response: output.message.content: %d blocks, more than %d", len(content), chat.MaxCollectedBlocks)
	}
	return chat.Collect(chat.Stream(nil, func(yield func(chat.Chunk) bool) error {
		d := streamDecoder{calls: map[int]*toolCall{}}
		for i := range content {
			if !d.block(i, &content[i], yield) {
				return d.err
			}
		}
		if !d.event("messageStop", &streamEvent{StopReason: r.StopReason}, yield) {
			return d.err
		}
		if r.Usage != nil {
			d.event("metadata", &streamEvent{Usage: r.Usage}, yield)
		}
		return d.err
	}))
}

// block emits the chunks of content block i as its stream events would.
func (d *streamDecoder) block(i int, b *converseBlock, yield func(chat.Chunk) bool) bool {
	ev := streamEvent{ContentBlockIndex: i}
	switch {
	case b.Text != nil:
		ev.Delta.Text = *b.Text
	case b.ToolUse != nil:
		tu := b.ToolUse
		ev.Start.ToolUse = &eventToolUse{ToolUseID: tu.ToolUseID, Name: tu.Name}
		if !d.event("contentBlockStart", &ev, yield) {
			return false
		}
		ev.Start.ToolUse = nil
		var in bytes.Buffer
		if json.Compact(&in, tu.Input) == nil && in.String() != "null" {
			ev.Delta.ToolUse.Input = in.String()
		}
	case b.ReasoningContent != nil:
		rc := b.ReasoningContent
		ev.Delta.ReasoningContent.Text = rc.ReasoningText.Text
		ev.Delta.ReasoningContent.Signature = rc.ReasoningText.Signature
		ev.Delta.ReasoningContent.RedactedContent = rc.RedactedContent
	default:
		return true
	}
	return d.event("contentBlockDelta", &ev, yield) && d.event("contentBlockStop", &ev, yield)
}

// fieldError names the field of a type error by its path in the body.
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: a JSON %s where the response has another type", te.Field, te.Value)
	}
	return err
}
