package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
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
