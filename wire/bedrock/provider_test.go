package bedrock_test

import (
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/bedrock"
)

// TestParseError: Bedrock's error bodies read as their message, the type
// its header or body names, and whether to retry.
func TestParseError(t *testing.T) {
	parse := bedrock.Provider().Upstream.ParseError
	for _, c := range []struct {
		name   string
		status int
		header http.Header
		body   string
		want   wire.APIError
	}{
		{"throttled", 429, http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
			`{"message":"Too many requests, please wait before trying again."}`,
			wire.APIError{Status: 429, Type: "ThrottlingException", Message: "Too many requests, please wait before trying again.", Retryable: true}},
		{"body type", 400, http.Header{}, `{"__type":"com.amazon.coral.validate#ValidationException","Message":"bad input"}`,
			wire.APIError{Status: 400, Type: "ValidationException", Message: "bad input"}},
		{"access", 403, http.Header{}, `{"message":"not authorized"}`, wire.APIError{Status: 403, Message: "not authorized"}},
		{"not json", 502, http.Header{}, `<html></html>`, wire.APIError{Status: 502, Retryable: true}},
	} {
		if got := parse(c.status, c.header, []byte(c.body)); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	rl := bedrock.Provider().Upstream.RateLimit
	if !rl("throttlingException") || !rl("ThrottlingException") || rl("modelStreamErrorException") {
		t.Errorf("RateLimit: throttlingException only")
	}
}
