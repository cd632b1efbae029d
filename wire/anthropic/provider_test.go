package anthropic_test

import (
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
)

// TestParseError: the Messages API's error bodies read as their message,
// type and whether to retry.
func TestParseError(t *testing.T) {
	parse := anthropic.Provider().Upstream.ParseError
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   wire.APIError
	}{
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			wire.APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
		{"invalid", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}`,
			wire.APIError{Status: 400, Type: "invalid_request_error", Message: "max_tokens: required"}},
		{"rate limit", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			wire.APIError{Status: 429, Type: "rate_limit_error", Message: "slow down", Retryable: true}},
		{"proxy", 403, `{"message":"forbidden"}`, wire.APIError{Status: 403, Message: "forbidden"}},
		{"not json", 503, `upstream connect error`, wire.APIError{Status: 503, Retryable: true}},
	} {
		if got := parse(c.status, http.Header{}, []byte(c.body)); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	rl := anthropic.Provider().Upstream.RateLimit
	if !rl("rate_limit_error") || rl("overloaded_error") {
		t.Errorf("RateLimit: rate_limit_error only")
	}
}
