package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// TestUpstreamFailureStatuses: what the provider's row reads in an
// upstream failure decides the client's status and type: a rate limit in
// the stream is a 429 rate_limit_error, a retryable stream error a 503
// overloaded_error, another a 502 api_error; a 429 answer passes its
// Retry-After on.
func TestUpstreamFailureStatuses(t *testing.T) {
	for _, c := range []struct {
		name, event      string
		status           int
		wantStatus       int
		wantType, wantIn string
	}{
		{"stream rate limit", `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`, 0, 429, "rate_limit_error", "slow down"},
		{"stream overload", `{"error":{"message":"busy","type":"server_error"}}`, 0, 503, "overloaded_error", "busy"},
		{"stream other", `{"error":{"message":"no credit","type":"insufficient_quota"}}`, 0, 502, "api_error", "no credit"},
		{"answer 429", `{"error":{"message":"wait","type":"requests"}}`, 429, 429, "rate_limit_error", "upstream up: wait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := oneProvider(t, func(w http.ResponseWriter, r *http.Request) {
				if c.status != 0 {
					w.Header().Set("Retry-After", "9")
					w.WriteHeader(c.status)
					io.WriteString(w, c.event)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: "+c.event+"\n\n")
			})
			resp, body := post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			json.Unmarshal(body, &e)
			if resp.StatusCode != c.wantStatus || e.Type != "error" || e.Error.Type != c.wantType || !strings.Contains(e.Error.Message, c.wantIn) {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
			if ra := resp.Header.Get("Retry-After"); (c.status == 429) != (ra == "9") {
				t.Errorf("Retry-After %q", ra)
			}
		})
	}
}

// TestUpstreamErrorMessageAnyShape: an upstream's error body in another
// provider's shape or a proxy's ({"error":"text"}, an array around
// {"error":{...}}, a string code) still gets its message to the client,
// whatever the provider's type.
func TestUpstreamErrorMessageAnyShape(t *testing.T) {
	srv, ups := setup(t)
	for _, c := range []struct {
		typ, body, want string
	}{
		{gateway.TypeAnthropic, `{"error":"quota used up for this key"}`, "quota used up for this key"},
		{gateway.TypeAnthropic, `[{"error":{"message":"wrapped anthropic"}}]`, "wrapped anthropic"},
		{gateway.TypeBedrock, `{"error":{"message":"proxy says no"}}`, "proxy says no"},
		{gateway.TypeOpenAI, `[{"error":{"message":"wrapped openai"}}]`, "wrapped openai"},
		{gateway.TypeDeepSeek, `[{"error":{"message":"wrapped deepseek"}}]`, "wrapped deepseek"},
		{gateway.TypeMistral, `[{"error":{"message":"wrapped mistral"}}]`, "wrapped mistral"},
		{gateway.TypeGemini, `{"error":"gemini string error"}`, "gemini string error"},
		{gateway.TypeGemini, `{"error":{"code":"400","message":"gemini string code"}}`, "gemini string code"},
	} {
		u := ups[c.typ]
		u.mu.Lock()
		u.status, u.errBody = http.StatusBadRequest, c.body
		u.mu.Unlock()
		resp, body := post(t, srv.URL+"/v1/messages", `{"model":"`+c.typ+`-model","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		json.Unmarshal(body, &e)
		want := "upstream " + c.typ + "-up: " + c.want
		if resp.StatusCode != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.Message != want {
			t.Errorf("%s %s: %d %s, want the message %q", c.typ, c.body, resp.StatusCode, body, want)
		}
	}
}
