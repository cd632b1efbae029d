package main_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startupRounds is how many interleaved rounds one benchmark iteration
// runs: enough for a median on its own, since CI runs each benchmark
// once, and few enough to stay within a few seconds on a busy machine.
const startupRounds = 3

// startupFiles is the size of the many-diff plan.
const startupFiles = 100

// BenchmarkStartup runs whole ctxkit processes against git doing the same
// work, interleaved in the same run so that the load of the machine falls
// on both, and reports the ratios of their median wall times:
//
//	version-x      ctxkit version                 / git --version
//	apply1-x       ctxkit apply (one diff, write) / git apply
//	check100-x     ctxkit apply --dry-run (100)   / git apply --check
//	write100-x     ctxkit apply (100, durable)    / git apply; sync FILES
//	floor-x        ctxkit's dependencies alone    / git --version
//
// The last row is a binary that imports every package ctxkit links,
// other than ctxkit's own, for their initialisation, and does nothing:
// the start no change to ctxkit's own code can go below.
// ctxkit makes its writes durable (fsync or syncfs) and git does not, so
// the last row adds a sync of the same files to git's side. Each row also
// reports the median of ctxkit's minor page faults (what a short process
// pays most for on a virtual machine, and steady however loaded it is).
//
// CTXKIT_STARTUP_BASELINE names another ctxkit binary (an earlier build)
// to run in the same rounds, interleaved with the two: its rows end in
// -base-x (its time over git's) and -base-faults, so that a change is
// judged against the same load.
func BenchmarkStartup(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("git is not installed: the start-up ratios are measured against it")
	}
	syncBin, err := exec.LookPath("sync")
	if err != nil {
		b.Skip("sync is not installed: the durable write ratio is measured against git apply and sync")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "ctxkit")
	// Built as the README installs it: without cgo, a static binary.
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	floor := buildDepsFloor(b, dir)
	one := newStartupFixture(b, filepath.Join(dir, "one"), 1)
	many := newStartupFixture(b, filepath.Join(dir, "many"), startupFiles)
	env := append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+dir, "LC_ALL=C")

	type side struct {
		argv  []string
		then  []string // run after argv, timed with it
		cwd   string
		reset *startupFixture // files restored before each run, not timed
	}
	type pair struct {
		name          string
		ctxkit, other side
	}
	base := os.Getenv("CTXKIT_STARTUP_BASELINE")
	if base != "" {
		if _, err := os.Stat(base); err != nil {
			b.Fatalf("CTXKIT_STARTUP_BASELINE: %v", err)
		}
	}
	pairs := []pair{
		{"version-x", side{argv: []string{bin, "version"}}, side{argv: []string{git, "--version"}}},
		{"apply1-x",
			side{argv: []string{bin, "apply", one.plan, "--root", one.ctxkitRoot}, reset: one},
			side{argv: []string{git, "apply", one.patch}, cwd: one.gitRoot, reset: one}},
		{"check100-x",
			side{argv: []string{bin, "apply", many.plan, "--root", many.ctxkitRoot, "--dry-run"}, reset: many},
			side{argv: []string{git, "apply", "--check", many.patch}, cwd: many.gitRoot, reset: many}},
		{"write100-x",
			side{argv: []string{bin, "apply", many.plan, "--root", many.ctxkitRoot}, reset: many},
			side{argv: []string{git, "apply", many.patch}, then: append([]string{syncBin}, many.names...), cwd: many.gitRoot, reset: many}},
		{"floor-x", side{argv: []string{floor}}, side{argv: []string{git, "--version"}}},
	}

	// run runs s and returns its wall time and the minor page faults of
	// its first command.
	run := func(s side) (time.Duration, int64) {
		if s.reset != nil {
			s.reset.restore(b)
		}
		var d time.Duration
		var faults int64
		for k, argv := range [][]string{s.argv, s.then} {
			if argv == nil {
				continue
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir, cmd.Env = s.cwd, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			d += time.Since(start)
			if err != nil {
				b.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.Bytes())
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && k == 0 {
				faults = ru.Minflt
			}
		}
		return d, faults
	}
	// Both tools must produce the same files before their times mean
	// anything.
	for _, f := range []*startupFixture{one, many} {
		run(side{argv: []string{bin, "apply", f.plan, "--root", f.ctxkitRoot}, reset: f})
		run(side{argv: []string{git, "apply", f.patch}, cwd: f.gitRoot})
		f.sameResult(b)
		if base != "" {
			run(side{argv: []string{base, "apply", f.plan, "--root", f.ctxkitRoot}, reset: f})
			run(side{argv: []string{git, "apply", f.patch}, cwd: f.gitRoot})
			f.sameResult(b)
		}
	}

	// Per pair, per side (ctxkit, git, the baseline): times and faults.
	const ctxkitSide, gitSide, baseSide = 0, 1, 2
	times := make([][3][]time.Duration, len(pairs))
	faults := make([][3][]int64, len(pairs))
	round := 0
	for b.Loop() {
		for range startupRounds {
			for i, p := range pairs {
				sides := []side{p.ctxkit, p.other}
				if base != "" {
					s := p.ctxkit
					s.argv = append([]string{base}, s.argv[1:]...)
					sides = append(sides, s)
				}
				// Rotate which goes first, so none always runs on the
				// caches another warmed.
				for k := range sides {
					j := (k + round) % len(sides)
					d, f := run(sides[j])
					times[i][j] = append(times[i][j], d)
					faults[i][j] = append(faults[i][j], f)
				}
			}
			round++
		}
	}
	for i, p := range pairs {
		c, o := startupMedian(times[i][ctxkitSide]), startupMedian(times[i][gitSide])
		row := strings.TrimSuffix(p.name, "-x")
		if o > 0 {
			b.ReportMetric(float64(c)/float64(o), p.name)
		}
		b.ReportMetric(float64(c.Microseconds()), row+"-ctxkit-µs")
		b.ReportMetric(float64(o.Microseconds()), row+"-git-µs")
		b.ReportMetric(float64(startupMedian(faults[i][ctxkitSide])), row+"-faults")
		if base != "" {
			if bt := startupMedian(times[i][baseSide]); o > 0 {
				b.ReportMetric(float64(bt)/float64(o), row+"-base-x")
			}
			b.ReportMetric(float64(startupMedian(faults[i][baseSide])), row+"-base-faults")
		}
	}
}

