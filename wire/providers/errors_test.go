package providers_test

import (
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// upstream is the upstream side of the row named name.
func upstream(t *testing.T, name string) *wire.Upstream {
	t.Helper()
	p, ok := providers.Lookup(name)
	if !ok || p.Upstream == nil {
		t.Fatalf("%s: no row with an upstream side", name)
	}
	return p.Upstream
}

// TestParseError: each provider's error bodies read as their message,
// type and whether to retry. A row with an upstream side adds its cases
// here. A nil header is sent as an empty one.
func TestParseError(t *testing.T) {
	for _, c := range []struct {
		provider, name string
		status         int
		header         http.Header
		body           string
		want           wire.APIError
	}{
		// The Messages API's {"type":"error","error":{...}}.
		{"anthropic", "overloaded", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			wire.APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
		{"anthropic", "invalid", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}`,
			wire.APIError{Status: 400, Type: "invalid_request_error", Message: "max_tokens: required"}},
		{"anthropic", "rate limit", 429, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			wire.APIError{Status: 429, Type: "rate_limit_error", Message: "slow down", Retryable: true}},
		{"anthropic", "proxy", 403, nil, `{"message":"forbidden"}`, wire.APIError{Status: 403, Message: "forbidden"}},
		{"anthropic", "not json", 503, nil, `upstream connect error`, wire.APIError{Status: 503, Retryable: true}},

		// The Gemini API's {"error":{...}}, alone or in the array the
		// streaming endpoint answers with.
		{"gemini", "exhausted", 429, nil, `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}`,
			wire.APIError{Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted", Retryable: true}},
		{"gemini", "array", 400, nil, `[{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}]`,
			wire.APIError{Status: 400, Type: "INVALID_ARGUMENT", Message: "API key not valid"}},
		{"gemini", "code only", 500, nil, `{"error":{"code":500,"message":"internal"}}`,
			wire.APIError{Status: 500, Type: "500", Message: "internal", Retryable: true}},
		{"gemini", "not json", 404, nil, `Not Found`, wire.APIError{Status: 404}},

		// OpenAI's and the servers that speak its API.
		{"openai", "openai", 429, nil, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			wire.APIError{Status: 429, Type: "requests", Message: "Rate limit reached", Retryable: true}},
		{"openai", "code only", 400, nil, `{"error":{"message":"bad tool schema","type":null,"code":"invalid_value"}}`,
			wire.APIError{Status: 400, Type: "invalid_value", Message: "bad tool schema"}},
		{"openai", "numeric code", 500, nil, `{"error":{"message":"boom","code":500}}`,
			wire.APIError{Status: 500, Type: "500", Message: "boom", Retryable: true}},
		{"openai", "string error", 401, nil, `{"error":"invalid api key"}`,
			wire.APIError{Status: 401, Message: "invalid api key"}},
		{"openai", "vllm", 400, nil, `{"object":"error","message":"max_tokens too large","type":"BadRequestError","code":400}`,
			wire.APIError{Status: 400, Type: "BadRequestError", Message: "max_tokens too large"}},
		{"openai", "overloaded type", 400, nil, `{"error":{"message":"busy","type":"server_error"}}`,
			wire.APIError{Status: 400, Type: "server_error", Message: "busy", Retryable: true}},
		{"openai", "not json", 502, nil, `<html>bad gateway</html>`, wire.APIError{Status: 502, Retryable: true}},
		{"openai", "retry after", 429, http.Header{"Retry-After": {"20"}}, ``,
			wire.APIError{Status: 429, Retryable: true, RetryAfter: "20"}},

		// Bedrock's: the type in its header or its body.
		{"bedrock", "throttled", 429, http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
			`{"message":"Too many requests, please wait before trying again."}`,
			wire.APIError{Status: 429, Type: "ThrottlingException", Message: "Too many requests, please wait before trying again.", Retryable: true}},
		{"bedrock", "body type", 400, nil, `{"__type":"com.amazon.coral.validate#ValidationException","Message":"bad input"}`,
			wire.APIError{Status: 400, Type: "ValidationException", Message: "bad input"}},
		{"bedrock", "access", 403, nil, `{"message":"not authorized"}`, wire.APIError{Status: 403, Message: "not authorized"}},
		{"bedrock", "not json", 502, nil, `<html></html>`, wire.APIError{Status: 502, Retryable: true}},

		// Mistral's own shape.
		{"mistral", "own shape", 400, nil, `{"object":"error","message":"Invalid model: x","type":"invalid_model","param":null,"code":"1500"}`,
			wire.APIError{Status: 400, Type: "invalid_model", Message: "Invalid model: x"}},

		// Bodies in another provider's or a proxy's shape: the row's
		// parser finds no message of its own, wire.Message finds it.
		{"anthropic", "string error", 400, nil, `{"error":"quota used up for this key"}`,
			wire.APIError{Status: 400, Message: "quota used up for this key"}},
		{"anthropic", "array", 400, nil, `[{"error":{"message":"wrapped anthropic"}}]`,
			wire.APIError{Status: 400, Message: "wrapped anthropic"}},
		{"bedrock", "error object", 400, nil, `{"error":{"message":"proxy says no"}}`,
			wire.APIError{Status: 400, Message: "proxy says no"}},
		{"bedrock", "string error", 429, nil, `{"error":"slow down"}`,
			wire.APIError{Status: 429, Message: "slow down", Retryable: true}},
		{"openai", "array", 400, nil, `[{"error":{"message":"wrapped openai","type":"invalid_request_error"}}]`,
			wire.APIError{Status: 400, Message: "wrapped openai"}},
		{"deepseek", "array", 400, nil, `[{"error":{"message":"wrapped deepseek"}}]`,
			wire.APIError{Status: 400, Message: "wrapped deepseek"}},
		{"mistral", "array", 400, nil, `[{"error":{"message":"wrapped mistral"}}]`,
			wire.APIError{Status: 400, Message: "wrapped mistral"}},
		{"gemini", "string error", 400, nil, `{"error":"gemini string error"}`,
			wire.APIError{Status: 400, Message: "gemini string error"}},
		{"gemini", "string code", 400, nil, `{"error":{"code":"400","message":"gemini string code"}}`,
			wire.APIError{Status: 400, Message: "gemini string code"}},
		{"gemini", "array string error", 503, nil, `[{"error":"gemini busy"}]`,
			wire.APIError{Status: 503, Message: "gemini busy", Retryable: true}},
		// Only the first element of an array is read, and only one
		// array deep, as the gateway always has.
		{"gemini", "nested array", 400, nil, `[[{"error":{"message":"too deep"}}]]`, wire.APIError{Status: 400}},
		{"openai", "second element", 400, nil, `[{},{"error":{"message":"second"}}]`, wire.APIError{Status: 400}},
	} {
		h := c.header
		if h == nil {
			h = http.Header{}
		}
		if got := upstream(t, c.provider).ParseError(c.status, h, []byte(c.body)); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.provider, c.name, got, c.want)
		}
	}
}

// TestRateLimit: the stream error types each provider's rate limits have,
// and ones near them that are not.
func TestRateLimit(t *testing.T) {
	for _, c := range []struct {
		provider, typ string
		want          bool
	}{
		{"anthropic", "rate_limit_error", true},
		{"anthropic", "overloaded_error", false},

		{"gemini", "RESOURCE_EXHAUSTED", true},
		{"gemini", "UNAVAILABLE", false},

		{"openai", "rate_limit_exceeded", true},
		{"openai", "RateLimitError", true},
		{"openai", "429", true},
		{"openai", "throttling", true},
		{"openai", "server_error", false},
		{"openai", "insufficient_quota", false},
		{"openai", "generate_error", false},
		{"openai", "500", false},
		{"openai", "", false},

		{"bedrock", "throttlingException", true},
		{"bedrock", "ThrottlingException", true},
		{"bedrock", "modelStreamErrorException", false},
	} {
		if got := upstream(t, c.provider).RateLimit(c.typ); got != c.want {
			t.Errorf("%s RateLimit(%q) = %v", c.provider, c.typ, got)
		}
	}
}
