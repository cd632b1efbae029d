// Package gitfiles lists the files git tracks in a directory without
// letting the directory's own git configuration run anything: no hooks,
// no fsmonitor, no lazy fetch from a promisor remote, no transport at all,
// and no settings from the environment, the system or the user.
package gitfiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxBytes = 64 << 20
)

// Options bound one listing. The zero value uses the defaults.
type Options struct {
	Timeout  time.Duration // the whole run of git, after which its process group is killed
	MaxBytes int           // output of git ls-files
}

// ErrTooLarge is returned when git lists more than Options.MaxBytes.
var ErrTooLarge = errors.New("git ls-files: too many file names")

// args are git's arguments: settings that override anything the
// repository's config says, then the listing. --sparse keeps the
// directories outside a sparse checkout as they are instead of expanding
// them, which could need objects git does not have.
var args = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "protocol.allow=never",
	"-c", "core.untrackedCache=false",
	"ls-files", "-z", "--cached", "--sparse",
}

// List runs git ls-files in dir, a repository of its own (git does not
// look above dir for one), and returns the tracked files' paths (slash
// separated, relative to dir). Directory entries of a sparse index are
// left out.
func List(ctx context.Context, dir string, o Options) ([]string, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "ctxkit-git-home-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = abs
	cmd.Env = Env(abs, home)
	cmd.Stdin = nil
	out := &capped{max: o.MaxBytes}
	var stderr capped
	stderr.max = 4 << 10
	cmd.Stdout, cmd.Stderr = out, &stderr
	cmd.WaitDelay = time.Second
	inGroup(cmd)
	err = cmd.Run()
	killGroup(cmd)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git ls-files: no answer within %s", o.Timeout)
		}
		if msg := strings.TrimSpace(stderr.buf.String()); msg != "" {
			return nil, fmt.Errorf("git ls-files: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	if out.over {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, o.MaxBytes)
	}
	var files []string
	for _, f := range strings.Split(out.buf.String(), "\x00") {
		if f != "" && !strings.HasSuffix(f, "/") {
			files = append(files, f)
		}
	}
	return files, nil
}

// Env is the whole environment git runs with: PATH, an empty HOME, no
// system or global config, no lazy fetch, no prompt, no optional locks,
// and a ceiling just above dir. Nothing else is inherited (in particular
// no GIT_* variable).
func Env(dir, home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_NO_LAZY_FETCH=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
		"LC_ALL=C",
	}
}

// capped keeps up to max bytes and notes whether more were written.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.max - c.buf.Len(); len(p) > room {
		c.over = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}
