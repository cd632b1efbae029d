package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

func init() {
	register(&command{
		name:    "completion",
		summary: "print a shell completion script (bash, zsh or fish)",
		usage: `Usage: ctxkit completion bash|zsh|fish

Prints a script that completes ctxkit's commands and each command's flags
in the shell named; file names are completed after the flags. Load it with

  bash:  source <(ctxkit completion bash)     (in ~/.bashrc)
  zsh:   source <(ctxkit completion zsh)      (in ~/.zshrc, after compinit)
  fish:  ctxkit completion fish | source      (in ~/.config/fish/config.fish)
`,
		ownSignals: true,
		run:        runCompletion,
	})
}

// shells maps each shell to the writer of its script.
var shells = map[string]func(io.Writer, []completionEntry) error{
	"bash": writeBash,
	"zsh":  writeZsh,
	"fish": writeFish,
}

func runCompletion(ctx context.Context, e *env, args []string) error {
	fs := newFlags("completion")
	if err := fs.Parse(args); err != nil {
		return explainFlagError(fs, args, err)
	}
	if fs.NArg() != 1 {
		return usagef("name one shell: bash, zsh or fish")
	}
	write, ok := shells[fs.Arg(0)]
	if !ok {
		return usagef("unknown shell %q: use bash, zsh or fish", fs.Arg(0))
	}
	return write(e.stdout, completionEntries())
}

// completionEntry is one command as the scripts offer it.
type completionEntry struct {
	name, summary string
	flags         []string // as typed: --hints, -c
}

// completionEntries lists every command, with help, and the flags of each
// from its flag set.
func completionEntries() []completionEntry {
	var out []completionEntry
	for _, n := range commandNames() {
		c := commands[n]
		ent := completionEntry{name: n, summary: c.summary}
		if fs := c.flagSet(); fs != nil {
			fs.VisitAll(func(f *flag.Flag) { ent.flags = append(ent.flags, dashes(f.Name)) })
		}
		ent.flags = append(ent.flags, "--help")
		sort.Strings(ent.flags)
		out = append(out, ent)
	}
	out = append(out, completionEntry{name: "help", summary: "print the commands, or a command's flags"})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// quote writes s in single quotes for bash and zsh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeBash(w io.Writer, cmds []completionEntry) error {
	var b strings.Builder
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	b.WriteString("# bash completion for ctxkit; load with: source <(ctxkit completion bash)\n")
	b.WriteString("_ctxkit() {\n\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" words=\n\tCOMPREPLY=()\n")
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n\t\treturn 0\n\tfi\n", quote(strings.Join(names, " ")))
	b.WriteString("\tcase \"${COMP_WORDS[1]}\" in\n")
	for _, c := range cmds {
		if c.name == "help" {
			fmt.Fprintf(&b, "\thelp) words=%s ;;\n", quote(strings.Join(names, " ")))
			continue
		}
		fmt.Fprintf(&b, "\t%s) words=%s ;;\n", c.name, quote(strings.Join(c.flags, " ")))
	}
	b.WriteString("\tesac\n")
	// Flags when the word starts with a dash (or the command is help);
	// otherwise nothing, and -o default completes file names.
	b.WriteString("\tif [[ \"$cur\" == -* || \"${COMP_WORDS[1]}\" == help ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n\tfi\n\treturn 0\n}\n")
	b.WriteString("complete -o default -F _ctxkit ctxkit\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeZsh(w io.Writer, cmds []completionEntry) error {
	var b strings.Builder
	b.WriteString("#compdef ctxkit\n# zsh completion for ctxkit; load with: source <(ctxkit completion zsh)\n")
	b.WriteString("_ctxkit() {\n\tlocal -a cmds\n\tcmds=(\n")
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
		fmt.Fprintf(&b, "\t\t%s\n", quote(c.name+":"+c.summary))
	}
	b.WriteString("\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe command cmds\n\t\treturn\n\tfi\n")
	b.WriteString("\tlocal -a flags\n\tcase $words[2] in\n")
	for _, c := range cmds {
		list := c.flags
		if c.name == "help" {
			list = names
		}
		quoted := make([]string, len(list))
		for i, f := range list {
			quoted[i] = quote(f)
		}
		fmt.Fprintf(&b, "\t%s) flags=(%s) ;;\n", c.name, strings.Join(quoted, " "))
	}
	b.WriteString("\tesac\n\tif [[ $PREFIX == -* || $words[2] == help ]]; then\n\t\tcompadd -- $flags\n\telse\n\t\t_files\n\tfi\n}\n")
	b.WriteString("if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n\t_ctxkit \"$@\"\nelse\n\tcompdef _ctxkit ctxkit\nfi\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote writes s in single quotes for fish, which escapes \ and '.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, cmds []completionEntry) error {
	var b strings.Builder
	b.WriteString("# fish completion for ctxkit; load with: ctxkit completion fish | source\n")
	b.WriteString("complete -c ctxkit -e\n")
	var names []string
	for _, c := range cmds {
		names = append(names, c.name)
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c ctxkit -f -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	for _, c := range cmds {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		if c.name == "help" {
			fmt.Fprintf(&b, "complete -c ctxkit -f -n %s -a %s\n", cond, fishQuote(strings.Join(names, " ")))
			continue
		}
		for _, f := range c.flags {
			if name, ok := strings.CutPrefix(f, "--"); ok {
				fmt.Fprintf(&b, "complete -c ctxkit -n %s -l %s\n", cond, name)
			} else {
				fmt.Fprintf(&b, "complete -c ctxkit -n %s -s %s\n", cond, strings.TrimPrefix(f, "-"))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
