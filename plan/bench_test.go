package plan

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// benchFile is one modified file of the history corpus.
type benchFile struct {
	path    string
	pre     []byte
	diff    string
	created bool // the diff creates the file
}

// historyFiles is every text file added or modified between HEAD~k and
// HEAD of the repository at dir (at most max files), with git's diff of
// it.
func historyFiles(b *testing.B, dir string, k, max int) []benchFile {
	git := func(stdin io.Reader, args ...string) []byte {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "core.quotePath=false"}, args...)...)
		cmd.Stdin = stdin
		out, err := cmd.Output()
		if err != nil {
			return nil
		}
		return out
	}
	count, _ := strconv.Atoi(strings.TrimSpace(string(git(nil, "rev-list", "--count", "HEAD"))))
	if count < 2 {
		return nil
	}
	base := "HEAD~" + strconv.Itoa(min(k, count-1))
	d := git(nil, "diff", "--no-color", "--no-renames", "--no-ext-diff", "--diff-filter=AM", base, "HEAD")
	var files []benchFile
	var reqs bytes.Buffer
	for _, part := range strings.Split(string(d), "\ndiff --git ") {
		if !strings.HasPrefix(part, "diff --git ") {
			part = "diff --git " + part
		}
		part = strings.TrimSuffix(part, "\n") + "\n"
		first, _, _ := strings.Cut(part, "\n")
		f := strings.Fields(first)
		if len(f) != 4 || !strings.HasPrefix(f[2], "a/") || f[2][2:] != f[3][2:] || !strings.Contains(part, "\n@@ ") || strings.Contains(part, "\nBinary files") {
			continue
		}
		files = append(files, benchFile{path: f[2][2:], diff: part})
		if strings.Contains(part, "\n--- /dev/null\n") {
			files[len(files)-1].created = true
		} else {
			fmt.Fprintf(&reqs, "%s:%s\n", base, f[2][2:])
		}
		if len(files) == max {
			break
		}
	}
	r := bufio.NewReader(bytes.NewReader(git(&reqs, "cat-file", "--batch")))
	var text []benchFile
	for _, f := range files {
		if f.created {
			text = append(text, f)
			continue
		}
		hdr, err := r.ReadString('\n')
		fields := strings.Fields(hdr)
		if err != nil || len(fields) != 3 {
			return nil
		}
		size, _ := strconv.Atoi(fields[2])
		blob := make([]byte, size+1)
		if _, err := io.ReadFull(r, blob); err != nil {
			return nil
		}
		f.pre = blob[:size]
		if bytes.IndexByte(f.pre, 0) < 0 && utf8.Valid(f.pre) {
			text = append(text, f)
		}
	}
	return text
}

