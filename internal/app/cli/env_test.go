package cli

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

// commandFlags is every command's flag set, by command.
func commandFlags(t *testing.T) map[string]*flag.FlagSet {
	t.Helper()
	out := map[string]*flag.FlagSet{}
	for _, n := range commandNames() {
		if fs := commands[n].flagSet(); fs != nil {
			out[n] = fs
		}
	}
	if len(out) < 8 {
		t.Fatalf("flag sets of %d commands found: the capture broke", len(out))
	}
	return out
}

// nonAliases lists fs's flags but the one-letter aliases.
func nonAliases(fs *flag.FlagSet) []*flag.Flag {
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	var out []*flag.Flag
	for _, f := range all {
		if !isAlias(f, all) {
			out = append(out, f)
		}
	}
	return out
}

// TestEveryFlagHelpNamesItsVariable: a command's help names the variable
// of each of its flags.
func TestEveryFlagHelpNamesItsVariable(t *testing.T) {
	for cmd, fs := range commandFlags(t) {
		for _, f := range nonAliases(fs) {
			v := envName(fs.Name(), f.Name)
			if !strings.Contains(commands[cmd].usage, "env "+v) {
				t.Errorf("ctxkit %s --help: %s does not name its variable %s", cmd, dashes(f.Name), v)
			}
		}
	}
}

// sharedVariables are the variables more than one command reads, with
// what each means in all of them: a variable read by two commands must be
// listed here, so that one name never means two things.
var sharedVariables = map[string]string{
	"CTXKIT_DATA":        "the data directory (database, signing key)",
	"CTXKIT_DB":          "the server's database URL",
	"CTXKIT_KEY_FILE":    "the signing key file",
	"CTXKIT_SERVER":      "the ctxkit server's URL",
	"CTXKIT_TOKEN":       "a bearer token for it",
	"CTXKIT_OWNER":       "the owner acted for",
	"CTXKIT_AGENT":       "the agent's id",
	"CTXKIT_ROOT":        "the directory a plan applies to",
	"CTXKIT_SCHEMA":      "a JSON Schema a plan must satisfy",
	"CTXKIT_BACKUP":      "the suffix of changed files' backups",
	"CTXKIT_DRY_RUN":     "write nothing",
	"CTXKIT_RECORD":      "the audit record file a plan's run is appended to",
	"CTXKIT_JSON":        "print the result as JSON",
	"CTXKIT_COMPACT":     "print JSON on one line",
	"CTXKIT_MODEL":       "the model's name",
	"CTXKIT_VIEW_MEMORY": "the memory views may take",
}

// TestOneVariableOneMeaning: a variable read by several commands is one
// of sharedVariables; the flags of the variables named apart (envNames)
// keep them.
func TestOneVariableOneMeaning(t *testing.T) {
	readers := map[string][]string{}
	for cmd, fs := range commandFlags(t) {
		for _, f := range nonAliases(fs) {
			v := envName(fs.Name(), f.Name)
			readers[v] = append(readers[v], cmd+" "+dashes(f.Name))
		}
	}
	for v, rs := range readers {
		if len(rs) > 1 {
			if _, ok := sharedVariables[v]; !ok {
				slices.Sort(rs)
				t.Errorf("%s is read by %s: give it one meaning in sharedVariables, or the flags distinct variables (envNames)", v, strings.Join(rs, ", "))
			}
		}
	}
	for _, c := range []struct{ reader, v string }{
		{"view --record", "CTXKIT_VIEW_RECORD"},
		{"view --timeout", "CTXKIT_VIEW_TIMEOUT"},
		{"view --memory", "CTXKIT_VIEW_MEMORY"},
		{"serve --view-memory", "CTXKIT_VIEW_MEMORY"},
		{"serve --key", "CTXKIT_KEY_FILE"},
		{"token --key", "CTXKIT_KEY_FILE"},
		{"scaffold --timeout", "CTXKIT_TIMEOUT"},
		{"apply --record", "CTXKIT_RECORD"},
		{"serve --max-conns", "CTXKIT_MAX_CONNS"},
	} {
		if !slices.Contains(readers[c.v], c.reader) {
			t.Errorf("%s: variable not %s (read by %v)", c.reader, c.v, readers[c.v])
		}
	}
	for _, v := range []string{"CTXKIT_C", "CTXKIT_KEY"} {
		if rs := readers[v]; len(rs) > 0 {
			t.Errorf("%s is read by %v", v, rs)
		}
	}
}

