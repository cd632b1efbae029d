package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/textcut"
)

// Every flag of every command may come from the environment: a container,
// a unit file or a shell profile configures ctxkit without a command line.
// A flag's variable is CTXKIT_ and its name in capitals with '-' as '_'
// (--max-conns: CTXKIT_MAX_CONNS), except where that name would mean two
// different things in two commands (envNames). The command line wins; an
// empty variable counts as unset.

// envNames holds the variables that are not CTXKIT_ and the flag's name,
// by flag set ("token revoke") and flag name. One variable means one
// thing in every command that reads it:
//   - --key is the signing key file in serve and token: CTXKIT_KEY_FILE,
//     so that the variable says it names a file, not a key.
//   - view's --record is a switch (the input is a whole breadcrumb), but
//     apply's and scaffold's --record is the audit record file, which
//     keeps CTXKIT_RECORD.
//   - view's --timeout bounds each rule (2s), scaffold's the whole
//     exchange with a model (5m), which keeps CTXKIT_TIMEOUT.
//   - view's --memory is what serve calls --view-memory: both read
//     CTXKIT_VIEW_MEMORY.
var envNames = map[string]string{
	"serve key":    "CTXKIT_KEY_FILE",
	"token key":    "CTXKIT_KEY_FILE",
	"view record":  "CTXKIT_VIEW_RECORD",
	"view timeout": "CTXKIT_VIEW_TIMEOUT",
	"view memory":  "CTXKIT_VIEW_MEMORY",
}

// envName is the variable of the flag called name in the flag set set.
func envName(set, name string) string {
	if v, ok := envNames[set+" "+name]; ok {
		return v
	}
	return "CTXKIT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// maxEnvEcho bounds how much of a bad value an error repeats.
const maxEnvEcho = 64

// flagsFromEnv gives each flag of fs not on the command line the value of
// its variable, when set. A repeatable flag (stringList) takes a list
// separated by the OS's path list separator (':' on Unix), as PATH does.
// A one-letter alias of a longer flag (-c of --compact) has no variable
// of its own: the longer one's serves both, and either given on the
// command line wins over it. A bad value is a usage error naming the
// variable, its value and what the flag takes.
func flagsFromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	// An alias shares its flag's value: a flag is given when its alias is.
	for _, f := range flags {
		for _, g := range flags {
			if f != g && sameValue(f.Value, g.Value) && given[g.Name] {
				given[f.Name] = true
			}
		}
	}
	for _, f := range flags {
		if given[f.Name] || isAlias(f, flags) {
			continue
		}
		name := envName(fs.Name(), f.Name)
		v := getenv(name)
		if v == "" {
			continue
		}
		values := []string{v}
		if _, repeatable := f.Value.(*stringList); repeatable {
			values = filepath.SplitList(v)
		}
		for _, x := range values {
			// fs.Set, not f.Value.Set: the flag then counts as set
			// (fs.Visit), as checks of which flags were given expect.
			if err := fs.Set(f.Name, x); err != nil {
				return usagef("%s=%s: %s", name, echo(x), wants(f, err))
			}
		}
	}
	return nil
}

// isAlias reports whether f is a one-letter flag sharing its value with a
// longer one.
func isAlias(f *flag.Flag, flags []*flag.Flag) bool {
	if len(f.Name) != 1 {
		return false
	}
	return slices.ContainsFunc(flags, func(g *flag.Flag) bool { return len(g.Name) > 1 && sameValue(f.Value, g.Value) })
}

// sameValue reports whether two flags set the same variable (the flag
// package's values are pointers to it).
func sameValue(a, b flag.Value) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}

// echo quotes a value for a message, cut short when long.
func echo(v string) string {
	if c := textcut.Prefix(v, maxEnvEcho); c != v {
		return fmt.Sprintf("%q…", c)
	}
	return fmt.Sprintf("%q", v)
}

// wants says what flag f takes, after the error its value gave.
func wants(f *flag.Flag, err error) string {
	var what string
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool:
			what = "true or false (also 1, 0, t, f, TRUE, FALSE)"
		case int, int64, uint, uint64:
			what = "a whole number"
		case time.Duration:
			what = "a duration such as 90s, 5m or 1h30m"
		}
	}
	if what == "" {
		// The value's own error may repeat the value: bound it too.
		msg := err.Error()
		if c := textcut.Prefix(msg, 4*maxEnvEcho); c != msg {
			msg = c + "…"
		}
		return fmt.Sprintf("not a valid %s: %s", dashes(f.Name), msg)
	}
	return fmt.Sprintf("%s takes %s", dashes(f.Name), what)
}

// envSet lists the variables of fs's flags set in the environment, for a
// usage error's note: a value the user did not type on the command line
// may be the one at fault.
func envSet(fs *flag.FlagSet) []string {
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	var out []string
	for _, f := range flags {
		name := envName(fs.Name(), f.Name)
		if !isAlias(f, flags) && os.Getenv(name) != "" {
			out = append(out, name)
		}
	}
	return out
}