// syntheticFiles diffs generated files with git diff --no-index, for a
// checkout without history.
func syntheticFiles(b *testing.B, n int) []benchFile {
	dir := b.TempDir()
	var files []benchFile
	for i := range n {
		var pre, post strings.Builder
		for j := range 400 {
			line := fmt.Sprintf("\tvalue%d := compute(%d, %d)\n", j, i, j)
			pre.WriteString(line)
			if j%97 == 13 {
				line = fmt.Sprintf("\tvalue%d := recompute(%d, %d)\n", j, i, j)
			}
			post.WriteString(line)
		}
		name := fmt.Sprintf("f%03d.go", i)
		for side, content := range map[string]string{"a": pre.String(), "b": post.String()} {
			if err := os.MkdirAll(filepath.Join(dir, side), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, side, name), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		cmd := exec.Command("git", "diff", "--no-index", "--no-color", "a/"+name, "b/"+name)
		cmd.Dir = dir
		out, _ := cmd.Output()
		files = append(files, benchFile{path: name, pre: []byte(pre.String()), diff: string(out)})
	}
	return files
}

// noSyncApplyEnv, set in its environment, has this test binary apply a
// plan without syncs instead of running tests: arguments PLAN.json and
// ROOT; none to start and do nothing.
const noSyncApplyEnv = "CTXKIT_PLAN_BENCH_NOSYNC"

func TestMain(m *testing.M) {
	if os.Getenv(noSyncApplyEnv) != "" {
		os.Exit(noSyncApply(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// noSyncApply does what ctxkit apply PLAN.json --root ROOT does (the
// plan's hash taken alongside, the same collector setting, a line of
// output), with Options.noSync: the same work as ctxkit's apply without
// the syncs, in a process that starts in its own time (nosync-start-ms).
func noSyncApply(args []string) int {
	if len(args) == 0 {
		return 0
	}
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: PLAN.json ROOT")
		return 2
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sum := make(chan string, 1)
	go func() { sum <- Checksum(raw) }()
	p, err := Parse(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root, err := os.OpenRoot(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer root.Close()
	rep, err := Apply(context.Background(), root, p, Options{Strategy: Write{}, noSync: true})
	<-sum
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%d diffs, %d failed, written %v\n", len(rep.Diffs), rep.Failed(), rep.Written)
	return 0
}

// BenchmarkApplyVsGitApply runs the ctxkit binary (built once) and git
// apply as whole processes on the same N diffs of this repository's
// history (generated files without history), side by side, and reports
// both times and their ratio; also the same apply without its syncs, run
// by this test binary (what durability costs: git apply does not sync),
// and the time each process takes to start and do nothing (ctxkit
// version, git --version, the test binary without arguments).
// Where the temporary directory is can be chosen with TMPDIR: the ratio
// depends on the file system (creating files is costly on ext4 without a
// journal after many files were removed, and costs both tools alike).
func BenchmarkApplyVsGitApply(b *testing.B) {
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s is not installed", tool)
		}
	}
	moduleRoot, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	files := historyFiles(b, moduleRoot, 40, 400)
	source := "history"
	if len(files) < 10 {
		files, source = syntheticFiles(b, 100), "generated"
	}
	tmp := b.TempDir()
	bin := filepath.Join(tmp, "ctxkit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ctxkit")
	build.Dir = moduleRoot
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	// This test binary, run as an apply without syncs (TestMain), tells
	// the cost of durability from the rest.
	binNoSync, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	p := &Plan{}
	var all strings.Builder
	for _, f := range files {
		p.Diffs = append(p.Diffs, Diff{Path: f.path, Checksum: Checksum(f.pre), UnifiedDiff: f.diff})
		all.WriteString(f.diff)
	}
	planJSON, _ := json.Marshal(p)
	planFile, diffFile := filepath.Join(tmp, "plan.json"), filepath.Join(tmp, "all.diff")
	if err := os.WriteFile(planFile, planJSON, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(diffFile, []byte(all.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	// Each run gets trees of its own, removed only at the end: removing
	// a tree between runs would have the next runs pay for it (ext4
	// without a journal skips recently freed inodes when it creates
	// files, looking at each).
	reset := func(dir string) {
		for _, f := range files {
			if f.created {
				continue
			}
			name := filepath.Join(dir, filepath.FromSlash(f.path))
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(name, f.pre, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	run := func(dir string, name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if name == binNoSync {
			cmd.Env = append(os.Environ(), noSyncApplyEnv+"=1")
		}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s: %v\n%s", name, err, out)
		}
		return d
	}
	var treeA, treeB, treeC string
	var ctxkitTime, gitTime, noSyncTime, ctxkitStart, gitStart, noSyncStart time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		trees := filepath.Join(tmp, "run"+strconv.Itoa(n))
		treeA, treeB, treeC = filepath.Join(trees, "ctxkit"), filepath.Join(trees, "git"), filepath.Join(trees, "nosync")
		reset(treeA)
		reset(treeB)
		reset(treeC)
		b.StartTimer()
		// Alternate which runs first: the file system is slower right
		// after the trees were reset (ext4 checks recently freed inodes
		// when it creates files).
		if n%2 == 0 {
			ctxkitTime += run(treeA, bin, "apply", planFile, "--root", ".")
			gitTime += run(treeB, "git", "apply", "--whitespace=nowarn", diffFile)
		} else {
			gitTime += run(treeB, "git", "apply", "--whitespace=nowarn", diffFile)
			ctxkitTime += run(treeA, bin, "apply", planFile, "--root", ".")
		}
		noSyncTime += run(treeC, binNoSync, planFile, ".")
		// The floor: starting the process and doing nothing.
		ctxkitStart += run(tmp, bin, "version")
		gitStart += run(tmp, "git", "--version")
		noSyncStart += run(tmp, binNoSync)
		n++
	}
	b.StopTimer()
	// Both trees now hold the same result.
	for _, f := range files {
		x, _ := os.ReadFile(filepath.Join(treeA, f.path))
		y, _ := os.ReadFile(filepath.Join(treeB, f.path))
		if !bytes.Equal(x, y) {
			b.Fatalf("%s: ctxkit and git apply disagree", f.path)
		}
	}
	b.ReportMetric(float64(len(files)), "diffs")
	b.ReportMetric(float64(ctxkitTime.Microseconds())/float64(n)/1000, "ctxkit-ms")
	b.ReportMetric(float64(gitTime.Microseconds())/float64(n)/1000, "git-apply-ms")
	b.ReportMetric(float64(ctxkitTime)/float64(gitTime), "ctxkit/git")
	b.ReportMetric(float64(noSyncTime.Microseconds())/float64(n)/1000, "ctxkit-nosync-ms")
	b.ReportMetric(float64(noSyncTime)/float64(gitTime), "ctxkit-nosync/git")
	b.ReportMetric(float64(ctxkitStart.Microseconds())/float64(n)/1000, "ctxkit-start-ms")
	b.ReportMetric(float64(gitStart.Microseconds())/float64(n)/1000, "git-start-ms")
	b.ReportMetric(float64(noSyncStart.Microseconds())/float64(n)/1000, "nosync-start-ms")
	b.Logf("%d %s diffs", len(files), source)
}

// BenchmarkParse decodes a plan of the history corpus (generated files
// without history) with Parse and, as the baseline in the same run, with
// encoding/json into the same types.
func BenchmarkParse(b *testing.B) {
	moduleRoot, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	files := historyFiles(b, moduleRoot, 40, 400)
	if len(files) < 10 {
		files = syntheticFiles(b, 100)
	}
	p := &Plan{}
	for _, f := range files {
		p.Diffs = append(p.Diffs, Diff{Path: f.path, Checksum: Checksum(f.pre), UnifiedDiff: f.diff})
	}
	raw, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := Parse(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("x-unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var q Plan
			if err := json.Unmarshal(raw, &q); err != nil {
				b.Fatal(err)
			}
		}
	})
}
