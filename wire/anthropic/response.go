package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
)

// EncodeResponse writes r (a collected stream, see chat.Collect) as the
// body of a non-streaming Messages API response:
//
//	{"id":id,"type":"message","role":"assistant","model":model,
//	 "content":[...],"stop_reason":...,"stop_sequence":null,"usage":{...}}
//
// Content keeps its blocks in order: text ({"type":"text","text"}, with
// its citations if it has any), thinking ({"type":"thinking","thinking",
// "signature"}, the signature "" when there is none), redacted_thinking
// ({"type":"redacted_thinking","data"}) and tool_use ({"type":"tool_use",
// "id","name","input"}, input {} when empty; an input that is not valid
// JSON is an error). A block of any other type is an error: the API sends
// no other type for a model's own output that ctxkit models, and dropping
// it would lose content.
//
// Usage splits the input as EncodeStream does: input_tokens = Input −
// CacheRead − CacheWrite (0 if negative), cache_creation_input_tokens =
// CacheWrite, cache_read_input_tokens = CacheRead, output_tokens = Output,
// cost_usd = Cost when it is set.
// stop_reason follows EncodeStream's mapping, null when r has no stop (a
// cut stream); stop_sequence is null.
//
// A response that carries an error (r.Error) is not a message: the API
// answers such a request with an error body and status. EncodeResponse
// then returns r.Error (a *chat.StreamError) as its error, and the caller
// writes the API's error body ({"type":"error","error":{"type",
// "message"}}) instead.
func EncodeResponse(r chat.Response, model, id string) ([]byte, error) {
	if r.Error != nil {
		return nil, r.Error
	}
	b := []byte(`{"id":`)
	b = chat.AppendString(b, id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = chat.AppendString(b, model)
	b = append(b, `,"content":[`...)
	for i, bl := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendBlock(b, &bl); err != nil {
			return nil, fmt.Errorf("anthropic: content[%d]: %w", i, err)
		}
	}
	b = append(b, `],"stop_reason":`...)
	if r.Stop.Reason == "" {
		b = append(b, "null"...)
	} else {
		b = chat.AppendString(b, encodeStopReason(r.Stop))
	}
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = appendUsage(b, r.Usage)
	return append(b, '}'), nil
}

// appendError appends the API's error body for e, the data of an error
// event in a stream: {"type":"error","error":{"type","message"}}. An error
// type of another provider becomes api_error when e is retryable and
// invalid_request_error when not, with the original type prefixed to the
// message.
func appendError(b []byte, e *chat.StreamError) []byte {
	typ, msg := e.Type, e.Message
	if !anthropicError(typ) {
		if typ != "" {
			msg = typ + ": " + msg
		}
		typ = errTypeInvalid
		if e.Retryable {
			typ = errTypeAPI
		}
	}
	b = append(b, `{"type":"error","error":{"type":`...)
	b = chat.AppendString(b, typ)
	b = append(b, `,"message":`...)
	b = chat.AppendString(b, msg)
	return append(b, `}}`...)
}

// appendBlock appends a response content block.
func appendBlock(b []byte, bl *chat.Block) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = chat.AppendString(b, bl.Type)
	switch bl.Type {
	case chat.TypeText:
		b = append(b, `,"text":`...)
		b = chat.AppendString(b, bl.Text)
		if len(bl.Citations) > 0 {
			var err error
			if b, err = appendRaw(append(b, `,"citations":`...), bl.Citations); err != nil {
				return nil, fmt.Errorf("citations: %w", err)
			}
		}
	case chat.TypeThinking:
		b = append(b, `,"thinking":`...)
		b = chat.AppendString(b, bl.Thinking)
		b = append(b, `,"signature":`...)
		b = chat.AppendString(b, bl.Signature)
	case chat.TypeRedactedThinking:
		b = append(b, `,"data":`...)
		b = chat.AppendString(b, bl.Data)
	case chat.TypeToolUse:
		b = append(b, `,"id":`...)
		b = chat.AppendString(b, bl.ID)
		b = append(b, `,"name":`...)
		b = chat.AppendString(b, bl.Name)
		b = append(b, `,"input":`...)
		if len(bytes.TrimSpace(bl.Input)) == 0 {
			b = append(b, "{}"...)
		} else {
			var err error
			if b, err = appendRaw(b, bl.Input); err != nil {
				return nil, fmt.Errorf("tool_use %q input: %w", bl.ID, err)
			}
		}
	default:
		return nil, fmt.Errorf("block type %q has no place in a Messages response", bl.Type)
	}
	return append(b, '}'), nil
}

// appendRaw appends a JSON value, checked and compacted.
func appendRaw(b []byte, v json.RawMessage) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return buf.Bytes(), nil
}
