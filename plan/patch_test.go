package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitTree is the tree patch/testdata/multi/git.patch was made against
// (but bin.dat).
func gitTree() map[string]string {
	return map[string]string{
		"src/main.go":    "package main\n\nfunc main() {\n\tprintln(\"v1\")\n}\n",
		"docs/old.txt":   "one\ntwo\nthree\n",
		"gone.txt":       "gone\n",
		"moved.txt":      "alpha\nbeta\ngamma\ndelta\nepsilon\n",
		"pure.txt":       "same\n",
		"run.sh":         "#!/bin/sh\necho hi\n",
		"with space.txt": "x\n",
		"emptygone":      "",
	}
}

// gitPatch is patch/testdata/multi/git.patch without its binary diff.
func gitPatch(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "patch", "testdata", "multi", "git.patch"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return s[strings.Index(s, "diff --git a/moved.txt"):]
}

// TestApplyPatchGit applies git's output: a change, a rename with a
// change, a new file, a deletion, renames without changes, a mode change,
// a name with a space and a quoted one; then again, as a no-op.
func TestApplyPatchGit(t *testing.T) {
	dir, root := tree(t, gitTree())
	text := []byte(gitPatch(t))
	rep, err := ApplyPatch(context.Background(), root, text, StripDetect, Options{Strategy: WriteBackup{Suffix: ".orig"}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Written || rep.Note != NoChecksums || len(rep.Diffs) != 9 {
		t.Fatalf("%+v", rep)
	}
	want := map[string]string{
		"src/main.go":    "package main\n\nfunc main() {\n\tprintln(\"v2\")\n}\n",
		"docs/moved.txt": "alpha\nbeta\nGAMMA\ndelta\nepsilon\n",
		"docs/new.txt":   "new file\n",
		"renamed.txt":    "same\n",
		"emptynew":       "",
		"with space.txt": "y\n",
		"é.txt":          "é\n",
		"run.sh":         "#!/bin/sh\necho hi\n",
		// backups of what was changed, deleted or renamed away
		"src/main.go.orig":    "package main\n\nfunc main() {\n\tprintln(\"v1\")\n}\n",
		"moved.txt.orig":      "alpha\nbeta\ngamma\ndelta\nepsilon\n",
		"gone.txt.orig":       "gone\n",
		"pure.txt.orig":       "same\n",
		"emptygone.orig":      "",
		"with space.txt.orig": "x\n",
		"docs/old.txt":        "one\ntwo\nthree\n",
	}
	for name, content := range want {
		if got := read(t, dir, name); got != content {
			t.Errorf("%s: %q, want %q", name, got, content)
		}
	}
	for _, name := range []string{"moved.txt", "gone.txt", "pure.txt", "emptygone"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still exists", name)
		}
	}
	byPath := map[string]Outcome{}
	for _, o := range rep.Diffs {
		byPath[o.Path] = o
	}
	if o := byPath["docs/moved.txt"]; o.From != "moved.txt" || o.Status != StatusApplied || o.Hunks[0].Match != "exact" {
		t.Errorf("rename: %+v", o)
	}
	if o := byPath["run.sh"]; o.Status != StatusNoop || len(o.Warnings) != 1 || !strings.Contains(o.Warnings[0], "100644 → 100755 is not applied") {
		t.Errorf("mode: %+v", o)
	}
	if o := byPath["gone.txt"]; !o.Deleted || o.BackupPath != "gone.txt.orig" {
		t.Errorf("deletion: %+v", o)
	}
	if o := byPath["docs/new.txt"]; !o.Created {
		t.Errorf("new file: %+v", o)
	}
	// Again: every file is already as the patch makes it (but "x" to
	// "y" is too little text to tell it is applied, and a rename without
	// changes carries no content to check its target against: refused).
	rep, _ = ApplyPatch(context.Background(), root, text, StripDetect, Options{Strategy: Write{}})
	for _, o := range rep.Diffs {
		pureRename := o.From == "pure.txt" || o.From == "emptygone"
		switch {
		case pureRename && o.Code != CodeFileMissing:
			t.Errorf("second run, a rename without changes: %+v", o)
		case !pureRename && o.Status != StatusNoop && o.Path != "with space.txt":
			t.Errorf("second run: %+v", o)
		}
	}
}

// TestApplyPatchDiffRuN applies "diff -ruN old new" output: strip 1
// found, a new file and a deletion dated at the epoch.
func TestApplyPatchDiffRuN(t *testing.T) {
	dir, root := tree(t, map[string]string{"src/x.txt": "a\nb\nc\n", "src/del.txt": "del\n"})
	b, err := os.ReadFile(filepath.Join("..", "patch", "testdata", "multi", "ruN.patch"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ApplyPatch(context.Background(), root, b, StripDetect, Options{Strategy: Write{}})
	if err != nil {
		t.Fatal(err)
	}
	if read(t, dir, "src/x.txt") != "a\nB\nc\n" || read(t, dir, "src/add.txt") != "add\n" || !rep.Diffs[1].Deleted {
		t.Fatalf("%+v", rep.Diffs)
	}
	if _, err := os.Lstat(filepath.Join(dir, "src/del.txt")); !os.IsNotExist(err) {
		t.Fatal("src/del.txt still exists")
	}
}

// TestApplyPatchNames: the strip count and the choice between two names.
func TestApplyPatchNames(t *testing.T) {
	const hunk = "@@ -1 +1 @@\n-a\n+b\n"
	cases := []struct {
		name, patch string
		strip       int
		files       map[string]string
		want        string // the file changed
	}{
		{"a/ b/ detected", "--- a/d/x\n+++ b/d/x\n" + hunk, StripDetect, map[string]string{"d/x": "a\n"}, "d/x"},
		{"model's a/ on both sides", "--- a/x\n+++ a/x\n" + hunk, StripDetect, map[string]string{"x": "a\n"}, "x"},
		{"no prefix", "--- d/x\n+++ d/x\n" + hunk, StripDetect, map[string]string{"d/x": "a\n"}, "d/x"},
		{"explicit -p0", "--- a/x\n+++ a/x\n" + hunk, 0, map[string]string{"a/x": "a\n"}, "a/x"},
		{"explicit -p2", "--- w/d/x\n+++ w/d/x\n" + hunk, 2, map[string]string{"x": "a\n"}, "x"},
		{"x.orig and x: the one that exists", "--- x.orig\n+++ x\n" + hunk, StripDetect, map[string]string{"x": "a\n"}, "x"},
		{"x and x.new: the one that exists", "--- x\n+++ x.new\n" + hunk, StripDetect, map[string]string{"x": "a\n"}, "x"},
		{"both exist: the shorter base name", "--- x.orig\n+++ x\n" + hunk, StripDetect, map[string]string{"x": "a\n", "x.orig": "a\n"}, "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, root := tree(t, c.files)
			rep, err := ApplyPatch(context.Background(), root, []byte(c.patch), c.strip, Options{Strategy: Write{}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Diffs[0].Path != c.want || read(t, dir, c.want) != "b\n" {
				t.Fatalf("%+v", rep.Diffs)
			}
		})
	}
}

// TestApplyPatchRefuses: each refusal names the file and writes nothing.
func TestApplyPatchRefuses(t *testing.T) {
	const ok = "--- a/ok.txt\n+++ b/ok.txt\n@@ -1 +1 @@\n-a\n+b\n"
	cases := []struct {
		name, patch string
		strip       int
		code        Code
		msg         string
	}{
		{"binary", ok + "diff --git a/b.dat b/b.dat\nindex 1..2 100644\nBinary files a/b.dat and b/b.dat differ\n", StripDetect, CodeNotText, "diffs[1] (b.dat): patch line 6: a binary diff"},
		{"git binary patch", "diff --git a/b.dat b/b.dat\nindex 1..2 100644\nGIT binary patch\nliteral 1\nIcmZQz00001\n\n" + ok, StripDetect, CodeNotText, "diffs[0] (b.dat): patch line 1: a binary diff"},
		{"escape", "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", StripDetect, CodePathRejected, "must stay inside the root"},
		{"git dir", "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n", StripDetect, CodePathRejected, "inside .git"},
		{"absolute", "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", StripDetect, CodePathRejected, "must be relative"},
		{"strip too many", ok, 3, CodePathRejected, `"a/ok.txt" has fewer than 4 components`},
		{"same file twice", ok + ok, StripDetect, CodePathRejected, "diffs[1] (ok.txt): patch line 6: the same file as diffs[0]"},
		{"copy", "diff --git a/ok.txt b/c.txt\nsimilarity index 100%\ncopy from ok.txt\ncopy to c.txt\n", StripDetect, CodeUnsupported, "not copies"},
		{"symlink", "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+ok.txt\n\\ No newline at end of file\n", StripDetect, CodeUnsupported, "symbolic link"},
		{"missing file", "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n", StripDetect, CodeFileMissing, "diffs[0] (nope.txt): the file does not exist"},
		{"new file over another", "--- /dev/null\n+++ b/ok.txt\n@@ -0,0 +1 @@\n+z\n", StripDetect, "hunk_not_found", "exists with other content"},
		{"rename onto a file", "diff --git a/ok.txt b/other.txt\nsimilarity index 100%\nrename from ok.txt\nrename to other.txt\n", StripDetect, CodeFileExists, "the rename's target exists"},
		{"hunk not found", "--- a/ok.txt\n+++ b/ok.txt\n@@ -1 +1 @@\n-zzz\n+b\n", StripDetect, "hunk_not_found", "diffs[0] (ok.txt): hunk 1 (diff line 3)"},
		{"hunk without headers", "@@ -1 +1 @@\n-a\n+b\n", StripDetect, "diff_syntax", "patch line 1: a hunk with no file headers"},
		{"not a patch", "hello\n", StripDetect, "diff_syntax", "no file diffs"},
		{"nul byte", ok + "\x00", StripDetect, CodeNotText, "patch line 6: a NUL byte"},
		{"bad strip", ok, 99, CodeField, "strip: 99"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, root := tree(t, map[string]string{"ok.txt": "a\n", "other.txt": "o\n"})
			_, err := ApplyPatch(context.Background(), root, []byte(c.patch), c.strip, Options{Strategy: Write{}})
			if CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v (%s), want %s: ...%s...", err, CodeOf(err), c.code, c.msg)
			}
			if read(t, dir, "ok.txt") != "a\n" {
				t.Fatal("ok.txt was written")
			}
		})
	}
}

// TestApplyPatchAllOrNothing: a later file's failure leaves the earlier
// ones unwritten, and a dry run writes nothing.
func TestApplyPatchAllOrNothing(t *testing.T) {
	dir, root := tree(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	p := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+X\n--- /dev/null\n+++ b/c/new.txt\n@@ -0,0 +1 @@\n+n\n"
	rep, err := ApplyPatch(context.Background(), root, []byte(p), StripDetect, Options{Strategy: Write{}})
	if err == nil || rep.Written || rep.Diffs[0].Status != StatusApplied || rep.Diffs[1].Status != StatusFailed {
		t.Fatalf("%v %+v", err, rep)
	}
	if read(t, dir, "a.txt") != "a\n" {
		t.Fatal("a.txt written")
	}
	p = strings.Replace(p, "-x\n+X", "-b\n+B", 1)
	rep, err = ApplyPatch(context.Background(), root, []byte(p), StripDetect, Options{})
	if err != nil || rep.Written || rep.Strategy != "dry-run" || rep.Diffs[2].SHA256After != Checksum([]byte("n\n")) {
		t.Fatalf("%v %+v", err, rep)
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Fatal("a dry run created a directory")
	}
}

// TestApplyPatchBounds: a patch past its size or file count is refused
// before anything is read.
func TestApplyPatchBounds(t *testing.T) {
	_, root := tree(t, map[string]string{"ok.txt": "a\n"})
	var b strings.Builder
	for i := range MaxDiffs + 1 {
		fmt.Fprintf(&b, "--- a/f%d\n+++ b/f%d\n@@ -1 +1 @@\n-a\n+b\n", i, i)
	}
	_, err := ApplyPatch(context.Background(), root, []byte(b.String()), StripDetect, Options{})
	if CodeOf(err) != CodeTooLarge || !strings.Contains(err.Error(), "1001 files, more than 1000") {
		t.Fatalf("files: %v", err)
	}
	big := make([]byte, MaxPatchBytes+1)
	_, err = ApplyPatch(context.Background(), root, big, StripDetect, Options{})
	if CodeOf(err) != CodeTooLarge {
		t.Fatalf("size: %v", err)
	}
}

// TestApplyPatchEmptyFiles: git's new and deleted empty files have no
// hunks; a deletion of an "empty" file that is not empty is refused.
func TestApplyPatchEmptyFiles(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "patch", "testdata", "multi", "empty.patch"))
	if err != nil {
		t.Fatal(err)
	}
	dir, root := tree(t, map[string]string{"e1": ""})
	rep, err := ApplyPatch(context.Background(), root, b, StripDetect, Options{Strategy: Write{}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Diffs[0].Deleted || !rep.Diffs[1].Created || read(t, dir, "e2") != "" || read(t, dir, "z.txt") != "z\n" {
		t.Fatalf("%+v", rep.Diffs)
	}
	if _, err := os.Lstat(filepath.Join(dir, "e1")); !os.IsNotExist(err) {
		t.Fatal("e1 still exists")
	}
	_, root = tree(t, map[string]string{"e1": "not empty\n"})
	_, err = ApplyPatch(context.Background(), root, b, StripDetect, Options{Strategy: Write{}})
	if CodeOf(err) != "hunk_not_found" || !strings.Contains(err.Error(), "diffs[0] (e1): the diff deletes an empty file, but the file holds 10 bytes") {
		t.Fatalf("got %v", err)
	}
}

// FuzzReadPatch: reading a patch never panics, fails only with *Error,
// and every path it accepts passes CheckPath, each file once.
func FuzzReadPatch(f *testing.F) {
	for _, name := range []string{"git.patch", "format.patch", "ruN.patch", "u.patch", "empty.patch"} {
		b, err := os.ReadFile(filepath.Join("..", "patch", "testdata", "multi", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, int8(-1))
	}
	f.Add([]byte("--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"), int8(0))
	f.Add([]byte("diff --git a/x b/y\nrename from x\nrename to .git/y\n"), int8(1))
	root, err := os.OpenRoot(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	defer root.Close()
	f.Fuzz(func(t *testing.T, text []byte, strip int8) {
		p, err := readPatch(root, text, int(strip))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, fd := range p.Files {
			for _, name := range []string{fd.Path, fd.From} {
				if name == "" && name == fd.From {
					continue
				}
				if CheckPath(name) != nil || seen[strings.ToLower(name)] {
					t.Fatalf("accepted path %q", name)
				}
				seen[strings.ToLower(name)] = true
			}
			if fd.file == nil && !(fd.New || fd.Delete || fd.From != "" || fd.OldMode != fd.NewMode) {
				t.Fatalf("a file diff without hunks that changes nothing: %+v", fd)
			}
		}
	})
}
