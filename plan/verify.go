package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// VerifyOptions tune Verify. The zero value keeps 64 KiB of each stream,
// gives a command 2 s between SIGTERM and SIGKILL, passes an allowlisted
// environment and stops at the first failure.
type VerifyOptions struct {
	// OutputCap is how many bytes of each stream an outcome keeps; the
	// rest is read and counted, never blocking the command.
	OutputCap int
	// Grace is the time between SIGTERM and SIGKILL to a timed-out
	// command's process group.
	Grace time.Duration
	// Env is the commands' environment. Nil passes only PATH, HOME, USER,
	// LOGNAME, LANG, LC_*, TMPDIR, TZ and the GO*/CGO_* variables of the
	// current process.
	Env []string
	// KeepGoing runs every command even after one fails.
	KeepGoing bool
}

// Command statuses.
const (
	CommandOK         = "ok"
	CommandFailed     = "failed"
	CommandTimedOut   = "timed_out"
	CommandNotStarted = "not_started"
	CommandSkipped    = "skipped"
)

// CommandOutcome is what one post command did.
type CommandOutcome struct {
	Index   int      `json:"index"`
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
	// Status is ok, failed, timed_out, not_started or skipped.
	Status string `json:"status"`
	// ExitCode is -1 when the command was killed by a signal or not run.
	ExitCode        int       `json:"exit_code"`
	Signal          string    `json:"signal,omitempty"`
	TimedOut        bool      `json:"timed_out"`
	Started         time.Time `json:"started,omitzero"`
	DurationMS      int64     `json:"duration_ms"`
	Stdout          string    `json:"stdout"`
	Stderr          string    `json:"stderr"`
	StdoutBytes     int64     `json:"stdout_bytes"`
	StderrBytes     int64     `json:"stderr_bytes"`
	StdoutTruncated bool      `json:"stdout_truncated,omitempty"`
	StderrTruncated bool      `json:"stderr_truncated,omitempty"`
	Error           string    `json:"error,omitempty"`
}

// Verify runs cmds one after another in dir: without a shell, with stdin
// closed, each in its own process group. A command's timeout (its
// timeout_ms, DefaultTimeout when 0) sends SIGTERM to the whole group,
// grandchildren included, then SIGKILL after the grace period; whatever a
// command leaves running in its group when it exits is killed too. The
// outcomes hold one entry per command (skipped after a failure unless
// KeepGoing); the error is the first failure, or ctx's error.
func Verify(ctx context.Context, dir string, cmds []Command, opts VerifyOptions) ([]CommandOutcome, error) {
	if opts.OutputCap <= 0 {
		opts.OutputCap = 64 << 10
	}
	if opts.Grace <= 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.Env == nil {
		opts.Env = allowedEnv(os.Environ())
	}
	outs := make([]CommandOutcome, len(cmds))
	var first error
	for i, c := range cmds {
		o := &outs[i]
		*o = CommandOutcome{Index: i, Program: c.Program, Args: c.Args, ExitCode: -1}
		if ctx.Err() != nil || (first != nil && !opts.KeepGoing) {
			o.Status = CommandSkipped
			continue
		}
		run(ctx, dir, c, opts, o)
		if o.Status != CommandOK && first == nil {
			first = &Error{Code: CodeCommand, Path: fmt.Sprintf("post.commands[%d]", i), Msg: describe(c, o)}
			if o.Status == CommandNotStarted {
				first.(*Error).Code = CodeCommandStart
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return outs, err
	}
	return outs, first
}

// String is the command line, with arguments that hold whitespace or
// quotes (or are empty) quoted, for messages: nothing runs it through a
// shell.
func (c Command) String() string {
	var b strings.Builder
	for i, a := range append([]string{c.Program}, c.Args...) {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "" || strings.ContainsAny(a, " \t\n\r\"'") {
			a = strconv.Quote(a)
		}
		b.WriteString(a)
	}
	return b.String()
}

// describe says in one line what went wrong with a command.
func describe(c Command, o *CommandOutcome) string {
	name := c.String()
	if len(name) > 80 {
		name = name[:77] + "..."
	}
	switch o.Status {
	case CommandTimedOut:
		return fmt.Sprintf("%s timed out after %d ms", name, o.DurationMS)
	case CommandNotStarted:
		return fmt.Sprintf("%s did not start: %s", name, o.Error)
	case CommandFailed:
		if o.Signal != "" {
			return fmt.Sprintf("%s was killed by %s", name, o.Signal)
		}
		if o.ExitCode < 0 {
			return fmt.Sprintf("%s failed: %s", name, o.Error)
		}
		return fmt.Sprintf("%s exited with status %d", name, o.ExitCode)
	}
	return name
}

// goEnv is the environment variables of the Go toolchain (and cgo) that
// verification commands see, named one by one: a prefix would also pass
// GOOGLE_API_KEY or GOPASS_* secrets.
var goEnv = map[string]bool{
	"GOPATH": true, "GOROOT": true, "GOBIN": true, "GOCACHE": true, "GOMODCACHE": true, "GOCACHEPROG": true,
	"GOENV": true, "GOWORK": true, "GOTMPDIR": true, "GOFLAGS": true, "GOTOOLCHAIN": true, "GOTELEMETRY": true,
	"GOPROXY": true, "GONOPROXY": true, "GONOSUMDB": true, "GONOSUMCHECK": true, "GOPRIVATE": true,
	"GOSUMDB": true, "GOINSECURE": true, "GOVCS": true, "GOAUTH": true,
	"GOOS": true, "GOARCH": true, "GO386": true, "GOAMD64": true, "GOARM": true, "GOARM64": true,
	"GOMIPS": true, "GOMIPS64": true, "GOPPC64": true, "GORISCV64": true, "GOWASM": true,
	"GOEXPERIMENT": true, "GODEBUG": true, "GOMAXPROCS": true, "GOGC": true, "GOMEMLIMIT": true,
	"GOTRACEBACK": true, "GOCOVERDIR": true, "GOFIPS140": true,
	"CGO_ENABLED": true, "CGO_CFLAGS": true, "CGO_CPPFLAGS": true, "CGO_CXXFLAGS": true,
	"CGO_FFLAGS": true, "CGO_LDFLAGS": true, "CC": true, "CXX": true, "PKG_CONFIG": true,
}

func allowedEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "HOME", k == "USER", k == "LOGNAME", k == "LANG", k == "TMPDIR", k == "TZ",
			strings.HasPrefix(k, "LC_"), goEnv[k]:
			out = append(out, kv)
		}
	}
	return out
}

