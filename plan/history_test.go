package plan

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/patch"
)

// historyBase is the commit the history test reads back from: a fixed
// one, so that its figures do not change with every commit.
const historyBase = "a02c340"

// historyDiff is one file changed by one commit of ctxkit's own history.
type historyDiff struct {
	path, diff string
	pre, post  []byte
	// commit is the commit's patch, the same for each of its files;
	// binary is set when it holds a binary diff.
	commit string
	binary bool
}

// history reads the text files changed by the last n commits up to
// historyBase, splitting each commit's patch with patch.Split; nil when
// the repository or the commit is not there (a source archive).
func history(t *testing.T, n int) []historyDiff {
	t.Helper()
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"-c", "core.quotePath=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_PAGER=cat")
		return cmd.Output()
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	// One git process writes every commit's patch, each after a line
	// naming the commit.
	out, err := git("log", "--no-merges", "-p", "--no-renames", "--format=commit %H", "-n", "120", historyBase)
	if err != nil {
		t.Logf("no history: %v", err)
		return nil
	}
	var (
		diffs []historyDiff
		refs  []string // the blobs to read: each diff's pre, then post ("" for none)
	)
	for _, chunk := range strings.Split("\n"+string(out), "\ncommit ")[1:] {
		c, text, _ := strings.Cut(chunk, "\n")
		if len(diffs) >= n {
			break
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		m, err := patch.Split(text)
		if err != nil {
			t.Fatalf("%s: %v", c[:12], err)
		}
		binary := false
		for _, s := range m.Sections {
			binary = binary || s.Binary
		}
		for _, s := range m.Sections {
			if s.Binary || s.Hunks == 0 {
				continue
			}
			d := historyDiff{diff: s.Text, path: strings.TrimPrefix(s.NewName, "b/"), commit: text, binary: binary}
			pre, post := c+"^:"+strings.TrimPrefix(s.OldName, "a/"), c+":"+d.path
			if s.NewFile {
				pre = ""
			}
			if s.Deleted {
				d.path, post = strings.TrimPrefix(s.OldName, "a/"), ""
			}
			diffs = append(diffs, d)
			refs = append(refs, pre, post)
		}
	}
	// One git process reads every blob.
	var in strings.Builder
	for _, r := range refs {
		if r != "" {
			in.WriteString(r + "\n")
		}
	}
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(in.String())
	out, err = cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	blobs := string(out)
	next := func() []byte {
		head, rest, _ := strings.Cut(blobs, "\n")
		f := strings.Fields(head)
		if len(f) != 3 {
			t.Fatalf("git cat-file: %q", head)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatal(err)
		}
		b := []byte(rest[:size])
		blobs = rest[size+1:]
		return b
	}
	for i := range diffs {
		if refs[2*i] != "" {
			diffs[i].pre = next()
		}
		if refs[2*i+1] != "" {
			diffs[i].post = next()
		}
	}
	return diffs
}

// TestAlreadyAppliedHistory checks the already-applied test on real
// changes: each file after its commit is the diff's result (noop), and the
// same file changed once more, at its end or inside the diff's new lines,
// is not (never a false noop).
func TestAlreadyAppliedHistory(t *testing.T) {
	start := time.Now()
	diffs := history(t, 400)
	t.Logf("history read in %v", time.Since(start))
	if len(diffs) < 50 {
		t.Logf("only %d diffs of history: the test needs the git repository", len(diffs))
		return
	}
	var noop, missed, applies, refused int
	for _, d := range diffs {
		pd := Diff{Path: d.path, Checksum: Checksum(d.pre), UnifiedDiff: d.diff}
		f, err := patch.Parse(d.diff)
		if err != nil {
			t.Fatalf("%s: %v", d.path, err)
		}
		// The engine itself must apply the diff to the original for the
		// result to be recognised.
		if res, err := patch.Apply(d.pre, f); err == nil && string(res.Content) == string(d.post) {
			applies++
		} else {
			continue
		}
		post, exists := d.post, !f.IsDelete()
		if alreadyApplied(post, exists, pd) != nil {
			noop++
		} else {
			missed++
			t.Logf("%s: not recognised as applied", d.path)
		}
		if !exists {
			continue
		}
		for _, changed := range [][]byte{
			append(append([]byte(nil), post...), "// one more line\n"...),
			mutateNewLine(post, f),
		} {
			if changed == nil {
				continue
			}
			if alreadyApplied(changed, true, pd) != nil {
				t.Errorf("%s: a file changed after the diff was taken for its result", d.path)
			} else {
				refused++
			}
		}
	}
	t.Logf("%d diffs of history: %d the engine applies; %d recognised as already applied, %d not; %d files changed since refused, 0 taken for applied", len(diffs), applies, noop, missed, refused)
	if missed > 0 {
		t.Errorf("%d applied diffs were not recognised as applied", missed)
	}
}

// mutateNewLine is post with the first line the diff inserts changed (nil
// when the diff inserts none or the line is not found).
func mutateNewLine(post []byte, f *patch.File) []byte {
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			if l.Op == patch.Insert && strings.TrimSpace(l.Text) != "" {
				s := string(post)
				if i := strings.Index(s, l.Text+"\n"); i >= 0 {
					return []byte(s[:i] + l.Text + " // changed\n" + s[i+len(l.Text)+1:])
				}
				return nil
			}
		}
	}
	return nil
}

// TestApplyPatchHistory applies whole commits of ctxkit's history as
// plain patches (git's format, several files each) to the files before
// them: each file comes out as the commit made it.
func TestApplyPatchHistory(t *testing.T) {
	diffs := history(t, 400)
	if len(diffs) < 50 {
		t.Logf("only %d diffs of history: the test needs the git repository", len(diffs))
		return
	}
	commits, files := 0, 0
	for i := 0; i < len(diffs); {
		j := i
		for j < len(diffs) && diffs[j].commit == diffs[i].commit {
			j++
		}
		group := diffs[i:j]
		i = j
		if group[0].binary || len(group) < 2 {
			continue
		}
		tr := map[string]string{}
		for _, d := range group {
			if d.pre != nil {
				tr[d.path] = string(d.pre)
			}
		}
		dir, root := tree(t, tr)
		if _, err := ApplyPatch(context.Background(), root, []byte(group[0].commit), StripDetect, Options{Strategy: Write{}}); err != nil {
			t.Errorf("a commit of %d files: %v", len(group), err)
			continue
		}
		for _, d := range group {
			got := read(t, dir, d.path)
			if d.post == nil && !strings.HasPrefix(got, "<") {
				t.Errorf("%s: not deleted", d.path)
			} else if d.post != nil && got != string(d.post) {
				t.Errorf("%s: not as the commit made it", d.path)
			}
		}
		commits++
		files += len(group)
	}
	t.Logf("%d commits of history applied as plain patches, %d files, each as the commit made it", commits, files)
	if commits < 10 {
		t.Errorf("only %d commits applied", commits)
	}
}