// buildDepsFloor builds, into dir, a static binary whose main imports
// every package ctxkit links but its own, and does nothing. Its source is
// given to the build as an overlay: nothing is written into the tree.
func buildDepsFloor(b *testing.B, dir string) string {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		b.Fatalf("go list: %v", err)
	}
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range strings.Fields(string(out)) {
		internal := p == "internal" || strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal")
		if strings.HasPrefix(p, "github.com/ctxkit/") || internal || strings.HasPrefix(p, "vendor/") ||
			p == "unsafe" || p == "C" || strings.HasPrefix(p, "runtime/cgo") {
			continue
		}
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	cwd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	mainGo, overlay := filepath.Join(dir, "floor.go"), filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(cwd, "depsfloor", "main.go"): mainGo}})
	if err := os.WriteFile(mainGo, []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "deps-floor")
	build := exec.Command("go", "build", "-overlay", overlay, "-o", bin, "./depsfloor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build of the dependencies' floor: %v\n%s", err, out)
	}
	return bin
}

func startupMedian[T time.Duration | int64](d []T) T {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// startupFixture is n source files twice over (one tree for ctxkit, one
// for git), a plan that changes each, and the same diffs as one patch.
type startupFixture struct {
	ctxkitRoot, gitRoot string
	pristine            string // the unchanged files, linked into both trees
	plan, patch         string
	names               []string // relative paths
	before, after       [][]byte
}

func newStartupFixture(b *testing.B, dir string, n int) *startupFixture {
	f := &startupFixture{ctxkitRoot: filepath.Join(dir, "ctxkit"), gitRoot: filepath.Join(dir, "git"),
		pristine: filepath.Join(dir, "pristine"),
		plan:     filepath.Join(dir, "plan.json"), patch: filepath.Join(dir, "change.patch")}
	type diff struct {
		Path        string `json:"path"`
		Checksum    string `json:"checksum"`
		UnifiedDiff string `json:"unified_diff"`
	}
	var diffs []diff
	var patch strings.Builder
	for i := range n {
		name := fmt.Sprintf("pkg%02d/file%03d.go", i%10, i)
		var before, after strings.Builder
		fmt.Fprintf(&before, "package pkg%02d\n\n", i%10)
		for j := range 120 {
			fmt.Fprintf(&before, "func f%d_%d(x int) int {\n\treturn x + %d\n}\n\n", i, j, j)
		}
		lines := strings.SplitAfter(before.String(), "\n")
		// Change the body of the 51st function: its return line is the
		// second of its four, after the two-line package clause.
		const at = 2 + 4*50 + 1
		old := lines[at]
		changed := strings.Replace(old, "return x +", "return x -", 1)
		for k, l := range lines {
			if k == at {
				after.WriteString(changed)
				continue
			}
			after.WriteString(l)
		}
		var d strings.Builder
		fmt.Fprintf(&d, "--- a/%s\n+++ b/%s\n@@ -%d,7 +%d,7 @@\n", name, name, at-2, at-2)
		for k := at - 3; k <= at+3; k++ {
			if k == at {
				d.WriteString("-" + old + "+" + changed)
				continue
			}
			d.WriteString(" " + lines[k])
		}
		sum := sha256.Sum256([]byte(before.String()))
		diffs = append(diffs, diff{Path: name, Checksum: hex.EncodeToString(sum[:]), UnifiedDiff: d.String()})
		patch.WriteString(d.String())
		f.names = append(f.names, name)
		f.before = append(f.before, []byte(before.String()))
		f.after = append(f.after, []byte(after.String()))
	}
	planJSON, err := json.Marshal(map[string]any{"diffs": diffs})
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name string
		data []byte
	}{{f.plan, planJSON}, {f.patch, []byte(patch.String())}} {
		if err := os.MkdirAll(filepath.Dir(w.name), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(w.name, w.data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f.keep(b)
	f.restore(b)
	return f
}

// restore puts the files of both trees back as they were before the
// change, as hard links to a copy made durable once: restoring writes no
// data, so the sync a timed run makes flushes only that run's writes.
// Both tools replace a file they change rather than write into it; were
// one to write through a link, the next run's checksum or context would
// fail loudly.
func (f *startupFixture) restore(b *testing.B) {
	for _, root := range []string{f.ctxkitRoot, f.gitRoot} {
		for _, name := range f.names {
			p := filepath.Join(root, name)
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
			if err := os.Link(filepath.Join(f.pristine, name), p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// keep writes the unchanged files once, durably, for restore to link.
func (f *startupFixture) keep(b *testing.B) {
	for _, root := range []string{f.pristine, f.ctxkitRoot, f.gitRoot} {
		for i, name := range f.names {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if root != f.pristine {
				continue
			}
			w, err := os.Create(p)
			if err != nil {
				b.Fatal(err)
			}
			_, err = w.Write(f.before[i])
			if err == nil {
				err = w.Sync()
			}
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	syscall.Sync() // the directories too
}

// sameResult checks both trees hold the changed files.
func (f *startupFixture) sameResult(b *testing.B) {
	for _, root := range []string{f.ctxkitRoot, f.gitRoot} {
		for i, name := range f.names {
			got, err := os.ReadFile(filepath.Join(root, name))
			if err != nil {
				b.Fatal(err)
			}
			if !bytes.Equal(got, f.after[i]) {
				b.Fatalf("%s in %s is not the diff's result", name, root)
			}
		}
	}
}
