package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/ctxkit/ctxkit/wire"
)

// apiVersion is the Messages API version ctxkit's encoder and decoder
// follow.
const apiVersion = "2023-06-01"

// Provider is the Anthropic Messages API's row of the provider table:
// the request encoder, POST {base}/v1/messages with the key in x-api-key,
// the SSE stream decoder and the error-body parser.
func Provider() wire.Provider {
	return wire.Provider{
		Name:   "anthropic",
		Encode: wire.Stateless(EncodeRequest),
		Caches: []string{CacheAnthropic},
		Upstream: &wire.Upstream{
			Path: func(string) string { return "/v1/messages" },
			SetHeader: func(h http.Header, key string) {
				h.Set("x-api-key", key)
				h.Set("anthropic-version", apiVersion)
				h.Set("Accept", "text/event-stream")
			},
			Decode:      DecodeStream,
			ParseError:  parseError,
			RateLimit:   func(typ string) bool { return typ == errTypeRateLimit },
			CountTokens: countCall(),
			// tool_use.id and tool_result.tool_use_id must match
			// ^[a-zA-Z0-9_-]+$; a made id looks like the API's own.
			ToolIDs: wire.ToolIDRule{Alphabet: wire.IDWord, MinLen: 1, Prefix: "toolu_", Len: 30},
			Unary:   unary(),
		},
	}
}

// parseError reads an error response: {"type":"error","error":{"type",
// "message"}}, or the {"message"} a proxy before the API may answer.
func parseError(status int, h http.Header, body []byte) wire.APIError {
	e := wire.APIError{Status: status, RetryAfter: h.Get("Retry-After")}
	var v struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &v) == nil {
		e.Type, e.Message = v.Error.Type, v.Message
		if e.Message == "" {
			e.Message = v.Error.Message
		}
	}
	if e.Message == "" {
		// A body in another shape (a proxy's, another provider's).
		e.Message = wire.Message(body)
	}
	e.Retryable = wire.RetryableStatus(status) || retryable(e.Type)
	return e
}
