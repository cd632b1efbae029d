package openloop

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Build builds the main packages pkgs (import paths) into dir with the go
// command on PATH, in one invocation, and returns the path of each
// binary, in the order of pkgs.
func Build(tb testing.TB, dir string, pkgs ...string) []string {
	tb.Helper()
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	bins := make([]string, len(pkgs))
	for i, p := range pkgs {
		bins[i] = filepath.Join(dir, path.Base(p))
	}
	return bins
}

// Process is a program under test, started by Start and stopped when the
// test ends.
type Process struct {
	Name  string
	cmd   *exec.Cmd
	stdin io.Closer
	log   string        // its standard error
	done  chan struct{} // closed once it has exited
}

// startTimeout bounds how long a process may take to say it is ready.
const startTimeout = 60 * time.Second

// Start runs bin with args (and env added to the test's environment) and
// waits until a line of its standard output matches ready; it returns the
// process and that line's submatches. Its standard error goes to a file,
// shown if it fails to start. Its standard input stays open until the
// test ends, so a program may take the end of its input as the sign to
// exit; the process is killed then in any case.
func Start(tb testing.TB, name, bin string, args, env []string, ready *regexp.Regexp) (*Process, []string) {
	tb.Helper()
	p := &Process{Name: name, log: filepath.Join(tb.TempDir(), name+".stderr")}
	logf, err := os.Create(p.log)
	if err != nil {
		tb.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = logf
	p.cmd.SysProcAttr = sysProcAttr()
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	p.stdin, p.done = stdin, make(chan struct{})
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		stdin.Close()
		p.cmd.Process.Kill()
		<-p.done
	})
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 4096), 64<<10)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout) // a line too long: keep the pipe from filling
	}()
	timeout := time.After(startTimeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				tb.Fatalf("%s exited before it was ready:\n%s", name, p.stderrTail())
			}
			if m := ready.FindStringSubmatch(line); m != nil {
				go func() {
					for range lines {
					}
				}()
				return p, m
			}
		case <-timeout:
			tb.Fatalf("%s did not say it was ready (%s) within %s:\n%s", name, ready, startTimeout, p.stderrTail())
		}
	}
}

// stopGrace is how long Stop waits for a process to exit by itself.
const stopGrace = 15 * time.Second

// Stop asks the process to end as a user would (SIGTERM, and the end of
// its standard input), kills it if it has not exited within 15 s, and
// returns once it has exited. A program that keeps state on disk, as
// 'ctxkit serve' does, can then be started again on the same state.
func (p *Process) Stop() {
	p.stdin.Close()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// stderrTail is the end of what the process wrote to standard error.
func (p *Process) stderrTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// PeakRSS is the process's peak resident set size in bytes since it
// started (VmHWM in /proc/<pid>/status; Linux only).
func (p *Process) PeakRSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0, fmt.Errorf("%s: peak RSS: %w", p.Name, err)
	}
	n, err := ParseVmHWM(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.Name, err)
	}
	return n, nil
}

// maxStatus bounds the /proc status text ParseVmHWM reads.
const maxStatus = 64 << 10

// ParseVmHWM reads the VmHWM line of a /proc/<pid>/status text ("VmHWM:
// 30184 kB") and returns it in bytes.
func ParseVmHWM(status []byte) (int64, error) {
	if len(status) > maxStatus {
		return 0, fmt.Errorf("status text of %d bytes: more than %d", len(status), maxStatus)
	}
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("VmHWM line %q: want a number of kB", bytes.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return 0, fmt.Errorf("VmHWM line %q: want a number of kB", bytes.TrimSpace(line))
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmHWM line in the status text")
}
