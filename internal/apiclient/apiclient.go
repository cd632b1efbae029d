// Package apiclient calls ctxkit's own HTTP API on a server at a URL with a
// bearer token. It is the one client of that API: 'ctxkit mcp' (through
// mcpserver.Remote) and the repository indexer (workspace) both send their
// requests through it. It is not for upstream model providers, whose
// clients need a proxy rule, redirect refusal and key redaction.
//
// The client moves bytes only: what a reply means (an envelope, a
// breadcrumb, an {"error": ...} body) is for the caller to decode. It
// follows no redirect: the API never answers with one, and following it
// would send the bearer token and the body to wherever Location points
// (Go drops Authorization only when the host name changes, not the port
// or the scheme). A 3xx reply is returned as it is.
package apiclient

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// defaultTimeout bounds a whole request when Client.HTTP is nil.
const defaultTimeout = time.Minute

// Client calls the API of the ctxkit server at BaseURL with Token.
type Client struct {
	BaseURL string       // such as http://127.0.0.1:8700; a trailing slash is ignored
	Token   string       // sent as "Authorization: Bearer Token"
	HTTP    *http.Client // default: a client with a one-minute timeout
}

// Request is one call of the API.
type Request struct {
	Method string
	Path   string      // escaped path, such as /breadcrumbs/ID
	Query  url.Values  // nil for none
	Body   []byte      // JSON; nil for none
	Header http.Header // extra request headers (If-Match, Idempotency-Key)
}

// Response is the server's reply.
type Response struct {
	Status int
	Header http.Header
	Body   []byte // at most the maxBody bytes Do was given
}

// Do sends r and reads at most maxBody bytes of the reply. An error with a
// zero Status means the request was never answered (it could not be built,
// sent or the connection failed); an error with a Status is one reading
// the body, and the Response holds what was read before it.
func (c *Client) Do(ctx context.Context, r Request, maxBody int64) (Response, error) {
	u := strings.TrimRight(c.BaseURL, "/") + r.Path
	if len(r.Query) > 0 {
		u += "?" + r.Query.Encode()
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, body)
	if err != nil {
		return Response{}, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := http.Client{Timeout: defaultTimeout}
	if c.HTTP != nil {
		client = *c.HTTP
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, err
}
