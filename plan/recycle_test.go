package plan

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestDryRunRecyclesContents: a dry run hands each file's contents on to
// the next files it reads and patches; every outcome must still be that
// file's own, whatever the sizes met before it, with diffs already
// applied (whose new content is the file as read) among them, in a plain
// patch with a rename too, and run after run.
func TestDryRunRecyclesContents(t *testing.T) {
	files := map[string]string{}
	p := &Plan{}
	var patchText strings.Builder
	want := map[int]string{} // diff index -> SHA-256 after
	for i := range 24 {
		name := fmt.Sprintf("d%d/f%02d.txt", i%3, i)
		var pre, post strings.Builder
		// Sizes from a few bytes to many pages, up and down.
		lines := 3 + (i*7919)%2500
		for j := range lines {
			line := fmt.Sprintf("line %d of %s\n", j, name)
			pre.WriteString(line)
			if j == 1 {
				line = fmt.Sprintf("changed line of %s\n", name)
			}
			post.WriteString(line)
		}
		diff := fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ -1,3 +1,3 @@\n line 0 of %s\n-line 1 of %s\n+changed line of %s\n line 2 of %s\n", name, name, name, name, name, name)
		files[name] = pre.String()
		if i%4 == 3 {
			files[name] = post.String() // already applied
		}
		p.Diffs = append(p.Diffs, Diff{Path: name, Checksum: Checksum([]byte(pre.String())), UnifiedDiff: diff})
		patchText.WriteString(diff)
		want[i] = Checksum([]byte(post.String()))
	}
	files["old.txt"] = "one\ntwo\nthree\n"
	patchText.WriteString("diff --git a/old.txt b/new.txt\nsimilarity index 80%\nrename from old.txt\nrename to new.txt\n--- a/old.txt\n+++ b/new.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n")
	_, root := tree(t, files)
	for run := range 3 {
		rep, err := Apply(context.Background(), root, p, Options{Strategy: DryRun{}})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		for i, o := range rep.Diffs {
			status := StatusApplied
			if i%4 == 3 {
				status = StatusNoop
			}
			if o.Status != status || o.SHA256After != want[i] {
				t.Fatalf("run %d, diffs[%d]: %s after %s, want %s after %s", run, i, o.Status, short(o.SHA256After), status, short(want[i]))
			}
		}
		rep, err = ApplyPatch(context.Background(), root, []byte(patchText.String()), StripDetect, Options{Strategy: DryRun{}})
		if err != nil {
			t.Fatalf("run %d, patch: %v", run, err)
		}
		for i, o := range rep.Diffs[:24] {
			if i%4 != 3 && o.SHA256After != want[i] {
				t.Fatalf("run %d, patch diffs[%d]: after %s, want %s", run, i, short(o.SHA256After), short(want[i]))
			}
		}
		if o := rep.Diffs[24]; o.Status != StatusApplied || o.SHA256After != Checksum([]byte("one\n2\nthree\n")) {
			t.Fatalf("run %d, rename: %+v", run, o)
		}
	}
}
