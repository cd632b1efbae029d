package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mainV1 = "package main\n\nfunc main() {\n\tprintln(\"v1\")\n}\n"
const mainV2 = "package main\n\nfunc main() {\n\tprintln(\"v2\")\n}\n"
const mainDiff = "--- a/main.go\n+++ b/main.go\n@@ -3,3 +3,3 @@\n func main() {\n-\tprintln(\"v1\")\n+\tprintln(\"v2\")\n }\n"

// tree writes files under a temporary root and opens it.
func tree(t *testing.T, files map[string]string) (string, *os.Root) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, root
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// twoFilePlan changes main.go and creates docs/new/notes.md.
func twoFilePlan() *Plan {
	return &Plan{Diffs: []Diff{
		{Path: "main.go", Checksum: Checksum([]byte(mainV1)), UnifiedDiff: mainDiff},
		{Path: "docs/new/notes.md", Checksum: emptySum, UnifiedDiff: "--- /dev/null\n+++ b/docs/new/notes.md\n@@ -0,0 +1 @@\n+# Notes\n"},
	}}
}

func TestApplyWrite(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV1})
	rep, err := Apply(context.Background(), root, twoFilePlan(), Options{Strategy: Write{}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Written || read(t, dir, "main.go") != mainV2 || read(t, dir, "docs/new/notes.md") != "# Notes\n" {
		t.Fatalf("written=%v main.go=%q notes=%q", rep.Written, read(t, dir, "main.go"), read(t, dir, "docs/new/notes.md"))
	}
	o := rep.Diffs[0]
	if o.Status != StatusApplied || o.SHA256Before != Checksum([]byte(mainV1)) || o.SHA256After != Checksum([]byte(mainV2)) || o.Hunks[0].Match != "exact" {
		t.Fatalf("%+v", o)
	}
	if !rep.Diffs[1].Created {
		t.Fatalf("%+v", rep.Diffs[1])
	}
	// The same plan again: already applied (applied_test.go has more).
	rep, err = Apply(context.Background(), root, twoFilePlan(), Options{Strategy: Write{}})
	if err != nil || rep.Diffs[0].Status != StatusNoop || rep.Diffs[1].Status != StatusNoop {
		t.Fatalf("second apply: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestApplyDryRun(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV1})
	rep, err := Apply(context.Background(), root, twoFilePlan(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Written || rep.Strategy != "dry-run" || read(t, dir, "main.go") != mainV1 || rep.Diffs[0].SHA256After != Checksum([]byte(mainV2)) {
		t.Fatalf("%+v", rep)
	}
	if _, err := os.Stat(filepath.Join(dir, "docs")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a dry run created a directory")
	}
}

func TestApplyBackup(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV1})
	rep, err := Apply(context.Background(), root, twoFilePlan(), Options{Strategy: WriteBackup{Suffix: ".orig"}})
	if err != nil {
		t.Fatal(err)
	}
	if read(t, dir, "main.go.orig") != mainV1 || rep.Diffs[0].BackupPath != "main.go.orig" || rep.Diffs[1].BackupPath != "" {
		t.Fatalf("%+v", rep.Diffs)
	}
	// A backup is never overwritten: the plan fails before writing.
	dir, root = tree(t, map[string]string{"main.go": mainV1, "main.go.orig": "older"})
	_, err = Apply(context.Background(), root, twoFilePlan(), Options{Strategy: WriteBackup{Suffix: ".orig"}})
	if CodeOf(err) != CodeBackupExists {
		t.Fatalf("got %v", err)
	}
	if read(t, dir, "main.go") != mainV1 || read(t, dir, "main.go.orig") != "older" {
		t.Fatal("files changed")
	}
	if _, err := Apply(context.Background(), root, twoFilePlan(), Options{Strategy: WriteBackup{Suffix: "/x"}}); CodeOf(err) != CodeField {
		t.Fatalf("got %v", err)
	}
}

func TestApplyAllOrNothing(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV1, "b.txt": "one\ntwo\n"})
	p := twoFilePlan()
	p.Diffs = append(p.Diffs, Diff{Path: "b.txt", Checksum: Checksum([]byte("one\ntwo\n")), UnifiedDiff: "@@ -1,2 +1,2 @@\n one\n-three\n+four\n"})
	rep, err := Apply(context.Background(), root, p, Options{Strategy: Write{}})
	if CodeOf(err) != "hunk_not_found" || !strings.Contains(err.Error(), "diffs[2] (b.txt): hunk 1") {
		t.Fatalf("got %v", err)
	}
	if rep.Written || rep.Failed() != 1 || rep.Diffs[2].Status != StatusFailed || rep.Diffs[2].Hunks[0].Code != "hunk_not_found" {
		t.Fatalf("%+v", rep)
	}
	if read(t, dir, "main.go") != mainV1 {
		t.Fatal("main.go was written although the plan failed")
	}
}

func TestApplyNoop(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV2})
	p := &Plan{Diffs: []Diff{{Path: "main.go", Checksum: Checksum([]byte(mainV2)), UnifiedDiff: mainDiff}}}
	rep, err := Apply(context.Background(), root, p, Options{Strategy: Write{}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diffs[0].Status != StatusNoop || read(t, dir, "main.go") != mainV2 {
		t.Fatalf("%+v", rep.Diffs[0])
	}
}

func TestApplyRejects(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte(mainV1), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, root := tree(t, map[string]string{"main.go": mainV1, "bin.dat": "a\x00b\n", "latin1.txt": "caf\xe9\n"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	sum := Checksum([]byte(mainV1))
	tests := []struct {
		name string
		d    Diff
		code Code
		msg  string
	}{
		{"symlink to a file outside", Diff{Path: "link.go", Checksum: sum, UnifiedDiff: mainDiff}, CodePathRejected, "symbolic link"},
		{"directory symlink outside", Diff{Path: "out/secret", Checksum: sum, UnifiedDiff: mainDiff}, CodePathRejected, "outside the root"},
		{"parent", Diff{Path: "../x", Checksum: sum, UnifiedDiff: mainDiff}, CodePathRejected, "inside the root"},
		{"absolute", Diff{Path: filepath.Join(outside, "secret"), Checksum: sum, UnifiedDiff: mainDiff}, CodePathRejected, "absolute"},
		{"git", Diff{Path: ".git/config", Checksum: emptySum, UnifiedDiff: mainDiff}, CodePathRejected, ".git"},
		{"checksum mismatch", Diff{Path: "main.go", Checksum: emptySum, UnifiedDiff: mainDiff}, CodeChecksumMismatch, "another version"},
		{"missing file with a checksum", Diff{Path: "gone.go", Checksum: sum, UnifiedDiff: mainDiff}, CodeChecksumMismatch, "does not exist"},
		{"header names another file", Diff{Path: "main.go", Checksum: sum, UnifiedDiff: strings.ReplaceAll(mainDiff, "b/main.go", "b/other.go")}, CodePathRejected, `+++ header names "b/other.go"`},
		{"NUL target", Diff{Path: "bin.dat", Checksum: Checksum([]byte("a\x00b\n")), UnifiedDiff: "@@ -1 +1 @@\n-a\n+b\n"}, "binary", "binary"},
		{"invalid UTF-8 target", Diff{Path: "latin1.txt", Checksum: Checksum([]byte("caf\xe9\n")), UnifiedDiff: "@@ -1 +1 @@\n-a\n+b\n"}, "binary", "binary"},
		{"bad diff", Diff{Path: "main.go", Checksum: sum, UnifiedDiff: "no hunks here\n"}, "diff_syntax", "unified_diff: diff line 1: no hunks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Apply(context.Background(), root, &Plan{Diffs: []Diff{tt.d}}, Options{Strategy: Write{}})
			if CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %s %v, want %s containing %q", CodeOf(err), err, tt.code, tt.msg)
			}
			if rep != nil && rep.Written {
				t.Fatal("written")
			}
		})
	}
	if read(t, outside, "secret") != mainV1 {
		t.Fatal("a file outside the root changed")
	}
}

// TestApplyFailingWriteMidway fails each write step of a three-file plan
// in turn: every time, the files are as before, no backup, temporary
// file or new directory is left.
func TestApplyFailingWriteMidway(t *testing.T) {
	steps := []struct{ step, name string }{
		{"backup", "main.go.bak"}, {"write", "main.go"}, {"rename", "main.go"},
		{"write", "docs/new/notes.md"}, {"rename", "docs/new/notes.md"},
		{"backup", "b.txt.bak"}, {"write", "b.txt"}, {"rename", "b.txt"},
	}
	for _, s := range steps {
		t.Run(s.step+" "+s.name, func(t *testing.T) {
			files := map[string]string{"main.go": mainV1, "b.txt": "one\ntwo\n"}
			dir, root := tree(t, files)
			p := twoFilePlan()
			p.Diffs = append(p.Diffs, Diff{Path: "b.txt", Checksum: Checksum([]byte("one\ntwo\n")), UnifiedDiff: "@@ -1,2 +1,2 @@\n one\n-two\n+three\n"})
			injected := errors.New("disk full")
			opts := Options{Strategy: WriteBackup{Suffix: ".bak"}, hook: func(step, name string) error {
				if step == s.step && name == s.name {
					return injected
				}
				return nil
			}}
			rep, err := Apply(context.Background(), root, p, opts)
			if !errors.Is(err, injected) || CodeOf(err) != CodeIO || rep.Written {
				t.Fatalf("got %v", err)
			}
			var got []string
			_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				rel, _ := filepath.Rel(dir, path)
				got = append(got, rel)
				return nil
			})
			if strings.Join(got, " ") != ". b.txt main.go" {
				t.Fatalf("tree after the failure: %q", got)
			}
			for name, content := range files {
				if read(t, dir, name) != content {
					t.Fatalf("%s not restored: %q", name, read(t, dir, name))
				}
			}
		})
	}
}

