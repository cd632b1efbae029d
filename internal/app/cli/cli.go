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
	"path/filepath"
	"sort"
	"strings"
	"sync"
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
	// ownSignals says that Main leaves SIGINT and SIGTERM to the
	// command: it catches them itself when it must (catchSignals), or,
	// only printing, never. Main catches them for the others, so that a
	// write finishes or is rolled back and a server drains; catching
	// them costs a run two or three more threads and their page faults.
	ownSignals bool
}

// catchSignals is ctx, cancelled on SIGINT or SIGTERM instead of the
// process ending; stop restores the default.
func catchSignals(ctx context.Context) (_ context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// usageError is a mistake in how a command was called: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Main runs ctxkit with args (without the program name) and returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
			if s := suggest(rest[0], commandNames()); s != "" {
				fmt.Fprintf(stderr, "ctxkit help: unknown command %q; did you mean %s?\n", rest[0], s)
			} else {
				fmt.Fprintf(stderr, "ctxkit help: unknown command %q\n", rest[0])
			}
			return exitUsage
		}
		printOverview(stdout)
		return exitOK
	case "-version", "--version", "-v":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		if s := suggest(name, commandNames()); s != "" {
			fmt.Fprintf(stderr, "ctxkit: unknown command %q; did you mean %s?\n", name, s)
		} else {
			fmt.Fprintf(stderr, "ctxkit: unknown command %q; run 'ctxkit help' for the list\n", name)
		}
		return exitUsage
	}
	if !c.ownSignals {
		var stop context.CancelFunc
		ctx, stop = catchSignals(ctx)
		defer stop()
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
		fmt.Fprintf(stderr, "ctxkit %s: %s\n", name, ue.msg)
		// A value from the environment may be the one at fault; the
		// message names flags, so say which came from there.
		if fs := c.flagSet(); fs != nil && !strings.HasPrefix(ue.msg, "CTXKIT_") {
			if vars := envSet(fs); len(vars) > 0 {
				fmt.Fprintf(stderr, "(flags also set in the environment: %s)\n", strings.Join(vars, ", "))
			}
		}
		fmt.Fprintf(stderr, "run 'ctxkit %s --help' for usage\n", name)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "ctxkit %s: %s\n", name, oneLine(err.Error()))
		return exitFail
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func printOverview(w io.Writer) {
	fmt.Fprint(w, "ctxkit: context infrastructure for LLM agents\n\nUsage: ctxkit <command> [flags]\n\nCommands:\n")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, "\nRun 'ctxkit <command> --help' for a command's flags.\n"+
		"Every flag may also come from the environment: CTXKIT_ and its name in\n"+
		"capitals, '-' as '_' (--max-conns: CTXKIT_MAX_CONNS; each command's help\n"+
		"names its variables). The command line wins; a repeatable flag's variable\n"+
		"is a list separated by '"+string(filepath.ListSeparator)+"'.\n")
}

// commandNames is every command's name, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// newFlags returns a flag set that reports errors instead of exiting and
// prints nothing itself: Main prints usage and errors in one place.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	captured.record(fs)
	return fs
}

// captured holds the flag set a command defines while flagSet runs it.
// Each command defines its flags inside its run function, next to the
// variables they set; running it with --help defines them and stops at
// the parse, before the command does anything, so the flag sets stay the
// one source of what each command takes.
var captured capture

type capture struct {
	call sync.Mutex // one flagSet call at a time
	mu   sync.Mutex // guards name and fs: Main may run in other goroutines
	name string     // the command being asked, "" when none
	fs   *flag.FlagSet
}

// record keeps fs when it is the first flag set of the command asked for.
func (c *capture) record(fs *flag.FlagSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.name != "" && c.fs == nil && fs.Name() == c.name {
		c.fs = fs
	}
}

func (c *capture) set(name string) *flag.FlagSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := c.fs
	c.name, c.fs = name, nil
	return fs
}

// flagSet returns the flags c defines, or nil when it defines none.
func (c *command) flagSet() *flag.FlagSet {
	captured.call.Lock()
	defer captured.call.Unlock()
	captured.set(c.name)
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // should a command start anything, it stops at once
	_ = c.run(ctx, e, []string{"--help"})
	return captured.set("")
}

// parseFlags parses args and refuses positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return explainFlagError(fs, args, err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return flagsFromEnv(fs, os.Getenv)
}

// parseFlagsInput parses the flags of a command that reads one input
// file, like jq: flags may come before or after it, "-" or no file at all
// means standard input, and "--" ends the flags. It returns the file
// ("" for standard input).
func parseFlagsInput(fs *flag.FlagSet, args []string) (string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return "", explainFlagError(fs, args, err)
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) > 1:
		return "", usagef("one input file at most, not %d: unexpected argument %q", len(pos), pos[1])
	case len(pos) == 1 && pos[0] != "-":
		return pos[0], flagsFromEnv(fs, os.Getenv)
	}
	return "", flagsFromEnv(fs, os.Getenv)
}

// undefinedFlag begins the flag package's error for a flag a set does
// not define.
const undefinedFlag = "flag provided but not defined: -"

// needsArgument begins its error for a flag given last without its value.
const needsArgument = "flag needs an argument: -"

// explainFlagError turns a flag parse error into a usage error: an
// unknown flag is named as it was typed (the flag package prints -hint
// for --hint) with the nearest flag fs defines, when one is near.
func explainFlagError(fs *flag.FlagSet, args []string, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, needsArgument); ok {
		return usagef("flag needs an argument: %s", typedFlag(args, name))
	}
	name, ok := strings.CutPrefix(msg, undefinedFlag)
	if !ok {
		return usagef("%s", msg)
	}
	typed := typedFlag(args, name)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := suggest(name, names); s != "" {
		return usagef("unknown flag %s; did you mean %s?", typed, dashes(s))
	}
	return usagef("unknown flag %s", typed)
}

// typedFlag is the flag called name as args spell it (--hints or -hints).
func typedFlag(args []string, name string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if flagName(a) == name {
			typed, _, _ := strings.Cut(a, "=")
			return typed
		}
	}
	return "-" + name
}

// flagName is the name a command-line word gives a flag ("--hints=x" is
// "hints"), or "" when the word is not a flag.
func flagName(arg string) string {
	if len(arg) < 2 || arg[0] != '-' {
		return ""
	}
	n := strings.TrimPrefix(arg[1:], "-")
	n, _, _ = strings.Cut(n, "=")
	return n
}

// dashes writes a flag's name the way the usage texts do: --name, or -c
// for a one-letter name.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// suggest returns the name in names nearest to typed, or "" when none is
// near enough. Near means either that typed is the start of exactly one
// name (at least two letters typed: "max" for "max-bytes"), or that one
// edit turns typed into the name when it has at most five letters, two
// edits when it is longer; an edit inserts, deletes or replaces a letter,
// or swaps two adjacent ones. Ties go to the first name in sorted order.
func suggest(typed string, names []string) string {
	if typed == "" {
		return ""
	}
	var prefixed []string
	for _, n := range names {
		if len(typed) >= 2 && strings.HasPrefix(n, typed) && n != typed {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	limit := 1
	if len(typed) > 5 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, n := range names {
		d := editDistance(typed, n)
		if d < bestD || d == bestD && best != "" && n < best {
			best, bestD = n, d
		}
	}
	if bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b
// (bytes, which is enough for flag and command names).
func editDistance(a, b string) int {
	// Names are short; bound the work on whatever a user typed.
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
