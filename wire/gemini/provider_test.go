package gemini_test

import (
	"net/http"
	"testing"

	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/gemini"
)

// TestParseError: the Gemini API's error bodies, alone or in the array
// the streaming endpoint answers with, read as their message, status and
// whether to retry.
func TestParseError(t *testing.T) {
	parse := gemini.Provider().Upstream.ParseError
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   wire.APIError
	}{
		{"exhausted", 429, `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}`,
			wire.APIError{Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted", Retryable: true}},
		{"array", 400, `[{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}]`,
			wire.APIError{Status: 400, Type: "INVALID_ARGUMENT", Message: "API key not valid"}},
		{"code only", 500, `{"error":{"code":500,"message":"internal"}}`,
			wire.APIError{Status: 500, Type: "500", Message: "internal", Retryable: true}},
		{"not json", 404, `Not Found`, wire.APIError{Status: 404}},
	} {
		if got := parse(c.status, http.Header{}, []byte(c.body)); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	rl := gemini.Provider().Upstream.RateLimit
	if !rl("RESOURCE_EXHAUSTED") || rl("UNAVAILABLE") {
		t.Errorf("RateLimit: RESOURCE_EXHAUSTED only")
	}
}
