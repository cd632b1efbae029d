package gateway_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// TestReviewCountEstimateNeedsNoKey: a token count for a model whose
// upstream has no count call is ctxkit's offline estimate, and nothing is
// sent; it needs no key. Yet the attempt loop picks a key before the
// endpoint says the count is local, so once the provider's one key rests
// after a rate limit (or was refused), the count is a 429 (or 502) for a
// request that would never have gone upstream.
func TestReviewCountEstimateNeedsNoKey(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	o := newFake(t, "429 ra=60")
	srv, _ := gatewayServing(t, `{"providers":[{"name":"o","type":"openai","base_url":"`+o.srv.URL+`","keys":[{"id":"k1","env":"CTXKIT_TEST_RK"}],"models":["o-own"]}]}`, gateway.Options{}, nil)
	if resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"o-own","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 429 {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	resp, body := post(t, srv.URL+"/v1/messages/count_tokens", `{"model":"o-own","messages":[{"role":"user","content":"hello there"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Token-Count") != "estimate" {
		t.Errorf("count while the key rests: %d %s", resp.StatusCode, body)
	}
	if n := len(o.requests()); n != 1 {
		t.Errorf("the upstream got %d requests, want the chat's 1", n)
	}
}
