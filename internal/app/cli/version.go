package cli

import (
	"context"
	"fmt"
	"runtime/debug"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the ctxkit version",
		usage:   "Usage: ctxkit version\n\nPrints the version of this ctxkit binary.\n",
		run: func(_ context.Context, e *env, args []string) error {
			if err := parseFlags(newFlags("version"), args); err != nil {
				return err
			}
			v := "devel"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			fmt.Fprintf(e.stdout, "ctxkit %s\n", v)
			return nil
		},
	})
}
