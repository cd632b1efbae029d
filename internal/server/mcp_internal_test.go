package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestMCPOriginOffLoopback: on a listener that is not loopback (no traffic
// is sent: the listener's address is only put in the request's context),
// the one origin trusted without configuration is the one the request names
// in Host; loopback origins are not, since the page could be anyone's.
func TestMCPOriginOffLoopback(t *testing.T) {
	s := &Server{}
	for _, tc := range []struct {
		host, origin string
		ok           bool
	}{
		{"ctx.example:8700", "http://ctx.example:8700", true},
		{"CTX.example:8700", "http://ctx.EXAMPLE:8700", true},
		{"ctx.example", "https://ctx.example", true},
		{"ctx.example", "https://ctx.example:443", true},
		{"ctx.example:443", "https://ctx.example", true},
		{"ctx.example", "http://ctx.example:80", true},
		{"ctx.example:8700", "http://ctx.example:8701", false},
		{"ctx.example:8700", "http://ctx.example", false},
		{"ctx.example:8700", "http://evil.example:8700", false},
		{"ctx.example:8700", "http://localhost:8700", false},
		{"ctx.example:8700", "http://127.0.0.1:8700", false},
	} {
		r := httptest.NewRequest("POST", "http://"+tc.host+"/mcp", nil)
		r.Host = tc.host
		r.Header.Set("Origin", tc.origin)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 8700}))
		if err := s.mcpOrigin(r); (err == nil) != tc.ok {
			t.Errorf("Host %s, Origin %s: %v; want ok=%v", tc.host, tc.origin, err, tc.ok)
		}
	}
}