func TestFlagsFromEnv(t *testing.T) {
	type vals struct {
		compact bool
		n       int
		list    stringList
		name    string
	}
	newSet := func(v *vals) *flag.FlagSet {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.BoolVar(&v.compact, "compact", false, "")
		fs.BoolVar(&v.compact, "c", false, "")
		fs.IntVar(&v.n, "max-n", 7, "")
		fs.Var(&v.list, "dir", "")
		fs.StringVar(&v.name, "name", "x", "")
		return fs
	}
	for _, c := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    vals
		wantErr string
	}{
		{name: "nothing set", want: vals{n: 7, name: "x"}},
		{name: "each kind", env: map[string]string{"CTXKIT_COMPACT": "T", "CTXKIT_MAX_N": "3", "CTXKIT_DIR": "a:b", "CTXKIT_NAME": "y"},
			want: vals{compact: true, n: 3, list: stringList{"a", "b"}, name: "y"}},
		{name: "empty counts as unset", env: map[string]string{"CTXKIT_NAME": "", "CTXKIT_MAX_N": ""}, want: vals{n: 7, name: "x"}},
		{name: "command line wins", args: []string{"--max-n", "4", "--dir", "c", "--name=z"},
			env:  map[string]string{"CTXKIT_MAX_N": "3", "CTXKIT_DIR": "a:b", "CTXKIT_NAME": "y"},
			want: vals{n: 4, list: stringList{"c"}, name: "z"}},
		{name: "alias on the command line wins", args: []string{"-c=false"}, env: map[string]string{"CTXKIT_COMPACT": "1"}, want: vals{n: 7, name: "x"}},
		{name: "no variable for an alias", env: map[string]string{"CTXKIT_C": "1"}, want: vals{n: 7, name: "x"}},
		{name: "bad bool", env: map[string]string{"CTXKIT_COMPACT": "yes"}, wantErr: `CTXKIT_COMPACT="yes": --compact takes true or false`},
		{name: "bad number", env: map[string]string{"CTXKIT_MAX_N": "many"}, wantErr: `CTXKIT_MAX_N="many": --max-n takes a whole number`},
		{name: "long bad value cut", env: map[string]string{"CTXKIT_MAX_N": strings.Repeat("9", 200)},
			wantErr: `CTXKIT_MAX_N="` + strings.Repeat("9", maxEnvEcho) + `"…: --max-n takes a whole number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got vals
			fs := newSet(&got)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			err := flagsFromEnv(fs, func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				var ue *usageError
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.As(err, &ue) {
					t.Fatalf("error %v, want a usage error with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.compact != c.want.compact || got.n != c.want.n || got.name != c.want.name || !slices.Equal(got.list, c.want.list) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// FuzzFlagsFromEnv: whatever a variable holds, flagsFromEnv sets the
// flag or returns a usage error that names the variable and repeats at
// most maxEnvEcho bytes of the value.
func FuzzFlagsFromEnv(f *testing.F) {
	for _, s := range []string{"", "1", "true", "yes", "-3", "99999999999999999999", "1h", "a:b::c", "\xff\xfe", strings.Repeat("é", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, name := range []string{"CTXKIT_COMPACT", "CTXKIT_MAX_N", "CTXKIT_DIR", "CTXKIT_EVERY", "CTXKIT_SIZE"} {
			var (
				compact bool
				n       int64
				list    stringList
				every   time.Duration
				size    byteSize
			)
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.BoolVar(&compact, "compact", false, "")
			fs.Int64Var(&n, "max-n", 0, "")
			fs.Var(&list, "dir", "")
			fs.DurationVar(&every, "every", 0, "")
			fs.Var(&size, "size", "")
			err := flagsFromEnv(fs, func(k string) string {
				if k == name {
					return v
				}
				return ""
			})
			if err == nil {
				continue
			}
			var ue *usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(ue.msg, name+"=") {
				t.Fatalf("%s=%q: %v", name, v, err)
			}
			if len(ue.msg) > len(name)+4*maxEnvEcho+4*maxEnvEcho+100 {
				t.Fatalf("%s=%q: message of %d bytes", name, v, len(ue.msg))
			}
		}
	})
}
