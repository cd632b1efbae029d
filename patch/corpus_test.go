package patch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusEntry is one file changed by one commit: the diff git wrote and
// the file before and after.
type corpusEntry struct {
	name       string
	diff       string
	pre, post  []byte
	newFile    bool
	deleteFile bool
}

// corpusTip is the commit the history corpus ends at: a fixed one, so
// that the corpus (and what the tests expect of it) does not change with
// every commit.
const corpusTip = "fce768b2a443fc51653a8e8ac06222c880d6e12d"

// historyCorpus is every text file changed by the last commits up to
// corpusTip of the git repository holding dir (at most max commits), or
// nil when there is no such history (a shallow clone, a source archive,
// a repository without that commit).
func historyCorpus(t testing.TB, dir string, max int) []corpusEntry {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "core.quotePath=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_PAGER=cat")
		return cmd.Output()
	}
	if _, err := git("cat-file", "-e", corpusTip+"^{commit}"); err != nil {
		t.Logf("no history corpus: commit %s is not in the repository", corpusTip[:12])
		return nil
	}
	// One git log for every commit's diff: a process per commit costs
	// seconds on a loaded machine. The NUL before each commit line cannot
	// occur in a text diff. The diff options are spelled out so that a
	// user's configuration cannot change the corpus (and what the tests
	// expect of it).
	out, err := git("log", "-p", "--no-merges", "--no-color", "--no-renames", "--no-ext-diff", "--full-index",
		"-U3", "--diff-algorithm=myers", "--indent-heuristic", "--src-prefix=a/", "--dst-prefix=b/",
		"--format=%x00%H %P", "-n", strconv.Itoa(max), corpusTip)
	if err != nil {
		return nil
	}
	type blobRef struct {
		entry int
		post  bool
	}
	var (
		entries []corpusEntry
		reqs    bytes.Buffer
		refs    []blobRef
	)
	for _, c := range strings.Split(string(out), "\x00")[1:] {
		line, d, _ := strings.Cut(c, "\n")
		f := strings.Fields(line)
		if len(f) != 2 { // root commit, a shallow clone's boundary or merge
			continue
		}
		commit, parent := f[0], f[1]
		if d = strings.Trim(d, "\n"); d == "" {
			continue
		}
		for _, fd := range splitGitDiff(d + "\n") {
			if strings.Contains(fd, "\nBinary files ") || strings.Contains(fd, "\nGIT binary patch") || !strings.Contains(fd, "\n@@ ") {
				continue
			}
			m := gitDiffLine.FindStringSubmatch(fd)
			if m == nil || m[1] != m[2] {
				continue
			}
			e := corpusEntry{name: commit[:10] + ":" + m[1], diff: fd,
				newFile: strings.Contains(fd, "\n--- /dev/null\n"), deleteFile: strings.Contains(fd, "\n+++ /dev/null\n")}
			entries = append(entries, e)
			if !e.newFile {
				fmt.Fprintf(&reqs, "%s:%s\n", parent, m[1])
				refs = append(refs, blobRef{len(entries) - 1, false})
			}
			if !e.deleteFile {
				fmt.Fprintf(&reqs, "%s:%s\n", commit, m[1])
				refs = append(refs, blobRef{len(entries) - 1, true})
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	cmd.Stdin = &reqs
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	for _, ref := range refs {
		hdr, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("git cat-file: %v", err)
		}
		f := strings.Fields(hdr)
		if len(f) != 3 || f[1] != "blob" {
			t.Fatalf("git cat-file: %q", hdr)
		}
		size, _ := strconv.Atoi(f[2])
		blob := make([]byte, size+1)
		if _, err := io.ReadFull(r, blob); err != nil {
			t.Fatalf("git cat-file: %v", err)
		}
		if ref.post {
			entries[ref.entry].post = blob[:size]
		} else {
			entries[ref.entry].pre = blob[:size]
		}
	}
	var text []corpusEntry
	for _, e := range entries {
		if isText(e.pre) && isText(e.post) {
			text = append(text, e)
		}
	}
	return text
}

var gitDiffLine = regexp.MustCompile(`(?m)^diff --git a/(\S+) b/(\S+)$`)

func isText(b []byte) bool { return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b) }

// splitGitDiff splits a multi-file git diff into single-file diffs.
func splitGitDiff(d string) []string {
	var out []string
	for _, part := range strings.Split(d, "\ndiff --git ") {
		if !strings.HasPrefix(part, "diff --git ") {
			part = "diff --git " + part
		}
		if !strings.HasSuffix(part, "\n") {
			part += "\n"
		}
		out = append(out, part)
	}
	return out
}

// syntheticCorpus diffs generated file pairs with git diff --no-index.
func syntheticCorpus(t testing.TB, n int) []corpusEntry {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	var out []corpusEntry
	for i := range n {
		pre := genFile(rng, 20+rng.IntN(300))
		post := mutate(rng, pre)
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		if err := os.WriteFile(a, pre, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, post, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "diff", "--no-index", "--no-color", "--no-ext-diff", "a", "b")
		cmd.Dir = dir
		d, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			t.Fatalf("git diff --no-index: %v", err)
		}
		if len(d) == 0 {
			continue
		}
		out = append(out, corpusEntry{name: "synthetic-" + strconv.Itoa(i), diff: string(d), pre: pre, post: post})
	}
	return out
}

