package openai_test

import (
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/openai"
)

// TestParseError: the error bodies of OpenAI and of the servers that
// speak its API read as their message, type and whether to retry.
func TestParseError(t *testing.T) {
	parse := openai.Provider().Upstream.ParseError
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   wire.APIError
	}{
		{"openai", 429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			wire.APIError{Status: 429, Type: "requests", Message: "Rate limit reached", Retryable: true}},
		{"code only", 400, `{"error":{"message":"bad tool schema","type":null,"code":"invalid_value"}}`,
			wire.APIError{Status: 400, Type: "invalid_value", Message: "bad tool schema"}},
		{"numeric code", 500, `{"error":{"message":"boom","code":500}}`,
			wire.APIError{Status: 500, Type: "500", Message: "boom", Retryable: true}},
		{"string error", 401, `{"error":"invalid api key"}`,
			wire.APIError{Status: 401, Message: "invalid api key"}},
		{"vllm", 400, `{"object":"error","message":"max_tokens too large","type":"BadRequestError","code":400}`,
			wire.APIError{Status: 400, Type: "BadRequestError", Message: "max_tokens too large"}},
		{"overloaded type", 400, `{"error":{"message":"busy","type":"server_error"}}`,
			wire.APIError{Status: 400, Type: "server_error", Message: "busy", Retryable: true}},
		{"not json", 502, `<html>bad gateway</html>`, wire.APIError{Status: 502, Retryable: true}},
	} {
		if got := parse(c.status, http.Header{}, []byte(c.body)); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := parse(429, http.Header{"Retry-After": {"20"}}, nil); got.RetryAfter != "20" {
		t.Errorf("Retry-After: %+v", got)
	}
}

// TestRateLimit: the stream error types that name a rate limit.
func TestRateLimit(t *testing.T) {
	rl := openai.Provider().Upstream.RateLimit
	for typ, want := range map[string]bool{
		"rate_limit_exceeded": true, "RateLimitError": true, "429": true, "throttling": true,
		"server_error": false, "insufficient_quota": false, "generate_error": false, "500": false, "": false,
	} {
		if got := rl(typ); got != want {
			t.Errorf("RateLimit(%q) = %v", typ, got)
		}
	}
}