func TestApplyFileChangedBeforeWrite(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV1})
	opts := Options{Strategy: Write{}, hook: func(step, name string) error { return nil }}
	// The second diff's file changes after planning, before its write.
	p := twoFilePlan()
	p.Diffs[0], p.Diffs[1] = p.Diffs[1], p.Diffs[0]
	opts.hook = func(step, name string) error {
		if step == "rename" && name == "docs/new/notes.md" {
			return os.WriteFile(filepath.Join(dir, "main.go"), []byte("edited meanwhile\n"), 0o644)
		}
		return nil
	}
	_, err := Apply(context.Background(), root, p, opts)
	if CodeOf(err) != CodeChecksumMismatch || !strings.Contains(err.Error(), "changed while") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "docs")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the first file's write was not undone")
	}
	if read(t, dir, "main.go") != "edited meanwhile\n" {
		t.Fatal("the changed file was overwritten")
	}
}

// manyFilePlan changes n existing files under a/ and creates n files in
// new nested directories: more files than syncfsMin, so that the batched
// sync runs where there is one.
func manyFilePlan(n int) (map[string]string, *Plan) {
	files := map[string]string{}
	p := &Plan{}
	for i := range n {
		old := fmt.Sprintf("line %d\nkeep\n", i)
		name := fmt.Sprintf("a/%d/f.txt", i%3)
		name = strings.Replace(name, "f.txt", fmt.Sprintf("f%d.txt", i), 1)
		files[name] = old
		p.Diffs = append(p.Diffs,
			Diff{Path: name, Checksum: Checksum([]byte(old)), UnifiedDiff: fmt.Sprintf("@@ -1,2 +1,2 @@\n-line %d\n+line %d changed\n keep\n", i, i)},
			Diff{Path: fmt.Sprintf("new/%d/deep/n%d.txt", i%2, i), Checksum: emptySum, UnifiedDiff: fmt.Sprintf("--- /dev/null\n+++ b/new/%d/deep/n%d.txt\n@@ -0,0 +1 @@\n+new %d\n", i%2, i, i)},
		)
	}
	return files, p
}