// resolve finds the program: a bare name through PATH (never through a
// relative PATH entry), a name with a slash relative to dir (inside it)
// or absolute.
func resolve(dir, program string) (string, error) {
	if !strings.ContainsRune(program, '/') {
		p, err := exec.LookPath(program)
		if errors.Is(err, exec.ErrDot) {
			return "", fmt.Errorf("%s resolves through a relative PATH entry", program)
		}
		return p, err
	}
	if filepath.IsAbs(program) {
		return program, nil
	}
	if !filepath.IsLocal(filepath.FromSlash(program)) {
		return "", fmt.Errorf("%s leaves the root", program)
	}
	return filepath.Join(dir, filepath.FromSlash(program)), nil
}

// capture keeps the first max bytes written to it and counts the rest.
type capture struct {
	max   int
	buf   []byte
	total int64
}

func (c *capture) drain(r *os.File) {
	b := make([]byte, 32<<10)
	for {
		n, err := r.Read(b)
		c.total += int64(n)
		if keep := min(n, c.max-len(c.buf)); keep > 0 {
			c.buf = append(c.buf, b[:keep]...)
		}
		if err != nil {
			return
		}
	}
}

func run(ctx context.Context, dir string, c Command, opts VerifyOptions, o *CommandOutcome) {
	timeout := time.Duration(c.TimeoutMS) * time.Millisecond
	if c.TimeoutMS <= 0 {
		timeout = DefaultTimeout * time.Millisecond
	}
	prog, err := resolve(dir, c.Program)
	if err != nil {
		o.Status, o.Error = CommandNotStarted, err.Error()
		return
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, prog, c.Args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, opts.Env, nil
	setGroup(cmd)
	outR, outW, err := os.Pipe()
	if err != nil {
		o.Status, o.Error = CommandNotStarted, err.Error()
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		o.Status, o.Error = CommandNotStarted, err.Error()
		return
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var (
		mu   sync.Mutex
		kill *time.Timer
	)
	cmd.Cancel = func() error {
		signalGroup(cmd.Process, false)
		mu.Lock()
		kill = time.AfterFunc(opts.Grace, func() { signalGroup(cmd.Process, true) })
		mu.Unlock()
		return nil
	}
	cmd.WaitDelay = opts.Grace + time.Second
	o.Started = time.Now().UTC()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		o.Status, o.Error = CommandNotStarted, err.Error()
		return
	}
	stdout, stderr := &capture{max: opts.OutputCap}, &capture{max: opts.OutputCap}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); stdout.drain(outR) }()
	go func() { defer wg.Done(); stderr.drain(errR) }()
	err = cmd.Wait()
	o.DurationMS = time.Since(o.Started).Milliseconds()
	// What the command left running in its group goes with it.
	signalGroup(cmd.Process, true)
	mu.Lock()
	if kill != nil {
		kill.Stop()
	}
	mu.Unlock()
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(opts.Grace):
		// A process outside the group holds a pipe: stop reading.
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	o.Stdout, o.StdoutBytes, o.StdoutTruncated = string(stdout.buf), stdout.total, stdout.total > int64(len(stdout.buf))
	o.Stderr, o.StderrBytes, o.StderrTruncated = string(stderr.buf), stderr.total, stderr.total > int64(len(stderr.buf))
	if ps := cmd.ProcessState; ps != nil {
		o.ExitCode = ps.ExitCode()
		o.Signal = signalOf(ps)
	}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		o.Status, o.TimedOut = CommandTimedOut, true
		o.Error = fmt.Sprintf("timed out after %s", timeout)
	case err == nil:
		o.Status = CommandOK
	default:
		o.Status, o.Error = CommandFailed, err.Error()
	}
}
