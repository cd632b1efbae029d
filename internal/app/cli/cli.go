// Package cli implements the ctxkit command line: one file per subcommand
// (token.go also holds revoke and revocations).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Exit statuses: success, a failure the input caused, a usage error.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// env is what a command runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // the synopsis and what the command does, for --help
	run     func(ctx context.Context, e *env, args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// usageError is a mistake in how a command was called: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Main runs ctxkit with args (without the program name) and returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printOverview(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 {
			if c, ok := commands[rest[0]]; ok {
				fmt.Fprint(stdout, c.usage)
				return exitOK
			}
			fmt.Fprintf(stderr, "ctxkit help: unknown command %q\n", rest[0])
			return exitUsage
		}
		printOverview(stdout)
		return exitOK
	case "-version", "--version", "-v":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "ctxkit: unknown command %q; run 'ctxkit help' for the list\n", name)
		return exitUsage
	}
	err := c.run(ctx, e, rest)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, c.usage)
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ctxkit %s: %s\nrun 'ctxkit %s --help' for usage\n", name, ue.msg, name)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "ctxkit %s: %s\n", name, oneLine(err.Error()))
		return exitFail
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func printOverview(w io.Writer) {
	fmt.Fprint(w, "ctxkit: context infrastructure for LLM agents\n\nUsage: ctxkit <command> [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, "\nRun 'ctxkit <command> --help' for a command's flags.\n")
}

// newFlags returns a flag set that reports errors instead of exiting and
// prints nothing itself: Main prints usage and errors in one place.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args and refuses positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
