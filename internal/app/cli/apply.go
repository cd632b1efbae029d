package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/plan"
)

func init() {
	register(&command{
		name:    "apply",
		summary: "apply a plan (or a plain patch) of unified diffs atomically, verify it, record it",
		usage: `Usage: ctxkit apply PLAN.json --root DIR [--dry-run | --backup SUFFIX] [--verify]
                    [--schema FILE] [--record FILE] [--json]
       ctxkit apply --patch FILE --root DIR [-p N] [--dry-run | --backup SUFFIX]
                    [--record FILE] [--json]

Applies a plan (a JSON object of single-file unified diffs, each with the
SHA-256 of the file it was written against, and post commands) to the
files under DIR. PLAN.json "-" reads the plan from standard input; flags
may come before or after it.

  {"diffs":[{"path":"src/main.go","checksum":"<sha256 hex of the file>",
             "unified_diff":"--- a/src/main.go\n+++ b/src/main.go\n@@ ... @@\n..."}],
   "post":{"commands":[{"program":"go","args":["vet","./..."],"timeout_ms":60000}]}}

Each hunk is placed by its content (line numbers only break ties): exactly,
then with whitespace ignored, then with up to two context lines ignored per
side, and only where the match is unique. Every diff is applied in memory
first; files are written only if all apply, each through a temporary file,
fsync and rename, and restored if a write fails midway. A diff that is
already applied is reported as noop: also when the file no longer matches
the checksum but is exactly the diff's result (reversing the diff gives
back the content the checksum names).

With --patch, applies a plain multi-file unified diff instead (git diff or
git format-patch output, diff -u or diff -ruN output; "-" reads standard
input) with the same engine, all or nothing. A patch has no checksums: it
is applied by content only, and the output and the record say so. git's new
files, deletions and renames are applied; mode changes are not (a warning
says so); binary diffs, copies, symbolic links and submodules are refused.

Flags:
  --root DIR        the directory the plan's paths are relative to (required);
                    no path may leave it, even through a symbolic link
                    (env CTXKIT_ROOT)
  --dry-run         compute every outcome, write nothing (env CTXKIT_DRY_RUN)
  --backup SUFFIX   keep each changed file's previous content at PATH+SUFFIX
                    (never overwriting an existing file) (env CTXKIT_BACKUP)
  --verify          after writing, run the plan's post commands in DIR without
                    a shell, each with its timeout (default 60s) (env CTXKIT_VERIFY)
  --schema FILE     a JSON Schema the plan must also satisfy (env CTXKIT_SCHEMA)
  --patch FILE      apply a plain multi-file unified diff instead of a plan
                    (env CTXKIT_PATCH)
  -p N              with --patch: remove N leading components from each name
                    of the ---/+++ and diff --git headers (like patch -pN);
                    default: 1 for git's format, else 1 when the names start
                    with a/ and b/ or differ in their first component only, else 0
                    (env CTXKIT_P)
  --record FILE     append an audit record (one JSON line: plan or patch hash,
                    each diff's outcome and hashes, command outcomes, timestamps)
                    (env CTXKIT_RECORD)
  --json            print the record instead of the table (env CTXKIT_JSON)

Exit status: 0 when every diff applied (or was already applied) and every
command succeeded; 1 when the plan or patch is invalid, a diff failed
(nothing is written then), or a command failed or timed out; 2 on a usage
error.
`,
		run:        runApply,
		ownSignals: true,
	})
}

// applyFlags are apply's flags.
type applyFlags struct {
	root, backup, schema, record, patch string
	strip                               int
	dryRun, verify, json                bool
}

