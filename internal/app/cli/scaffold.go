package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/plan"
)

func init() {
	register(&command{
		name:    "scaffold",
		summary: "ask a model for a plan that does a task, then check, apply and verify it",
		usage: `Usage: ctxkit scaffold FILE --model M [--upstream URL] [--root DIR] [--context PATH]...
                       [--api-key-env NAME] [--schema FILE] [--dry-run | --backup SUFFIX]
                       [--no-verify] [--record FILE] [--timeout 5m] [--max-tokens N] [--quiet]

Asks a model for a plan that does the task described in FILE (plain text or
markdown; "-" reads it from standard input), then treats the reply as
'ctxkit apply' treats a plan: finds the plan's JSON in it, checks it, shows
a dry run of every diff, writes the files only when every diff applies, and
runs the plan's post commands to verify the result. Flags may come before or
after FILE.

The model is reached through an OpenAI-compatible server:
  1. GET {upstream}/models must list the model (the error lists those it has);
  2. POST {upstream}/chat/completions streams the reply; its text is echoed
     on standard error as it arrives (unless --quiet).
The prompt states the plan's contract, the task, and each --context file's
path, SHA-256 and content, which is how the model learns what the files hold
and the checksums its diffs must carry:

  {"diffs":[{"path":"src/main.go","checksum":"<sha256 hex of the preimage>",
             "unified_diff":"--- a/src/main.go\n+++ b/src/main.go\n@@ ... @@\n..."}],
   "post":{"commands":[{"program":"go","args":["vet","./..."],"timeout_ms":60000}]}}

The API key is read from an environment variable and sent as a bearer token
to the upstream only: redirects are refused, and a proxy from the
environment is used for https upstreams only (where it sees no header).

Flags:
  --model M          the model to ask (required); it must be one the upstream lists
                     (env CTXKIT_MODEL)
  --upstream URL     the OpenAI-compatible base URL (default http://127.0.0.1:8700/v1,
                     the gateway of 'ctxkit serve') (env CTXKIT_UPSTREAM)
  --api-key-env NAME the environment variable holding the API key (default
                     CTXKIT_API_KEY); unset or empty: no Authorization header
                     (env CTXKIT_API_KEY_ENV)
  --root DIR         the repository the plan applies to (default "."); no path
                     may leave it, even through a symbolic link (env CTXKIT_ROOT)
  --context PATH     a file under DIR whose content and SHA-256 go in the prompt
                     (repeatable; text files of at most 1 MiB together)
                     (env CTXKIT_CONTEXT)
  --schema FILE      a JSON Schema the plan must also satisfy (env CTXKIT_SCHEMA)
  --dry-run          stop after the dry run: write nothing, run nothing
                     (env CTXKIT_DRY_RUN)
  --backup SUFFIX    keep each changed file's previous content at PATH+SUFFIX
                     (env CTXKIT_BACKUP)
  --no-verify        do not run the plan's post commands (env CTXKIT_NO_VERIFY)
  --record FILE      append an audit record (one JSON line, as 'ctxkit apply'
                     writes, with the model, upstream, task and reply hashes)
                     (env CTXKIT_RECORD)
  --timeout D        bound on the whole exchange with the upstream (default 5m)
                     (env CTXKIT_TIMEOUT)
  --max-tokens N     the reply's token limit (default: the upstream's)
                     (env CTXKIT_MAX_TOKENS)
  --quiet            do not echo the reply on standard error (env CTXKIT_QUIET)

Exit status: 0 when the plan applied and its commands succeeded; 1 when the
upstream failed or refused, the model is not listed, the reply holds no
valid plan, a diff does not apply (nothing is written then), or a command
failed; 2 on a usage error.
`,
		run: runScaffold,
	})
}

// Bounds of the exchange with the upstream.
const (
	defaultUpstream  = "http://127.0.0.1:8700/v1"
	maxTaskBytes     = 1 << 20  // the task description
	maxContextBytes  = 1 << 20  // the --context files together
	maxModelsBytes   = 4 << 20  // GET /models
	maxStreamBytes   = 64 << 20 // the streamed reply, SSE framing included
	maxErrorBodySize = 64 << 10 // the body of an error status read for its message
)

