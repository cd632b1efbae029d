package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/internal/oaicompat"
)

// Provider is OpenAI Chat Completions' row of the provider table: the
// request encoder, POST {base}/chat/completions with the key as a bearer
// token, the SSE stream decoder and the error-body parser.
func Provider() wire.Provider {
	return wire.Provider{
		Name:     "openai",
		Encode:   wire.Stateless(EncodeRequest),
		Caches:   []string{CacheOpenRouter, CacheGeminiEvery},
		Upstream: withEmbed(CompatibleUpstream()),
	}
}

// CompatibleUpstream is the upstream side of a server that speaks the
// Chat Completions API (OpenAI's and the OpenAI-compatible ones: DeepSeek,
// vLLM, OpenRouter ...): the path, the bearer key, the SSE decoder and
// the error parser, for a row to reuse.
func CompatibleUpstream() *wire.Upstream {
	return &wire.Upstream{
		Path:       func(string) string { return "/chat/completions" },
		SetHeader:  bearer,
		Decode:     DecodeStream,
		ParseError: parseError,
		RateLimit:  rateLimit,
		ToolIDs:    ToolIDs(),
		Unary:      compatibleUnary(),
	}
}

// ToolIDs is the rule for OpenAI's tool-call ids: Chat Completions
// refuses an id (tool_calls[].id, tool_call_id) longer than 40 characters
// with string_above_max_length, and an empty one; any characters are
// taken. An id it would refuse becomes "call_" and 24 base-62 digits, the
// shape of OpenAI's own ids. The Responses API's call_id follows the same
// rule.
func ToolIDs() wire.ToolIDRule {
	return wire.ToolIDRule{MinLen: 1, MaxLen: 40, Prefix: "call_", Len: 29}
}

func bearer(h http.Header, key string) {
	h.Set("Authorization", "Bearer "+key)
	h.Set("Accept", "text/event-stream")
}

// parseError reads an error response of a Chat Completions server:
// OpenAI's {"error":{"message","type","code"}}, the {"message","type"} of
// the compatible servers that answer in their own shape (vLLM, Mistral),
// or {"error":"message"}.
func parseError(status int, h http.Header, body []byte) wire.APIError {
	e := wire.APIError{Status: status, RetryAfter: h.Get("Retry-After")}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &v) == nil {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil:
		case json.Unmarshal(v.Error, &s) == nil:
			inner.Message = s
		}
		e.Message = v.Message
		if e.Message == "" {
			e.Message = inner.Message
		}
		e.Type = firstNonEmpty(inner.Type, code(inner.Code), v.Type, code(v.Code))
	}
	if e.Message == "" {
		// A body in another shape (a proxy's, another provider's).
		e.Message = wire.Message(body)
	}
	e.Retryable = wire.RetryableStatus(status) || oaicompat.Retryable(e.Type)
	return e
}

// code is an error code given as a string or a number ("" for null).
func code(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// rateLimit: OpenAI's rate limits are typed or coded rate_limit_exceeded
// (the compatible servers write rate_limit, ratelimit, throttling or 429).
func rateLimit(typ string) bool {
	t := strings.ToLower(typ)
	if n, err := strconv.Atoi(t); err == nil {
		return n == http.StatusTooManyRequests
	}
	return strings.Contains(t, "rate_limit") || strings.Contains(t, "ratelimit") || strings.Contains(t, "rate limit") || strings.Contains(t, "throttl")
}
