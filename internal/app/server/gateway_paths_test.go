package server_test

import (
	"strings"
	"testing"
)

// TestGatewayPathsDialectAndAuth: the gateway's paths beyond the chat
// dialects (a model by id, the Gemini model list, a path no route serves)
// take a valid token first, and answer both the 401 and what follows in
// the caller's dialect: OpenAI's by default, Anthropic's for a client
// sending anthropic-version, Google's under /v1beta/. Paths outside the
// gateway keep ctxkit's own shape.
func TestGatewayPathsDialectAndAuth(t *testing.T) {
	e, _, _ := gatewayEnv(t)
	tok := e.token("acme", "agent", "subscriber")
	for _, tc := range []struct {
		method, path, token string
		headers             []string
		status              int
		want                string
	}{
		{"GET", "/v1/files", "", nil, 401, `{"error":{"message":"missing bearer token","type":"authentication_error","param":null,"code":null}}`},
		{"GET", "/v1/files", "", []string{"anthropic-version", "2023-06-01"}, 401, `{"type":"error","error":{"type":"authentication_error","message":"missing bearer token"}}`},
		{"GET", "/v1beta/files", "", nil, 401, `{"error":{"code":401,"message":"missing bearer token","status":"UNAUTHENTICATED"}}`},
		{"GET", "/v1/models/gpt-x", "", nil, 401, `"type":"authentication_error"`},
		{"GET", "/v1beta/models", "", nil, 401, `"status":"UNAUTHENTICATED"`},
		{"GET", "/v1/files", tok, nil, 404, `"code":"unknown_url"`},
		{"DELETE", "/v1/files/x", "", []string{"x-api-key", tok, "anthropic-version", "2023-06-01"}, 404, `{"type":"error","error":{"type":"not_found_error","message":"no such endpoint: DELETE /v1/files/x"}}`},
		{"GET", "/v1beta/files", tok, nil, 404, `"status":"NOT_FOUND"`},
		{"GET", "/v1/messages", tok, nil, 405, `{"type":"error","error":{"type":"invalid_request_error","message":"GET is not allowed on /v1/messages; use POST"}}`},
		{"GET", "/v1/models/gpt-x", tok, nil, 200, `"object":"model"`},
		{"GET", "/v1/models/gpt-x", "", []string{"x-api-key", tok}, 200, `"type":"model"`},
		{"GET", "/v1/models/nope", tok, nil, 404, `"code":"model_not_found"`},
		{"GET", "/v1beta/models/gpt-x", tok, nil, 200, `"name":"models/gpt-x"`},
		{"GET", "/v1beta/models", tok, nil, 200, `"models":[{"name":"models/gpt-x"`},
		{"POST", "/v1/embeddings", tok, nil, 400, `"type":"invalid_request_error"`},
		{"GET", "/nope", tok, nil, 404, `"code":"not_found"`},
	} {
		r := e.do(tc.method, tc.path, tc.token, nil, tc.headers...)
		if r.status != tc.status || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s %s %v: %d %s, want %d %s", tc.method, tc.path, tc.headers, r.status, r.body, tc.status, tc.want)
		}
		if tc.status == 405 && r.header.Get("Allow") != "POST" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, r.header.Get("Allow"))
		}
	}
}