func walk(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, path)
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	return got
}

func TestApplyManyFiles(t *testing.T) {
	files, p := manyFilePlan(12)
	dir, root := tree(t, files)
	rep, err := Apply(context.Background(), root, p, Options{Strategy: WriteBackup{Suffix: ".bak"}})
	if err != nil || !rep.Written {
		t.Fatalf("Apply: %v", err)
	}
	for i := range 12 {
		name := fmt.Sprintf("a/%d/f%d.txt", i%3, i)
		if got, want := read(t, dir, name), fmt.Sprintf("line %d changed\nkeep\n", i); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
		if got := read(t, dir, name+".bak"); got != files[name] {
			t.Errorf("%s.bak = %q", name, got)
		}
		if got, want := read(t, dir, fmt.Sprintf("new/%d/deep/n%d.txt", i%2, i)), fmt.Sprintf("new %d\n", i); got != want {
			t.Errorf("new file %d = %q", i, got)
		}
	}
	for _, name := range walk(t, dir) {
		if strings.Contains(name, ".ctxkit-") {
			t.Errorf("temporary file left: %s", name)
		}
	}
}

// TestApplyManyFilesFailingMidway: a failure after the batched sync and
// some renames restores every file and removes every new directory.
func TestApplyManyFilesFailingMidway(t *testing.T) {
	files, p := manyFilePlan(12)
	dir, root := tree(t, files)
	before := walk(t, dir)
	injected := errors.New("disk full")
	renames := 0
	opts := Options{Strategy: WriteBackup{Suffix: ".bak"}, hook: func(step, name string) error {
		if step == "rename" {
			if renames++; renames == 15 {
				return injected
			}
		}
		return nil
	}}
	if _, err := Apply(context.Background(), root, p, opts); !errors.Is(err, injected) {
		t.Fatalf("got %v", err)
	}
	if after := walk(t, dir); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("tree after the failure:\n%q\nbefore:\n%q", after, before)
	}
	for name, content := range files {
		if read(t, dir, name) != content {
			t.Errorf("%s not restored: %q", name, read(t, dir, name))
		}
	}
}

