//go:build unix

package plan

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func needSh(t *testing.T) {
	t.Helper()
	for _, p := range []string{"sh", "sleep", "cat", "head"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
}

func TestVerify(t *testing.T) {
	needSh(t)
	dir := t.TempDir()
	cmds := []Command{
		{Program: "sh", Args: []string{"-c", `pwd; echo "$0" >&2; cat`, "arg with $HOME; rm -rf /"}},
		{Program: "sh", Args: []string{"-c", "exit 3"}},
		{Program: "sh", Args: []string{"-c", "echo never"}},
	}
	outs, err := Verify(context.Background(), dir, cmds, VerifyOptions{})
	if CodeOf(err) != CodeCommand || !strings.Contains(err.Error(), "post.commands[1]: sh -c \"exit 3\" exited with status 3") {
		t.Fatalf("got %v", err)
	}
	o := outs[0]
	// No shell expands the argument; stdin is closed (cat returns at once).
	if o.Status != CommandOK || o.ExitCode != 0 || strings.TrimSpace(o.Stdout) != dir || strings.TrimSpace(o.Stderr) != "arg with $HOME; rm -rf /" {
		t.Fatalf("%+v", o)
	}
	if outs[1].Status != CommandFailed || outs[1].ExitCode != 3 || outs[2].Status != CommandSkipped {
		t.Fatalf("%+v", outs[1:])
	}
	outs, _ = Verify(context.Background(), dir, cmds, VerifyOptions{KeepGoing: true})
	if outs[2].Status != CommandOK || outs[2].Stdout != "never\n" {
		t.Fatalf("%+v", outs[2])
	}
}

func TestVerifyNotStarted(t *testing.T) {
	for _, prog := range []string{"ctxkit-no-such-program", "../outside", "./missing.sh"} {
		outs, err := Verify(context.Background(), t.TempDir(), []Command{{Program: prog}}, VerifyOptions{})
		if CodeOf(err) != CodeCommandStart || outs[0].Status != CommandNotStarted || outs[0].ExitCode != -1 {
			t.Errorf("%s: got %v %+v", prog, err, outs[0])
		}
	}
}

func TestVerifyOutputCap(t *testing.T) {
	needSh(t)
	// 3 MB on stdout into a 1 KiB cap: the command is drained to the end
	// and exits normally, never blocked or killed by a broken pipe.
	outs, err := Verify(context.Background(), t.TempDir(), []Command{{Program: "head", Args: []string{"-c", "3000000", "/dev/zero"}}}, VerifyOptions{OutputCap: 1024})
	if err != nil {
		t.Fatal(err)
	}
	o := outs[0]
	if len(o.Stdout) != 1024 || !o.StdoutTruncated || o.StdoutBytes != 3000000 || o.StderrTruncated {
		t.Fatalf("stdout %d bytes, truncated %v, total %d", len(o.Stdout), o.StdoutTruncated, o.StdoutBytes)
	}
}

// gone reports whether a process no longer runs (absent, or a zombie
// waiting for a parent that does not reap it).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// TestVerifyTimeoutKillsGrandchildren runs a command whose child sleeps
// holding stdout: the timeout returns promptly and the grandchild is
// killed with its group.
func TestVerifyTimeoutKillsGrandchildren(t *testing.T) {
	needSh(t)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	start := time.Now()
	cmd := Command{Program: "sh", Args: []string{"-c", "sleep 30 & echo $!; trap '' TERM; sleep 30"}, TimeoutMS: 300}
	outs, err := Verify(context.Background(), t.TempDir(), []Command{cmd}, VerifyOptions{Grace: 300 * time.Millisecond})
	elapsed := time.Since(start)
	if CodeOf(err) != CodeCommand || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("got %v", err)
	}
	o := outs[0]
	if !o.TimedOut || o.Status != CommandTimedOut {
		t.Fatalf("%+v", o)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("Verify returned after %s", elapsed)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(o.Stdout))
	if err != nil {
		t.Fatalf("stdout %q", o.Stdout)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestVerifyCancel(t *testing.T) {
	needSh(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	outs, err := Verify(ctx, t.TempDir(), []Command{{Program: "sleep", Args: []string{"30"}}, {Program: "sleep", Args: []string{"30"}}}, VerifyOptions{})
	if err != context.DeadlineExceeded || time.Since(start) > 5*time.Second {
		t.Fatalf("got %v after %s", err, time.Since(start))
	}
	if outs[0].TimedOut || outs[1].Status != CommandSkipped {
		t.Fatalf("%+v", outs)
	}
}

// TestAllowedEnv: the commands see Go's own variables, the locale and
// PATH, never a secret whose name merely starts like them.
func TestAllowedEnv(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "GOPATH=/g", "GOFLAGS=-mod=mod", "GOCACHE=/c",
		"CGO_ENABLED=0", "GOTOOLCHAIN=local", "GODEBUG=x=1",
		"GOOGLE_API_KEY=secret", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "GOPASS_HOMEDIR=/p",
		"GOTRUE_JWT_SECRET=s", "CGO_SECRET=s", "AWS_SECRET_ACCESS_KEY=s", "GO=1"}
	got := strings.Join(allowedEnv(in), " ")
	want := "PATH=/bin HOME=/h LC_ALL=C GOPATH=/g GOFLAGS=-mod=mod GOCACHE=/c CGO_ENABLED=0 GOTOOLCHAIN=local GODEBUG=x=1"
	if got != want {
		t.Fatalf("allowedEnv = %q, want %q", got, want)
	}
}
