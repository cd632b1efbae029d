package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// countCall is the Messages API's token count: POST
// {base}/v1/messages/count_tokens with the request as EncodeRequest made
// it, less the fields that only steer generation (the count refuses them),
// answered {"input_tokens":N}.
func countCall() *wire.CountCall {
	return &wire.CountCall{
		Path:   func(string) string { return "/v1/messages/count_tokens" },
		Body:   countBody,
		Decode: decodeCount,
	}
}

// generationOnly are the request fields count_tokens does not take: they
// change what is generated, not what is read.
var generationOnly = []string{"max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences", "metadata", "service_tier"}

// countBody is encoded without the generation-only fields. Those the
// client gave (all but max_tokens, which the encoder always sets) are
// named in the warnings.
func countBody(encoded []byte) ([]byte, []chat.Warning, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(encoded, &fields); err != nil {
		return nil, nil, fmt.Errorf("the encoded request: %w", err)
	}
	var warns []chat.Warning
	for _, k := range generationOnly {
		if _, ok := fields[k]; !ok {
			continue
		}
		delete(fields, k)
		if k != "max_tokens" {
			warns = append(warns, chat.Warnf(k, "steers generation only: not sent to count_tokens"))
		}
	}
	data, err := json.Marshal(fields)
	return data, warns, err
}

// decodeCount reads {"input_tokens":N}.
func decodeCount(body []byte) (int, error) {
	var v struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, fmt.Errorf("count_tokens answer: %w", err)
	}
	if v.InputTokens == nil || *v.InputTokens < 0 || *v.InputTokens > 1<<40 {
		return 0, fmt.Errorf("count_tokens answer: input_tokens missing or out of range")
	}
	return int(*v.InputTokens), nil
}
