package server

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/mcpserver"
)

// mcpRoutes serves MCP (streamable HTTP, stateless) at /mcp, behind the
// same bearer authentication as the rest of the API. The tools call the
// API's own handlers in-process with the caller's token, so they see what
// the caller may see and nothing more.
func (s *Server) mcpRoutes(m *router) {
	tools := mcpserver.New(inProcess{s}, mcpserver.Options{})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return tools },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: s.opts.MaxBodyBytes})
	m.Handle("/mcp", s.authed("", func(w http.ResponseWriter, r *http.Request, _ Principal) error {
		h.ServeHTTP(w, r)
		return nil
	}))
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