// genFile writes source-like lines: mostly distinct, with the blank lines
// and braces real code repeats.
func genFile(rng *rand.Rand, lines int) []byte {
	var b bytes.Buffer
	for i := range lines {
		switch rng.IntN(8) {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString("}\n")
		default:
			fmt.Fprintf(&b, "\tv%d := compute(%d, %q)\n", i, rng.IntN(1000), strconv.Itoa(rng.IntN(50)))
		}
	}
	if rng.IntN(5) == 0 { // no final newline
		return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	return b.Bytes()
}

func mutate(rng *rand.Rand, pre []byte) []byte {
	lines := strings.SplitAfter(string(pre), "\n")
	for range 1 + rng.IntN(6) {
		i := rng.IntN(len(lines))
		switch rng.IntN(3) {
		case 0:
			lines = append(lines[:i], lines[min(len(lines), i+1+rng.IntN(3)):]...)
		case 1:
			lines = append(lines[:i], append([]string{fmt.Sprintf("\tadded%d()\n", rng.IntN(1e6))}, lines[i:]...)...)
		default:
			lines[i] = fmt.Sprintf("\tchanged%d()\n", rng.IntN(1e6))
		}
		if len(lines) == 0 {
			lines = []string{"x\n"}
		}
	}
	return []byte(strings.Join(lines, ""))
}

var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// rewriteHeaders rewrites every hunk header: start lines moved by shift,
// counts replaced by count(old count).
func rewriteHeaders(d string, shift int, count func(int) int) string {
	return hunkHeader.ReplaceAllStringFunc(d, func(h string) string {
		m := hunkHeader.FindStringSubmatch(h)
		num := func(s string, def int) int {
			if s == "" {
				return def
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		os, ol, ns, nl := num(m[1], 0), num(m[2], 1), num(m[3], 0), num(m[4], 1)
		return fmt.Sprintf("@@ -%d,%d +%d,%d @@", max(os+shift, 0), count(ol), max(ns+shift, 0), count(nl))
	})
}

func moduleRoot(t testing.TB) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// TestCorpus applies real diffs (this repository's history when it has
// one, and generated file pairs) to the file before and compares with the
// file after, byte for byte: as git wrote them, with every header moved,
// with every count wrong, and without line numbers (where a hunk may be
// refused as ambiguous, but never placed wrong).
func TestCorpus(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	corpus := historyCorpus(t, moduleRoot(t), 40)
	history := len(corpus)
	corpus = append(corpus, syntheticCorpus(t, 60)...)
	t.Logf("corpus: %d file diffs from history, %d generated", history, len(corpus)-history)
	if len(corpus) < 20 {
		t.Fatalf("corpus has %d entries", len(corpus))
	}
	variants := []struct {
		name      string
		rewrite   func(string) string
		mayRefuse bool
	}{
		{"as written", func(d string) string { return d }, false},
		{"headers shifted", func(d string) string { return rewriteHeaders(d, 7, func(n int) int { return n }) }, false},
		{"headers shifted back", func(d string) string { return rewriteHeaders(d, -5, func(n int) int { return n }) }, false},
		{"counts wrong", func(d string) string { return rewriteHeaders(d, 0, func(n int) int { return n*2 + 3 }) }, false},
		{"shifted and counts wrong", func(d string) string { return rewriteHeaders(d, 11, func(n int) int { return max(n-2, 0) }) }, false},
		{"no line numbers", func(d string) string { return hunkHeader.ReplaceAllString(d, "@@ ... @@") }, true},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			refused := 0
			for _, e := range corpus {
				f, err := Parse(v.rewrite(e.diff))
				if err != nil {
					t.Errorf("%s: Parse: %v", e.name, err)
					continue
				}
				res, err := Apply(e.pre, f)
				if err != nil {
					var pe *Error
					if v.mayRefuse && errors.As(err, &pe) && pe.Code == CodeAmbiguous {
						refused++
						continue
					}
					t.Errorf("%s: Apply: %v", e.name, err)
					continue
				}
				if !bytes.Equal(res.Content, e.post) {
					t.Errorf("%s: result differs from the file after the commit", e.name)
				}
				if res.Status != Applied {
					t.Errorf("%s: status %s", e.name, res.Status)
				}
			}
			t.Logf("%d applied, %d refused as ambiguous", len(corpus)-refused, refused)
		})
	}
}

// noopRefused lists the corpus diffs (by name) that may be refused, not
// reported Noop, when applied to the file after, each with the reason.
// Applying one of them again is never acceptable.
var noopRefused = map[string]string{}

// TestCorpusNoop applies each corpus diff to the file after: already
// applied, so Noop with the content unchanged, never applied again and
// never reversed (new-file and deleted-file diffs included).
func TestCorpusNoop(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	corpus := append(historyCorpus(t, moduleRoot(t), 40), syntheticCorpus(t, 60)...)
	noop := 0
	for _, e := range corpus {
		if e.deleteFile {
			continue // the file after does not exist: nothing to apply to
		}
		f, err := Parse(e.diff)
		if err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		res, err := Apply(e.post, f)
		if err != nil {
			if why, ok := noopRefused[e.name]; ok {
				t.Logf("%s: refused (%s): %v", e.name, why, err)
				continue
			}
			t.Errorf("%s: applying to the file after: %v", e.name, err)
			continue
		}
		if res.Status != Noop {
			t.Errorf("%s: applying to the file after: status %s, want noop (hunks %v)", e.name, res.Status, res.Hunks)
			continue
		}
		if !bytes.Equal(res.Content, e.post) {
			t.Errorf("%s: noop changed the content", e.name)
		}
		noop++
	}
	t.Logf("%d of %d diffs are noop on the file after", noop, len(corpus))
}
