package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGeminiDialect: a client of Google's API shape, its ctxkit token in
// x-goog-api-key, gets generateContent answers and both stream modes from
// an OpenAI-type upstream; failures (a bad token, an unknown method, an
// unknown model) come in Google's error shape.
func TestGeminiDialect(t *testing.T) {
	e, _, headers := gatewayEnv(t)
	tok := e.token("acme", "agent", "subscriber")
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":50}}`

	r := e.do("POST", "/v1beta/models/gpt-x:generateContent", "", body, "x-goog-api-key", tok)
	var res struct {
		Candidates []struct {
			Content struct {
				Role  string
				Parts []struct{ Text string }
			}
			FinishReason string
		}
		UsageMetadata struct{ PromptTokenCount, CandidatesTokenCount int }
	}
	json.Unmarshal(r.body, &res)
	if r.status != 200 || len(res.Candidates) != 1 || res.Candidates[0].Content.Role != "model" || len(res.Candidates[0].Content.Parts) == 0 ||
		res.Candidates[0].Content.Parts[0].Text != "Hello, world" || res.Candidates[0].FinishReason != "STOP" || res.UsageMetadata.PromptTokenCount != 100 {
		t.Fatalf("generateContent: %d %s", r.status, r.body)
	}

	r = e.do("POST", "/v1beta/models/gpt-x:streamGenerateContent?alt=sse", "", body, "x-goog-api-key", tok)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream (sse): %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	text := ""
	for _, line := range strings.Split(string(r.body), "\n") {
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok {
			var c struct {
				Candidates []struct {
					Content struct{ Parts []struct{ Text string } }
				}
			}
			if err := json.Unmarshal([]byte(d), &c); err != nil {
				t.Fatalf("stream (sse) event %q: %v", d, err)
			}
			for _, cd := range c.Candidates {
				for _, p := range cd.Content.Parts {
					text += p.Text
				}
			}
		}
	}
	if text != "Hello, world" {
		t.Fatalf("stream (sse): %q from %s", text, r.body)
	}

	r = e.do("POST", "/v1beta/models/gpt-x:streamGenerateContent", "", body, "x-goog-api-key", tok)
	var arr []json.RawMessage
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || json.Unmarshal(r.body, &arr) != nil || len(arr) == 0 {
		t.Fatalf("stream (JSON array): %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}

	type googleError struct {
		Error struct {
			Code    int
			Message string
			Status  string
		}
	}
	for _, c := range []struct {
		path, token string
		status      int
		want        string
	}{
		{"/v1beta/models/gpt-x:generateContent", "not-a-token", 401, "UNAUTHENTICATED"},
		{"/v1beta/models/gpt-x:countTokens", tok, 404, "NOT_FOUND"},
		{"/v1beta/models/gpt-x", tok, 404, "NOT_FOUND"},
		{"/v1beta/models/no-such-model:generateContent", tok, 404, "NOT_FOUND"},
	} {
		r := e.do("POST", c.path, "", body, "x-goog-api-key", c.token)
		var ge googleError
		json.Unmarshal(r.body, &ge)
		if r.status != c.status || ge.Error.Code != c.status || ge.Error.Status != c.want || ge.Error.Message == "" {
			t.Errorf("POST %s: %d %s, want %d %s", c.path, r.status, r.body, c.status, c.want)
		}
	}
	for _, h := range *headers {
		if h.Get("x-goog-api-key") != "" || h.Get("Authorization") != "Bearer sk-upstream" {
			t.Fatalf("the caller's key reached the upstream: %v", h)
		}
	}
}
