package cli

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/version"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the ctxkit version",
		usage: `Usage: ctxkit version   (also ctxkit --version, ctxkit -v)

Prints the version of this ctxkit binary: the module version (devel and the
commit for a build from a work tree), the commit and its time, as the Go
toolchain recorded them. The MCP server's serverInfo.version and GET
/health's version are the same string.
`,
		ownSignals: true,
		run: func(_ context.Context, e *env, args []string) error {
			if err := parseFlags(newFlags("version"), args); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, version.Long())
			return nil
		},
	})
}
