package plan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyTwiceIsNoop: a plan applied once is a no-op the second time,
// for a change, a new file and a deletion, with both hashes in the outcome.
func TestApplyTwiceIsNoop(t *testing.T) {
	const gone = "first line\nsecond line\n"
	dir, root := tree(t, map[string]string{"main.go": mainV1, "old.txt": gone})
	p := twoFilePlan()
	p.Diffs = append(p.Diffs, Diff{Path: "old.txt", Checksum: Checksum([]byte(gone)), UnifiedDiff: "--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-first line\n-second line\n"})
	rep, err := Apply(context.Background(), root, p, Options{Strategy: Write{}})
	if err != nil || !rep.Diffs[2].Deleted {
		t.Fatalf("first apply: %v %+v", err, rep)
	}
	for _, s := range []Strategy{DryRun{}, Write{}, WriteBackup{Suffix: ".orig"}} {
		rep, err = Apply(context.Background(), root, p, Options{Strategy: s})
		if err != nil {
			t.Fatalf("%s: %v", StrategyName(s), err)
		}
		for i, o := range rep.Diffs {
			if o.Status != StatusNoop || o.Preimage != p.Diffs[i].Checksum || o.SHA256Before != o.SHA256After || o.BackupPath != "" {
				t.Fatalf("%s: diffs[%d]: %+v", StrategyName(s), i, o)
			}
			if len(o.Warnings) == 0 || !strings.Contains(o.Warnings[len(o.Warnings)-1], "already applied") {
				t.Fatalf("%s: diffs[%d] warnings %q", StrategyName(s), i, o.Warnings)
			}
		}
	}
	if read(t, dir, "main.go") != mainV2 || read(t, dir, "docs/new/notes.md") != "# Notes\n" {
		t.Fatal("content changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "old.txt")); !os.IsNotExist(err) {
		t.Fatal("old.txt came back")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("files left: %v", entries)
	}
}

// TestApplyAppliedElsewhereRefused: a file that is neither the plan's
// original nor exactly its result is refused as before.
func TestApplyAppliedElsewhereRefused(t *testing.T) {
	cases := []struct {
		name, file string
		diff       Diff
	}{
		{"changed after the apply", mainV2 + "// more\n", Diff{Path: "main.go", Checksum: Checksum([]byte(mainV1)), UnifiedDiff: mainDiff}},
		{"result plus a change inside the hunk", strings.Replace(mainV2, "v2", "v3", 1), Diff{Path: "main.go", Checksum: Checksum([]byte(mainV1)), UnifiedDiff: mainDiff}},
		{"new file with other content", "# Notes!\n", Diff{Path: "main.go", Checksum: emptySum, UnifiedDiff: "--- /dev/null\n+++ b/main.go\n@@ -0,0 +1 @@\n+# Notes\n"}},
		// The diff's new lines are in the file, but at the other copy
		// of the old lines than the one the diff names: reversing gives
		// the original back, applying it again does not give the file.
		{"applied at another copy", "x\nsame\nx\nSAME\nx\n", Diff{Path: "main.go", Checksum: Checksum([]byte("x\nsame\nx\nsame\nx\n")), UnifiedDiff: "@@ -1,3 +1,3 @@\n x\n-same\n+SAME\n x\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, root := tree(t, map[string]string{"main.go": c.file})
			rep, err := Apply(context.Background(), root, &Plan{Diffs: []Diff{c.diff}}, Options{Strategy: Write{}})
			if CodeOf(err) != CodeChecksumMismatch || rep.Diffs[0].Status != StatusFailed || rep.Diffs[0].Preimage != "" {
				t.Fatalf("got %v, %+v", err, rep)
			}
			if read(t, dir, "main.go") != c.file {
				t.Fatal("the file changed")
			}
		})
	}
}

// TestApplyNoopDeletedFileCRLF: a deletion already done is a no-op also
// when the deleted file had CRLF endings the diff does not show.
func TestApplyNoopDeletedFileCRLF(t *testing.T) {
	_, root := tree(t, map[string]string{"keep.txt": "k\n"})
	d := Diff{Path: "gone.txt", Checksum: Checksum([]byte("a\r\nb\r\n")), UnifiedDiff: "--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"}
	rep, err := Apply(context.Background(), root, &Plan{Diffs: []Diff{d}}, Options{Strategy: Write{}})
	if err != nil || rep.Diffs[0].Status != StatusNoop {
		t.Fatalf("got %v, %+v", err, rep)
	}
	// Gone, but the diff does not describe what was there: refused.
	d.Checksum = Checksum([]byte("a\nb\nc\n"))
	if _, err := Apply(context.Background(), root, &Plan{Diffs: []Diff{d}}, Options{Strategy: Write{}}); CodeOf(err) != CodeChecksumMismatch {
		t.Fatalf("got %v", err)
	}
}

// TestApplyHalfAppliedPlan: a plan whose first diff was applied by hand
// and whose second was not applies the second, the first a no-op.
func TestApplyHalfAppliedPlan(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV2})
	rep, err := Apply(context.Background(), root, twoFilePlan(), Options{Strategy: Write{}})
	if err != nil || rep.Diffs[0].Status != StatusNoop || rep.Diffs[1].Status != StatusApplied || !rep.Written {
		t.Fatalf("got %v, %+v", err, rep)
	}
	if read(t, dir, "docs/new/notes.md") != "# Notes\n" {
		t.Fatal("notes not written")
	}
}

// BenchmarkApplyAgain compares a dry run of a 100-diff plan on the files
// it was written against (fresh) with one on the files it already changed
// (again: each diff reversed, its checksum compared and applied once more).
func BenchmarkApplyAgain(b *testing.B) {
	files, p := manyFilePlan(50)
	dir := b.TempDir()
	for name, content := range files {
		fp := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(fp, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	run := func(b *testing.B, want Status) {
		for b.Loop() {
			rep, err := Apply(context.Background(), root, p, Options{})
			if err != nil || rep.Diffs[0].Status != want {
				b.Fatalf("%v %+v", err, rep.Diffs[0])
			}
		}
	}
	b.Run("fresh", func(b *testing.B) { run(b, StatusApplied) })
	if _, err := Apply(context.Background(), root, p, Options{Strategy: Write{}}); err != nil {
		b.Fatal(err)
	}
	b.Run("again", func(b *testing.B) { run(b, StatusNoop) })
}