// TestApplySymlinkedParent: a path whose parent is a symbolic link is
// refused, whether the link leads into .git (a hook or the config, run
// by the next git command) or to another directory of the root, and
// nothing is written.
func TestApplySymlinkedParent(t *testing.T) {
	config := "[core]\n\trepositoryformatversion = 0\n"
	cases := []struct {
		name string
		diff Diff
	}{
		{"config through a link to .git", Diff{Path: "gitlink/config", Checksum: Checksum([]byte(config)),
			UnifiedDiff: "@@ -1,2 +1,3 @@\n [core]\n \trepositoryformatversion = 0\n+\tfsmonitor = ./evil.sh\n"}},
		{"new hook through a link to .git/hooks", Diff{Path: "hk/pre-commit", Checksum: emptySum,
			UnifiedDiff: "--- /dev/null\n+++ b/hk/pre-commit\n@@ -0,0 +1 @@\n+#!/bin/sh\n"}},
		{"new file under a link to .git", Diff{Path: "gitlink/hooks/post-checkout", Checksum: emptySum,
			UnifiedDiff: "--- /dev/null\n+++ b/gitlink/hooks/post-checkout\n@@ -0,0 +1 @@\n+#!/bin/sh\n"}},
		{"file through a link to another directory", Diff{Path: "srclink/main.go", Checksum: Checksum([]byte(mainV1)), UnifiedDiff: mainDiff}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, root := tree(t, map[string]string{".git/config": config, ".git/hooks/README": "hooks\n", "src/main.go": mainV1})
			for link, target := range map[string]string{"gitlink": ".git", "hk": ".git/hooks", "srclink": "src"} {
				if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range []Strategy{DryRun{}, Write{}, WriteBackup{Suffix: ".orig"}} {
				rep, err := Apply(context.Background(), root, &Plan{Diffs: []Diff{c.diff}}, Options{Strategy: s})
				if CodeOf(err) != CodePathRejected || (rep != nil && rep.Written) {
					t.Fatalf("%s: got %v", StrategyName(s), err)
				}
			}
			if got := walk(t, dir); strings.Join(got, " ") != ". .git .git/config .git/hooks .git/hooks/README gitlink hk src src/main.go srclink" {
				t.Fatalf("tree: %q", got)
			}
			if read(t, dir, ".git/config") != config || read(t, dir, "src/main.go") != mainV1 {
				t.Fatal("a file changed")
			}
		})
	}
}

