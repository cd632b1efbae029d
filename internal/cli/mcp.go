package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/mcpserver"
)

func init() {
	register(&command{
		name:    "mcp",
		summary: "serve ctxkit's MCP tools over stdio, backed by a ctxkit server",
		usage: `Usage: ctxkit mcp --server URL --token T

Runs an MCP server on standard input and output whose tools call the ctxkit
server at URL with the bearer token T: breadcrumb_get, breadcrumb_search,
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
	server := fs.String("server", os.Getenv("CTXKIT_SERVER"), "")
	token := fs.String("token", os.Getenv("CTXKIT_TOKEN"), "")
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
	s := mcpserver.New(&mcpserver.Remote{BaseURL: *server, Token: *token}, mcpserver.Options{Version: mcpVersion()})
	err = s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed)) {
		return nil // the client went away, or a signal: a normal end
	}
	return err
}

// mcpVersion is the module version this binary was built from.
func mcpVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