// parseInterspersed parses flags that may come before or after the
// positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, explainFlagError(fs, args, err)
		}
		if fs.NArg() == 0 {
			return pos, flagsFromEnv(fs, os.Getenv)
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func runApply(ctx context.Context, e *env, args []string) error {
	fs := newFlags("apply")
	var f applyFlags
	fs.StringVar(&f.root, "root", "", "")
	fs.StringVar(&f.backup, "backup", "", "")
	fs.StringVar(&f.schema, "schema", "", "")
	fs.StringVar(&f.record, "record", "", "")
	fs.StringVar(&f.patch, "patch", "", "")
	fs.IntVar(&f.strip, "p", plan.StripDetect, "")
	fs.BoolVar(&f.dryRun, "dry-run", false, "")
	fs.BoolVar(&f.verify, "verify", false, "")
	fs.BoolVar(&f.json, "json", false, "")
	pos, err := parseInterspersed(fs, stripArgs(args))
	if err != nil {
		return err
	}
	stripSet := false
	fs.Visit(func(fl *flag.Flag) { stripSet = stripSet || fl.Name == "p" })
	isPatch := false
	fs.Visit(func(fl *flag.Flag) { isPatch = isPatch || fl.Name == "patch" })
	switch {
	case isPatch && f.patch == "":
		return usagef("--patch needs a file (or - for standard input)")
	case isPatch && len(pos) > 0:
		return usagef("unexpected argument %q: --patch applies a patch, not a plan", pos[0])
	case isPatch && f.verify:
		return usagef("--verify runs a plan's post commands: a patch has none")
	case isPatch && f.schema != "":
		return usagef("--schema checks a plan: it does not go with --patch")
	case !isPatch && stripSet:
		return usagef("-p strips names of a patch: it goes with --patch")
	case stripSet && (f.strip < 0 || f.strip > 64):
		return usagef("-p %d: the strip count must be between 0 and 64", f.strip)
	case !isPatch && len(pos) == 0:
		return usagef("the plan file is required: ctxkit apply PLAN.json --root DIR")
	case len(pos) > 1:
		return usagef("unexpected argument %q: apply takes one plan", pos[1])
	case f.root == "":
		return usagef("--root is required: the directory the plan's paths are relative to")
	case f.dryRun && f.backup != "":
		return usagef("--dry-run and --backup do not go together")
	case f.dryRun && f.verify:
		return usagef("--verify runs the commands on the written files: it does not go with --dry-run")
	}
	// An interrupt must not end a run midway through its writes (the
	// files, the audit record) nor leave the commands' process group
	// running: caught, it cancels the run, whose writes, once begun,
	// finish. A dry run without a record writes nothing and leaves
	// interrupts their default.
	if !f.dryRun || f.record != "" {
		var stop context.CancelFunc
		ctx, stop = catchSignals(ctx)
		defer stop()
	}
	src, limit, what := "", int64(plan.MaxPlanBytes), "the plan"
	if isPatch {
		src, limit, what = f.patch, plan.MaxPatchBytes, "the patch"
	} else {
		src = pos[0]
	}
	var raw []byte
	if src == "-" {
		raw, err = io.ReadAll(io.LimitReader(e.stdin, limit+1))
	} else {
		raw, err = readPlanFile(src, limit+1)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	schema, err := loadSchema(f.schema)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(f.root)
	if err != nil {
		return usagef("--root: %v", err)
	}
	defer root.Close()
	var strategy plan.Strategy = plan.Write{}
	switch {
	case f.dryRun:
		strategy = plan.DryRun{}
	case f.backup != "":
		strategy = plan.WriteBackup{Suffix: f.backup}
	}
	// A run is short and its heap small next to a machine's memory: a
	// plan of hundreds of diffs otherwise pays for several collections.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	// The report of a plan of many diffs is many small writes: one
	// system call for all of them.
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	var rec *plan.Record
	if isPatch {
		rec, err = applyPatch(ctx, root, raw, f.strip, strategy)
	} else {
		rec, err = applyPlan(ctx, root, raw, schema, strategy, f.verify)
	}
	if f.record != "" {
		if rerr := plan.AppendRecord(f.record, rec); rerr != nil && err == nil {
			err = fmt.Errorf("--record: %w", rerr)
		}
	}
	if f.json {
		js, merr := json.MarshalIndent(rec, "", "  ")
		if merr != nil {
			return merr
		}
		if _, werr := out.Write(append(js, '\n')); werr != nil && err == nil {
			err = werr
		}
	} else if rec.Diffs != nil {
		printReport(out, rec)
	}
	if ferr := out.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

func readPlanFile(name string, n int64) ([]byte, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	// Read into a buffer of the file's size (one read, no regrowth); the
	// limit still holds for a file that grows meanwhile.
	size := 512
	if fi, err := fh.Stat(); err == nil && fi.Mode().IsRegular() {
		size = int(min(fi.Size(), n)) + 1
	}
	r := io.LimitReader(fh, n)
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// applyPlan parses, validates, applies and verifies a plan document and
// returns the audit record of the run; the error is the run's first
// failure.
func applyPlan(ctx context.Context, root *os.Root, raw []byte, schema *plan.Schema, strategy plan.Strategy, verify bool) (*plan.Record, error) {
	abs, err := filepath.Abs(root.Name())
	if err != nil {
		abs = root.Name()
	}
	rec := &plan.Record{Version: plan.RecordVersion, Started: time.Now().UTC(), Root: abs, Strategy: plan.StrategyName(strategy)}
	// The plan's hash (megabytes for a plan of hundreds of diffs) is
	// taken while the plan is parsed and applied.
	sum := make(chan string, 1)
	go func() { sum <- plan.Checksum(raw) }()
	finish := func(err error) (*plan.Record, error) {
		rec.PlanSHA256 = <-sum
		rec.Finished = time.Now().UTC()
		rec.OK = err == nil
		if err != nil {
			rec.Code, rec.Error = plan.CodeOf(err), oneLine(err.Error())
		}
		return rec, err
	}
	p, err := plan.Parse(raw)
	if err != nil {
		return finish(fmt.Errorf("plan: %w", err))
	}
	rec.Plan = p
	if schema != nil {
		if err := plan.Validate(p, schema); err != nil {
			return finish(fmt.Errorf("plan: %w", err))
		}
	}
	rep, err := plan.Apply(ctx, root, p, plan.Options{Strategy: strategy})
	if rep != nil {
		rec.Diffs, rec.Written, rec.Unrestored = rep.Diffs, rep.Written, rep.Unrestored
	}
	if err != nil {
		return finish(err)
	}
	if verify && len(p.Commands()) > 0 {
		rec.Verified = true
		rec.Commands, err = plan.Verify(ctx, abs, p.Commands(), plan.VerifyOptions{})
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// stripArgs splits patch's "-pN" spelling into "-p" "N" for the flag
// package.
func stripArgs(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if len(a) > 2 && strings.HasPrefix(a, "-p") && strings.Trim(a[2:], "0123456789") == "" {
			out = append(out, "-p", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// applyPatch reads and applies a plain patch and returns the audit record
// of the run; the error is the run's first failure.
func applyPatch(ctx context.Context, root *os.Root, raw []byte, strip int, strategy plan.Strategy) (*plan.Record, error) {
	abs, err := filepath.Abs(root.Name())
	if err != nil {
		abs = root.Name()
	}
	rec := &plan.Record{Version: plan.RecordVersion, Started: time.Now().UTC(), Root: abs, Strategy: plan.StrategyName(strategy),
		PatchSHA256: plan.Checksum(raw), Note: plan.NoChecksums}
	if len(raw) <= plan.MaxPatchBytes && utf8.Valid(raw) {
		rec.Patch = string(raw)
	}
	rep, err := plan.ApplyPatch(ctx, root, raw, strip, plan.Options{Strategy: strategy})
	if rep != nil {
		rec.Diffs, rec.Written, rec.Unrestored = rep.Diffs, rep.Written, rep.Unrestored
	}
	rec.Finished = time.Now().UTC()
	rec.OK = err == nil
	if err != nil {
		rec.Code, rec.Error = plan.CodeOf(err), oneLine(err.Error())
	}
	return rec, err
}

// printReport writes the human report of a run: the diffs' table, the
// summary, the commands' table.
func printReport(w io.Writer, rec *plan.Record) {
	printDiffs(w, rec)
	printSummary(w, rec)
	printCommands(w, rec)
}

// printDiffs writes a run's table of diffs and their warnings.
func printDiffs(w io.Writer, rec *plan.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIFF\tPATH\tSTATUS\tHUNKS\tSHA256 BEFORE\tAFTER")
	for _, o := range rec.Diffs {
		status := string(o.Status)
		if status == "" {
			status = "-"
		}
		var hunks []string
		for _, h := range o.Hunks {
			switch {
			case h.Error != "":
				hunks = append(hunks, "failed")
			case h.Offset != 0:
				hunks = append(hunks, fmt.Sprintf("%s %+d", h.Match, h.Offset))
			default:
				hunks = append(hunks, h.Match)
			}
		}
		if len(hunks) == 0 {
			hunks = []string{"-"}
		}
		after := shortSum(o.SHA256After)
		if o.Deleted {
			after = "deleted"
		}
		name := o.Path
		if o.From != "" {
			name = o.From + " -> " + o.Path
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", o.Index, name, status, strings.Join(hunks, ", "), shortSum(o.SHA256Before), after)
	}
	tw.Flush()
	for _, o := range rec.Diffs {
		for _, warn := range o.Warnings {
			fmt.Fprintf(w, "diffs[%d] (%s): %s\n", o.Index, o.Path, warn)
		}
	}
}

// printSummary writes where backups went and the count line of a run.
func printSummary(w io.Writer, rec *plan.Record) {
	counts := map[plan.Status]int{}
	for _, o := range rec.Diffs {
		counts[o.Status]++
		if o.BackupPath != "" {
			fmt.Fprintf(w, "diffs[%d] (%s): previous content kept in %s\n", o.Index, o.Path, o.BackupPath)
		}
	}
	state := "nothing written"
	switch {
	case len(rec.Unrestored) > 0:
		state = "the write failed and these files could not be restored, check them: " + strings.Join(rec.Unrestored, ", ")
	case rec.Written:
		state = "written"
	case rec.Strategy == "dry-run":
		state = "dry run: nothing written"
	}
	if rec.Note != "" {
		fmt.Fprintln(w, rec.Note)
	}
	fmt.Fprintf(w, "%d applied, %d noop, %d failed; %s\n", counts[plan.StatusApplied], counts[plan.StatusNoop], counts[plan.StatusFailed], state)
}

// printCommands writes the table of a run's post commands and the last
// lines of output of each that did not succeed.
func printCommands(w io.Writer, rec *plan.Record) {
	if len(rec.Commands) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND\tSTATUS\tEXIT\tTIME")
	for _, c := range rec.Commands {
		name := plan.Command{Program: c.Program, Args: c.Args}.String()
		if len(name) > 60 {
			name = name[:57] + "..."
		}
		exit := strconv.Itoa(c.ExitCode)
		if c.ExitCode < 0 {
			exit = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, c.Status, exit, (time.Duration(c.DurationMS) * time.Millisecond).String())
	}
	tw.Flush()
	for _, c := range rec.Commands {
		if c.Status == plan.CommandOK || c.Status == plan.CommandSkipped {
			continue
		}
		for _, s := range []struct{ name, text string }{{"stdout", c.Stdout}, {"stderr", c.Stderr}} {
			if t := strings.TrimSpace(s.text); t != "" {
				fmt.Fprintf(w, "--- %s of %s (last lines)\n%s\n", s.name, c.Program, tailLines(t, 20))
			}
		}
	}
}

func shortSum(sum string) string {
	if sum == "" {
		return "-"
	}
	return sum[:min(12, len(sum))]
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// loadSchema compiles the --schema file (nil when none is named).
func loadSchema(name string) (*plan.Schema, error) {
	if name == "" {
		return nil, nil
	}
	doc, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--schema: %w", err)
	}
	schema, err := plan.CompileSchema(doc)
	if err != nil {
		return nil, fmt.Errorf("--schema %s: %w", name, err)
	}
	return schema, nil
}
