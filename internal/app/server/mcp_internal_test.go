package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// FuzzMCPOrigin: whatever the Origin and Host, an origin is trusted only
// as the rule says: on loopback, a loopback origin; elsewhere, the
// request's own host and port.
func FuzzMCPOrigin(f *testing.F) {
	for _, o := range []string{"http://localhost:1", "http://evil.example", "null", "http://[::1]", "https://h:443", "http://127.0.0.1.nip.io", "http://%41", "http://h/"} {
		f.Add(o, "h:8700", true)
		f.Add(o, "h", false)
	}
	s := &Server{}
	f.Fuzz(func(t *testing.T, origin, host string, loopback bool) {
		r := httptest.NewRequest("POST", "http://x/mcp", nil)
		r.Host = host
		r.Header["Origin"] = []string{origin}
		ip := net.ParseIP("192.0.2.10")
		if loopback {
			ip = net.ParseIP("127.0.0.1")
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: ip, Port: 8700}))
		if s.mcpOrigin(r) != nil {
			return
		}
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			t.Fatalf("trusted %q, not an http(s) origin", origin)
		}
		if loopback && !loopbackHost(u.Host) {
			t.Fatalf("trusted %q on loopback", origin)
		}
		if !loopback && !sameHost(u, r) {
			t.Fatalf("trusted %q for Host %q", origin, host)
		}
	})
}

// FuzzIsNotification: a body taken for a notification is a JSON object
// with a string method and no id.
func FuzzIsNotification(f *testing.F) {
	for _, b := range []string{`{"jsonrpc":"2.0","method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","method":"x","params":[]}`, `[]`, `{"jsonrpc":"2.0","method":null}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !isNotification(body) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("not an object: %q", body)
		}
		var method string
		if _, hasID := m["id"]; hasID || json.Unmarshal(m["method"], &method) != nil {
			t.Fatalf("not a notification: %q", body)
		}
	})
}

// TestIsNotificationExactNames: JSON-RPC's member names are exact; a name
// that differs only in case is not the member, and an "ID" that a lenient
// reader could take for the id makes a body no notification.
func TestIsNotificationExactNames(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:  true,
		`{"jsonrpc":"2.0","method":"x","params":{}}`:              true,
		`{"jsonrpC":"2.0","Method":""}`:                           false,
		`{"jsonrpc":"2.0","Method":"x"}`:                          false,
		`{"jsonrpc":"2.0","method":"x","ID":1}`:                   false,
		`{"jsonrpc":"2.0","method":"x","method":"y","Params":[]}`: false,
		`{"jsonrpc":"2.0","method":null}`:                         false,
		`{"jsonrpc":"2.0","method":"x","params":null}`:            false,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`:                false,
		`[{"jsonrpc":"2.0","method":"x"}]`:                        false,
	} {
		if got := isNotification([]byte(body)); got != want {
			t.Errorf("isNotification(%s) = %v, want %v", body, got, want)
		}
	}
}