// upstreamCode is the code an audit record carries for a failure of the
// exchange with the upstream.
const (
	codeUpstream      plan.Code = "upstream_error"
	codeModelNotFound plan.Code = "model_not_listed"
	codeContext       plan.Code = "context_file"
)

// codedError is a scaffold failure with a record code.
type codedError struct {
	code plan.Code
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func coded(code plan.Code, format string, args ...any) error {
	return &codedError{code: code, err: fmt.Errorf(format, args...)}
}

type scaffoldFlags struct {
	model, upstream, keyEnv, root, schema, backup, record string
	context                                               stringList
	dryRun, noVerify, quiet                               bool
	timeout                                               time.Duration
	maxTokens                                             int
}

func runScaffold(ctx context.Context, e *env, args []string) error {
	fs := newFlags("scaffold")
	var f scaffoldFlags
	fs.StringVar(&f.model, "model", "", "")
	fs.StringVar(&f.upstream, "upstream", defaultUpstream, "")
	fs.StringVar(&f.keyEnv, "api-key-env", "CTXKIT_API_KEY", "")
	fs.StringVar(&f.root, "root", ".", "")
	fs.Var(&f.context, "context", "")
	fs.StringVar(&f.schema, "schema", "", "")
	fs.StringVar(&f.backup, "backup", "", "")
	fs.StringVar(&f.record, "record", "", "")
	fs.BoolVar(&f.dryRun, "dry-run", false, "")
	fs.BoolVar(&f.noVerify, "no-verify", false, "")
	fs.BoolVar(&f.quiet, "quiet", false, "")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("the task file is required: ctxkit scaffold FILE --model M")
	case len(pos) > 1:
		return usagef("unexpected argument %q: scaffold takes one task file", pos[1])
	case f.model == "":
		return usagef("--model is required: the model to ask for the plan")
	case f.dryRun && f.backup != "":
		return usagef("--dry-run and --backup do not go together")
	case f.timeout <= 0:
		return usagef("--timeout must be positive")
	case f.maxTokens < 0:
		return usagef("--max-tokens must not be negative")
	case f.keyEnv == "" || strings.ContainsAny(f.keyEnv, "= \x00"):
		return usagef("--api-key-env %q is not an environment variable name", f.keyEnv)
	}
	base, err := upstreamURL(f.upstream)
	if err != nil {
		return usagef("--upstream: %v", err)
	}
	var task []byte
	if pos[0] == "-" {
		task, err = io.ReadAll(io.LimitReader(e.stdin, maxTaskBytes+1))
	} else {
		task, err = readPlanFile(pos[0], maxTaskBytes+1)
	}
	switch {
	case err != nil:
		return fmt.Errorf("reading the task: %w", err)
	case len(task) > maxTaskBytes:
		return fmt.Errorf("the task is more than %d bytes", maxTaskBytes)
	case len(bytes.TrimSpace(task)) == 0:
		return fmt.Errorf("the task file %s is empty: say what to change", pos[0])
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
	abs, err := filepath.Abs(root.Name())
	if err != nil {
		abs = root.Name()
	}
	key := os.Getenv(f.keyEnv)
	s := &scaffolder{
		e:      e,
		f:      &f,
		root:   root,
		schema: schema,
		task:   string(task),
		base:   base,
		key:    key,
		text:   newUpstreamText(key),
		origin: &plan.Origin{Upstream: base, Model: f.model, TaskSHA256: plan.Checksum(task)},
	}
	started := time.Now().UTC()
	rec, err := s.run(ctx)
	// The failure is printed and recorded: whatever of the upstream's
	// text it quotes (an error body, a path from the plan) is cleaned.
	err = s.text.cleanError(err)
	if rec == nil {
		rec = &plan.Record{Started: started, Finished: time.Now().UTC(), Root: abs, Strategy: s.strategyName()}
		if err != nil {
			rec.Code, rec.Error = codeOf(err), oneLine(err.Error())
		}
	}
	rec.Started, rec.Origin = started, s.origin
	s.text.redactRecord(rec)
	if f.record != "" {
		if rerr := plan.AppendRecord(f.record, rec); rerr != nil && err == nil {
			err = fmt.Errorf("--record: %w", rerr)
		}
	}
	return err
}

// codeOf is a failure's record code.
func codeOf(err error) plan.Code {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	return plan.CodeOf(err)
}

// upstreamURL checks a base URL: http or https, a host, no credentials,
// query or fragment. It returns it without a trailing slash.
func upstreamURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q must be an http or https URL", raw)
	case u.Host == "":
		return "", fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("%q holds credentials: put the API key in the variable --api-key-env names", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q must be a base URL without query or fragment", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// scaffolder is one scaffold run.
type scaffolder struct {
	e      *env
	f      *scaffoldFlags
	root   *os.Root
	schema *plan.Schema
	task   string
	base   string
	key    string
	text   *upstreamText
	files  []contextFile
	origin *plan.Origin
}

type contextFile struct {
	path, sha256 string
	content      []byte
}

func (s *scaffolder) strategy() plan.Strategy {
	switch {
	case s.f.dryRun:
		return plan.DryRun{}
	case s.f.backup != "":
		return plan.WriteBackup{Suffix: s.f.backup}
	}
	return plan.Write{}
}

func (s *scaffolder) strategyName() string { return plan.StrategyName(s.strategy()) }

func (s *scaffolder) progress(format string, args ...any) {
	fmt.Fprintf(s.e.stderr, "ctxkit scaffold: "+format+"\n", args...)
}

// run does the whole flow. The record is nil when the run failed before
// a plan was found.
func (s *scaffolder) run(ctx context.Context) (*plan.Record, error) {
	if err := s.readContext(); err != nil {
		return nil, err
	}
	// The tables on standard output show paths, errors and command output
	// that the model's plan chose: they are cleaned as the echo is.
	stdout := newCleanWriter(s.e.stdout, s.text)
	defer stdout.Flush()
	client := newModelServer(s.base, s.key, s.text)
	reply, stop, err := s.ask(ctx, client)
	if err != nil {
		return nil, err
	}
	s.origin.ReplySHA256, s.origin.ReplyBytes, s.origin.Stop = plan.Checksum([]byte(reply)), len(reply), string(stop)
	raw, err := plan.Extract(reply)
	if strings.TrimSpace(reply) == "" {
		err = &plan.Error{Code: plan.CodeNoPlan, Msg: fmt.Sprintf("the reply holds no text (stop reason %q)", stop)}
	}
	if err != nil {
		if stop == chat.StopMaxTokens {
			err = fmt.Errorf("%w (the reply was cut at its token limit: raise --max-tokens)", err)
		}
		return nil, fmt.Errorf("plan: %w", err)
	}
	// A dry run first: every diff's outcome is shown before anything is
	// written, and nothing is written unless every diff applies.
	rec, err := applyPlan(ctx, s.root, raw, s.schema, plan.DryRun{}, false)
	if rec.Diffs != nil {
		printDiffs(stdout, rec)
		printSummary(stdout, rec)
	}
	if err != nil || s.f.dryRun {
		rec.Strategy = s.strategyName()
		return rec, err
	}
	verify := !s.f.noVerify
	rec, err = applyPlan(ctx, s.root, raw, s.schema, s.strategy(), verify)
	if rec.Diffs != nil {
		printSummary(stdout, rec)
		printCommands(stdout, rec)
	}
	if err == nil && verify && rec.Plan != nil && len(rec.Plan.Commands()) == 0 {
		s.progress("the plan has no post commands: nothing verified")
	}
	return rec, err
}

// readContext reads the --context files through the root: regular text
// files, each named once, within maxContextBytes together.
func (s *scaffolder) readContext() error {
	seen := map[string]bool{}
	total := 0
	for _, name := range s.f.context {
		p := filepath.ToSlash(filepath.Clean(name))
		if seen[p] {
			continue
		}
		seen[p] = true
		fail := func(format string, args ...any) error {
			return coded(codeContext, "--context %s: "+format, append([]any{name}, args...)...)
		}
		if err := plan.CheckPath(p); err != nil {
			return fail("%s", err.Msg)
		}
		fi, err := s.root.Lstat(p)
		switch {
		case err != nil:
			return fail("%v", err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fail("is a symbolic link: name the file it points to")
		case !fi.Mode().IsRegular():
			return fail("is not a regular file")
		case int64(total)+fi.Size() > maxContextBytes:
			return fail("the context files come to more than %d bytes: name fewer or smaller files", maxContextBytes)
		}
		b, err := s.root.ReadFile(p)
		if err != nil {
			return fail("%v", err)
		}
		if total += len(b); total > maxContextBytes {
			return fail("the context files come to more than %d bytes: name fewer or smaller files", maxContextBytes)
		}
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			return fail("holds a NUL byte or invalid UTF-8: only text files can be shown to the model")
		}
		cf := contextFile{path: p, sha256: plan.Checksum(b), content: b}
		s.files = append(s.files, cf)
		s.origin.Context = append(s.origin.Context, plan.FileSum{Path: cf.path, SHA256: cf.sha256})
	}
	return nil
}

// planContract is the system prompt: what a plan is and the rules its
// fields follow.
const planContract = `You change a software repository by answering with a plan: one JSON object in a ` + "```json" + ` code block. ctxkit checks the plan, applies every diff or none, then runs the plan's commands. The plan has this shape:

{"diffs":[{"path":"src/main.go","checksum":"<sha256 hex of the preimage>","unified_diff":"--- a/src/main.go\n+++ b/src/main.go\n@@ … @@\n…"}], "post":{"commands":[{"program":"go","args":["vet","./..."],"timeout_ms":60000}]}}

Rules:
- diffs: one entry per file to change, with all of that file's changes in one diff. "path" is relative to the repository root, uses forward slashes, never contains "..", and is never inside .git.
- checksum: the lowercase hex SHA-256 of the file's content before your diff, exactly as given with the file below. A file that does not exist yet has the SHA-256 of empty input: ` + emptySHA256 + `.
- unified_diff: a unified diff of that one file, as a JSON string (newlines written \n): a "--- a/PATH" and a "+++ b/PATH" header ("--- /dev/null" for a new file, "+++ /dev/null" for a deleted one), then hunks that each start with an "@@ -l,n +l,n @@" line. Copy context and removed lines exactly from the file (a leading space, "-" or "+" on every line), with about three lines of context around each change.
- post.commands: programs that check the result (build, vet, tests), run in order in the repository root, without a shell: "program" is the executable, "args" its arguments, "timeout_ms" at most 1800000. Leave "post" out when nothing can be checked.
- Answer with the plan only: no other JSON object in the reply.`

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// prompt is the canonical request: the contract as the system prompt, the
// task and the files as the user's message.
func (s *scaffolder) prompt() chat.Request {
	var b strings.Builder
	b.WriteString("Task:\n\n")
	b.WriteString(strings.TrimSpace(s.task))
	b.WriteString("\n\n")
	if len(s.files) == 0 {
		b.WriteString("No file contents are given. A file you create has the checksum of empty input.\n")
	} else {
		b.WriteString("Files of the repository (path, SHA-256 of the content, then the content):\n")
		for _, f := range s.files {
			fence := codeFence(f.content)
			fmt.Fprintf(&b, "\n### %s\nsha256: %s\n%s\n%s", f.path, f.sha256, fence, f.content)
			if len(f.content) > 0 && f.content[len(f.content)-1] != '\n' {
				b.WriteString("\n")
			}
			b.WriteString(fence + "\n")
		}
	}
	sys := chat.Str(planContract)
	return chat.Request{
		Model:     s.f.model,
		System:    &sys,
		Messages:  []chat.Message{{Role: chat.User, Content: chat.Str(b.String())}},
		MaxTokens: s.f.maxTokens,
		Stream:    true,
	}
}

// codeFence is a backtick fence longer than any run of backticks in b.
func codeFence(b []byte) string {
	longest, run := 0, 0
	for _, c := range b {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
