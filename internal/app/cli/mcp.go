package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/apiclient"
	"github.com/ctxkit/ctxkit/internal/app/mcpserver"
	"github.com/ctxkit/ctxkit/internal/version"
)

func init() {
	register(&command{
		name:    "mcp",
		summary: "serve ctxkit's MCP tools over stdio, backed by a ctxkit server",
		usage: `Usage: ctxkit mcp --server URL --token T

Runs an MCP server on standard input and output whose tools call the ctxkit
server at URL with the bearer token T (both checked at start: an
unreachable server or a refused token exits 1 saying which): breadcrumb_get, breadcrumb_search,
breadcrumb_list, breadcrumb_create, breadcrumb_update and workspace_search.
Every result is an envelope (meta: status OK, FALLBACK or ERROR, source,
freshness_state, index_status; items). 'ctxkit serve' also serves the same
tools over streamable HTTP at /mcp.

Flags:
  --server URL   the ctxkit server (env CTXKIT_SERVER)
  --token T      a bearer token for it (env CTXKIT_TOKEN)
`,
		run: runMCP,
	})
}

func runMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlags("mcp")
	server := fs.String("server", "", "")
	token := fs.String("token", "", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *server == "" || *token == "" {
		return usagef("--server and --token are required")
	}
	u, err := url.Parse(*server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server: %q is not an http:// or https:// URL", *server)
	}
	if err := checkRemote(ctx, *server, *token); err != nil {
		return err
	}
	s := mcpserver.New(&mcpserver.Remote{BaseURL: *server, Token: *token}, mcpserver.Options{Version: version.String()})
	err = s.Run(ctx, &drainTransport{Transport: &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}}})
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil // the client went away, or a signal: a normal end
	}
	return err
}

// mcpVersion is the module version this binary was built from.

// drainTransport holds back the end of input until every request read
// before it has been answered: a client may write its requests and close
// its end at once (a script piping a file), and the session ends when
// input ends, which would otherwise drop the answers still on their way.
type drainTransport struct{ mcp.Transport }

func (t *drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, open: map[jsonrpc.ID]int{}, settled: make(chan struct{}, 1)}, nil
}

type drainConn struct {
	mcp.Connection
	mu      sync.Mutex
	open    map[jsonrpc.ID]int // requests read and not yet answered
	settled chan struct{}      // signalled when an answer leaves open empty
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		// The end of input (or a broken one): wait for the answers owed.
		for c.pending() {
			select {
			case <-c.settled:
			case <-ctx.Done():
				return nil, err
			}
		}
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.IsCall():
			c.open[req.ID]++
		case req.Method == "notifications/cancelled":
			// A cancelled request may never be answered.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					c.settle(id)
				}
			}
		}
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		c.settle(resp.ID)
		c.mu.Unlock()
	}
	return err
}

// settle forgets one request with id; c.mu is held.
func (c *drainConn) settle(id jsonrpc.ID) {
	if c.open[id] == 0 {
		return
	}
	if c.open[id]--; c.open[id] == 0 {
		delete(c.open, id)
	}
	if len(c.open) == 0 {
		select {
		case c.settled <- struct{}{}:
		default:
		}
	}
}

func (c *drainConn) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open) > 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// checkRemote asks the server for one breadcrumb with the token, so that a
// wrong URL or token is an error at start (exit 1, naming the flag) rather
// than at the first tool call, which an MCP client shows far from its cause.
func checkRemote(ctx context.Context, server, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := apiclient.Client{BaseURL: server, Token: token}
	resp, err := c.Do(ctx, apiclient.Request{Method: "GET", Path: "/breadcrumbs", Query: url.Values{"limit": {"1"}}}, 64<<10)
	if resp.Status == 0 {
		return fmt.Errorf("--server %s: not reachable: %v", server, err)
	}
	var reply struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	json.Unmarshal(resp.Body, &reply)
	switch {
	case resp.Status == 401:
		return fmt.Errorf("--token: the server at %s refused it (%s: %s); mint one with 'ctxkit token'", server, reply.Error.Code, reply.Error.Message)
	case resp.Status == 403:
		return fmt.Errorf("--token: it may not read breadcrumbs on %s (%s); give it the subscriber or emitter role", server, reply.Error.Message)
	case resp.Status != 200:
		return fmt.Errorf("--server %s: GET /breadcrumbs answered %d, not a ctxkit server's answer", server, resp.Status)
	}
	return nil
}
