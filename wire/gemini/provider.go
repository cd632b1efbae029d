package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/ctxkit/ctxkit/wire"
)

// Provider is the Gemini API's row of the provider table: the request
// encoder, POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse
// with the key in x-goog-api-key, the SSE stream decoder and the
// error-body parser.
func Provider() wire.Provider {
	return wire.Provider{
		Name:   "gemini",
		Encode: wire.Stateless(EncodeRequest),
		Upstream: &wire.Upstream{
			Path: func(model string) string {
				return "/v1beta/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse"
			},
			SetHeader: func(h http.Header, key string) {
				h.Set("x-goog-api-key", key)
				h.Set("Accept", "text/event-stream")
			},
			Decode:     DecodeStream,
			ParseError: parseError,
			RateLimit:  func(typ string) bool { return typ == "RESOURCE_EXHAUSTED" },
			Embed:      embedCall(),
			// Gemini matches calls and results by name and order: it
			// checks no ids, and the zero rule keeps them all.
			ToolIDs: wire.ToolIDRule{},
			Unary:   unary(),
		},
	}
}

// parseError reads an error response: {"error":{"code","message",
// "status"}}, which the streaming endpoint may wrap in an array, or the
// {"message"} a proxy before the API may answer.
func parseError(status int, h http.Header, body []byte) wire.APIError {
	e := wire.APIError{Status: status, RetryAfter: h.Get("Retry-After")}
	first := bytes.TrimSpace(body)
	if len(first) > 0 && first[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(first, &arr) == nil && len(arr) > 0 {
			first = arr[0]
		}
	}
	var v struct {
		Error   apiError `json:"error"`
		Message string   `json:"message"`
	}
	if json.Unmarshal(first, &v) == nil {
		e.Message = v.Message
		if e.Message == "" {
			e.Message = v.Error.Message
		}
		if v.Error.Status != "" || v.Error.Code != 0 {
			se := streamError(&v.Error)
			e.Type, e.Retryable = se.Type, se.Retryable
		}
	}
	if e.Message == "" {
		// A body in another shape (a proxy's, another provider's).
		e.Message = wire.Message(body)
	}
	e.Retryable = e.Retryable || wire.RetryableStatus(status)
	return e
}
