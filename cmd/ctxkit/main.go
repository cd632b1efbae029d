// Command ctxkit is context infrastructure for LLM agents; see the README.
package main

import (
	"context"
	"os"

	"github.com/ctxkit/ctxkit/internal/app/cli"
)

func main() { os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
