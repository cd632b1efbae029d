package gemini

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
)

// MaxCandidates bounds the candidates of a response DecodeResponse reads:
// the API's own bound on candidateCount.
const MaxCandidates = 8

// unary is the non-streamed call, models/{model}:generateContent.
func unary() *wire.Unary {
	return &wire.Unary{
		Path: func(model string) string {
			return "/v1beta/models/" + url.PathEscape(model) + ":generateContent"
		},
		SetHeader: func(h http.Header, key string) {
			h.Set("x-goog-api-key", key)
			h.Set("Accept", "application/json")
		},
		Decode: DecodeResponse,
	}
}

// DecodeResponse reads the body of a generateContent response (one
// GenerateContentResponse object) as the response DecodeStream makes of a
// stream whose one chunk is that object, through chat.Collect: candidate
// 0's parts (text, thoughts, thought signatures, function calls),
// usageMetadata, finishReason or promptFeedback.blockReason as the stop,
// and an "error" object as the response's Error. A body with no
// finishReason and no blockReason is read without a stop (a stream would
// be cut; a whole body is not, and the caller decides).
//
// A body that is not a JSON object of that shape is an error naming the
// field at fault; so is one with more than MaxCandidates candidates, more
// than chat.MaxCollectedBlocks parts, or function calls past
// DecodeStream's bounds (MaxToolCalls, MaxToolCallBytes).
func DecodeResponse(body []byte) (chat.Response, error) {
	var resp streamResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return chat.Response{}, fmt.Errorf("gemini response: %w", jsonError(err, 0, 0))
	}
	if n := len(resp.Candidates); n > MaxCandidates {
		return chat.Response{}, fmt.Errorf("gemini response: candidates: %d candidates, more than %d", n, MaxCandidates)
	}
	if len(resp.Candidates) > 0 {
		if n := len(resp.Candidates[0].Content.Parts); n > chat.MaxCollectedBlocks {
			return chat.Response{}, fmt.Errorf("gemini response: candidates[0].content.parts: %d parts, more than %d", n, chat.MaxCollectedBlocks)
		}
	}
	return chat.Collect(chat.Stream(nil, func(yield func(chat.Chunk) bool) error {
		d := &streamDecoder{yield: yield}
		d.response(&resp)
		return d.err
	}))
}
