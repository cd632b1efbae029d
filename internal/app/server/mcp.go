package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/app/mcpserver"
	"github.com/ctxkit/ctxkit/internal/textcut"
	"github.com/ctxkit/ctxkit/internal/version"
)

// mcpHandler serves MCP (streamable HTTP, stateless) at /mcp, behind the
// same bearer authentication as the rest of the API. The tools call the
// API's own handlers in-process with the caller's token, so they see what
// the caller may see and nothing more. A foreign Origin is refused before
// anything else (mcpOrigin, the route's guard), and a notification the
// tools have no use for is accepted and ignored, as JSON-RPC has a server
// do.
func (s *Server) mcpHandler() handlerFunc {
	tools := mcpserver.New(inProcess{s}, mcpserver.Options{Version: version.String()})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return tools },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: s.opts.MaxBodyBytes})
	return func(w http.ResponseWriter, r *http.Request, _ Principal) error {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return nil
		}
		body, err := readBody(w, r, s.opts.MaxBodyBytes)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !isNotification(body) {
			h.ServeHTTP(w, r)
			return nil
		}
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusBadRequest && bytes.Contains(rec.body.Bytes(), []byte("unsupported")) {
			// The SDK refuses a method it does not know even in a
			// notification, which JSON-RPC has a server ignore: clients
			// send their own (TestMCPUnknownNotifications pins the SDK's
			// answer this relies on).
			w.WriteHeader(http.StatusAccepted)
			return nil
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
		return nil
	}
}

// isNotification reports whether body is one well-formed JSON-RPC 2.0
// notification: an object with a method and without an id. Member names
// are exact, as JSON-RPC's are: encoding/json would take "Method" for
// "method", so the object is read as a map, and a name that differs from
// one of the four only in case (an "ID" a lenient reader could take for
// the id) makes it no notification.
func isNotification(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	for k := range m {
		for _, name := range [...]string{"jsonrpc", "id", "method", "params"} {
			if k != name && strings.EqualFold(k, name) {
				return false
			}
		}
	}
	if _, hasID := m["id"]; hasID {
		return false
	}
	var version, method string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return false
	}
	if raw := m["method"]; len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &method) != nil {
		return false
	}
	p := m["params"]
	return len(p) == 0 || p[0] == '{' || p[0] == '['
}

// mcpOrigin applies MCP's rule against DNS rebinding: a request whose
// Origin header is present and not one this server trusts is refused (403
// forbidden_origin). A request without Origin comes from no browser and
// passes (the bearer token still applies). Trusted are the origins in
// Options.MCPOrigins; on a loopback listener, loopback origins (a local
// tool on another port; a rebound name is never one, and the MCP SDK
// refuses a Host that is not loopback there); on any other listener, the
// origin the request itself names in Host (same host and port).
func (s *Server) mcpOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if _, sent := r.Header["Origin"]; !sent {
		return nil
	}
	refuse := func(why string) error {
		e := errorf(http.StatusForbidden, CodeForbiddenOrigin, "Origin %q %s: a web page of another site may not call /mcp", textcut.Clip(origin, 200, "…"), why)
		e.Path = "Origin"
		return e
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return refuse("is not an http(s) origin")
	}
	for _, o := range s.opts.MCPOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), u.Scheme+"://"+u.Host) {
			return nil
		}
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && loopbackHost(local.String()) {
		if loopbackHost(u.Host) {
			return nil
		}
		return refuse("is not a loopback origin, and this server listens on loopback")
	}
	if sameHost(u, r) {
		return nil
	}
	return refuse("is not this server's origin")
}

// loopbackHost reports whether a host or host:port names the loopback
// interface: localhost, 127.0.0.0/8 or ::1.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// sameHost reports whether origin names the host and port the request was
// sent to, a default port (80 for http, 443 for https) written or not.
func sameHost(origin *url.URL, r *http.Request) bool {
	def := ":80"
	if origin.Scheme == "https" {
		def = ":443"
	}
	norm := func(h string) string { return strings.TrimSuffix(strings.ToLower(h), def) }
	return r.Host != "" && norm(origin.Host) == norm(r.Host)
}

// inProcess is an mcpserver.API on the server's own handlers.
type inProcess struct{ s *Server }

func (a inProcess) Do(ctx context.Context, c mcpserver.Call, auth http.Header) (int, []byte, error) {
	u := &url.URL{Path: c.Path, RawQuery: c.Query.Encode()}
	if p, err := url.PathUnescape(c.Path); err == nil {
		u.Path, u.RawPath = p, c.Path
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, u.String(), bytes.NewReader(c.Body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", auth.Get("Authorization"))
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	a.s.mux.ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes(), nil
}

// recorder is an http.ResponseWriter that keeps the response.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
