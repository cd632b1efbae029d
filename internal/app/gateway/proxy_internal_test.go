package gateway

import (
	"net/http"
	"testing"
)

// TestNoProxyForPlainHTTP: a plain http upstream is never reached through
// a proxy (the provider's key would cross to it in clear text).
func TestNoProxyForPlainHTTP(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	r, err := http.NewRequest(http.MethodPost, "http://models.invalid/v1/chat/completions", nil)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := httpsProxy(r); u != nil || err != nil {
		t.Fatalf("proxy %v, %v", u, err)
	}
}