// rollbackPlan changes d/a.txt, then b.txt.
func rollbackPlan() (map[string]string, *Plan) {
	files := map[string]string{"d/a.txt": "one\ntwo\n", "b.txt": "three\nfour\n"}
	return files, &Plan{Diffs: []Diff{
		{Path: "d/a.txt", Checksum: Checksum([]byte(files["d/a.txt"])), UnifiedDiff: "@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"},
		{Path: "b.txt", Checksum: Checksum([]byte(files["b.txt"])), UnifiedDiff: "@@ -1,2 +1,2 @@\n three\n-four\n+FOUR\n"},
	}}
}

// TestApplyRenameFails: the rename itself fails (its temporary file is
// gone), after another file was replaced: that file is restored and the
// tree is as before.
func TestApplyRenameFails(t *testing.T) {
	files, p := rollbackPlan()
	dir, root := tree(t, files)
	opts := Options{Strategy: Write{}, hook: func(step, name string) error {
		if step == "rename" && name == "b.txt" {
			temps, _ := filepath.Glob(filepath.Join(dir, ".b.txt.ctxkit-*.tmp"))
			if len(temps) != 1 {
				t.Errorf("temporary files: %q", temps)
			}
			for _, tmp := range temps {
				os.Remove(tmp)
			}
		}
		return nil
	}}
	rep, err := Apply(context.Background(), root, p, opts)
	if CodeOf(err) != CodeIO || rep.Written || rep.RollbackIncomplete {
		t.Fatalf("got %v, report %+v", err, rep)
	}
	if got := walk(t, dir); strings.Join(got, " ") != ". b.txt d d/a.txt" {
		t.Fatalf("tree: %q", got)
	}
	for name, content := range files {
		if read(t, dir, name) != content {
			t.Fatalf("%s not restored: %q", name, read(t, dir, name))
		}
	}
}

// TestApplyRollbackFails: the write fails after d/a.txt was replaced, and
// restoring it fails too (its directory is gone): the error says so with
// its own code, wraps both failures, and the report names the file.
func TestApplyRollbackFails(t *testing.T) {
	files, p := rollbackPlan()
	dir, root := tree(t, files)
	injected := errors.New("disk full")
	opts := Options{Strategy: Write{}, hook: func(step, name string) error {
		if step == "rename" && name == "b.txt" {
			if read(t, dir, "d/a.txt") != "one\nTWO\n" {
				t.Errorf("d/a.txt not yet written")
			}
			if err := os.RemoveAll(filepath.Join(dir, "d")); err != nil {
				t.Error(err)
			}
			return injected
		}
		return nil
	}}
	rep, err := Apply(context.Background(), root, p, opts)
	if CodeOf(err) != CodeRollbackIncomplete || !errors.Is(err, injected) || !strings.Contains(err.Error(), "d/a.txt") {
		t.Fatalf("got %v", err)
	}
	if rep.Written || !rep.RollbackIncomplete || strings.Join(rep.Unrestored, " ") != "d/a.txt" {
		t.Fatalf("report %+v", rep)
	}
	if read(t, dir, "b.txt") != files["b.txt"] {
		t.Fatal("b.txt changed")
	}
}
