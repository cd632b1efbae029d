package plan

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// swapPlan changes d/e/a.txt (two directories deep) and b.txt, in that
// order.
func swapPlan() (map[string]string, *Plan) {
	files := map[string]string{"d/e/a.txt": "one\ntwo\n", "b.txt": "three\nfour\n"}
	return files, &Plan{Diffs: []Diff{
		{Path: "d/e/a.txt", Checksum: Checksum([]byte(files["d/e/a.txt"])), UnifiedDiff: "@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"},
		{Path: "b.txt", Checksum: Checksum([]byte(files["b.txt"])), UnifiedDiff: "@@ -1,2 +1,2 @@\n three\n-four\n+FOUR\n"},
	}}
}

// TestApplyDirectorySwapped: a directory on a file's path that is
// replaced after the files were read (by a symbolic link to where it
// went, by another real directory, or moved out of the root) is not
// written into, though its handle is still open: the plan fails before
// the file's temporary file is created or before the rename, nothing is
// written where the directory went, and the rest is rolled back.
func TestApplyDirectorySwapped(t *testing.T) {
	swaps := map[string]func(t *testing.T, dir, moved string){
		"link": func(t *testing.T, dir, moved string) {
			if err := os.Symlink(moved, filepath.Join(dir, "d", "e")); err != nil {
				t.Fatal(err)
			}
		},
		"other directory": func(t *testing.T, dir, moved string) {
			if err := os.MkdirAll(filepath.Join(dir, "d", "e"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "d", "e", "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"moved out of the root": nil,
	}
	for name, swap := range swaps {
		for _, step := range []string{"write", "rename"} {
			t.Run(name+" before "+step, func(t *testing.T) {
				files, p := swapPlan()
				dir, root := tree(t, files)
				outside := t.TempDir()
				moved := filepath.Join(outside, "e")
				if swap != nil {
					moved = filepath.Join(dir, "d", "e.old")
				}
				opts := Options{Strategy: Write{}, hook: func(s, name string) error {
					if s == step && name == "d/e/a.txt" {
						if err := os.Rename(filepath.Join(dir, "d", "e"), moved); err != nil {
							t.Fatal(err)
						}
						if swap != nil {
							swap(t, dir, moved)
						}
					}
					return nil
				}}
				rep, err := Apply(context.Background(), root, p, opts)
				if CodeOf(err) != CodePathRejected || rep.Written || rep.RollbackIncomplete {
					t.Fatalf("got %v, report %+v", err, rep)
				}
				if got := read(t, moved, "a.txt"); got != files["d/e/a.txt"] {
					t.Fatalf("the moved directory's file changed: %q", got)
				}
				if got := read(t, dir, "b.txt"); got != files["b.txt"] {
					t.Fatalf("b.txt: %q", got)
				}
				for _, d := range []string{dir, outside} {
					for _, n := range walk(t, d) {
						if strings.Contains(n, ".ctxkit-") {
							t.Errorf("temporary file left: %s", n)
						}
					}
				}
			})
		}
	}
}

// TestApplyFileReplacedSameContent: a file renamed over by another file
// with the very same content between planning and its write is found
// out: the file to be replaced is the one read, checked through the
// handle kept open, not only its content.
func TestApplyFileReplacedSameContent(t *testing.T) {
	files, p := swapPlan()
	dir, root := tree(t, files)
	opts := Options{Strategy: Write{}, hook: func(step, name string) error {
		if step == "rename" && name == "d/e/a.txt" {
			tmp := filepath.Join(dir, "d", "e", "other")
			if err := os.WriteFile(tmp, []byte(files["d/e/a.txt"]), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "d", "e", "a.txt")); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}}
	rep, err := Apply(context.Background(), root, p, opts)
	if CodeOf(err) != CodeChecksumMismatch || !strings.Contains(err.Error(), "changed while") || rep.Written {
		t.Fatalf("got %v", err)
	}
	if got := strings.Join(walk(t, dir), " "); got != ". b.txt d d/e d/e/a.txt" {
		t.Fatalf("tree: %q", got)
	}
	for name, content := range files {
		if read(t, dir, name) != content {
			t.Fatalf("%s: %q", name, read(t, dir, name))
		}
	}
}

// TestApplyFileGrown: a file that grows in place (same file, more bytes)
// after it was read is found out when it is read again through the
// handle kept open.
func TestApplyFileGrown(t *testing.T) {
	files, p := swapPlan()
	dir, root := tree(t, files)
	opts := Options{Strategy: Write{}, hook: func(step, name string) error {
		if step == "rename" && name == "b.txt" {
			f, err := os.OpenFile(filepath.Join(dir, "b.txt"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("five\n"); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}}
	_, err := Apply(context.Background(), root, p, opts)
	if CodeOf(err) != CodeChecksumMismatch {
		t.Fatalf("got %v", err)
	}
	if got := read(t, dir, "b.txt"); got != files["b.txt"]+"five\n" {
		t.Fatalf("b.txt: %q", got)
	}
	if got := read(t, dir, "d/e/a.txt"); got != files["d/e/a.txt"] {
		t.Fatalf("d/e/a.txt not restored: %q", got)
	}
}

// TestApplyDirectoryAppearsMeanwhile: a directory missing when the
// files were read and created by someone else before the write is used
// (not created again, not removed by a rollback).
func TestApplyDirectoryAppearsMeanwhile(t *testing.T) {
	dir, root := tree(t, map[string]string{"main.go": mainV1})
	p := twoFilePlan()
	opts := Options{Strategy: Write{}, hook: func(step, name string) error {
		if step == "write" && name == "main.go" {
			if err := os.MkdirAll(filepath.Join(dir, "docs", "new"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}}
	rep, err := Apply(context.Background(), root, p, opts)
	if err != nil || !rep.Written {
		t.Fatalf("got %v", err)
	}
	if got := read(t, dir, "docs/new/notes.md"); got != "# Notes\n" {
		t.Fatalf("notes: %q", got)
	}
}

// TestApplyDirectoryMovedMidStep: a directory moved (into .git or out of
// the root) between two files of one step, after it was used for the
// first, is not written into for the second: every use of a directory
// checks its path again, also within a step and also once syncfs makes
// the plan durable. Only what was written before the move is there.
func TestApplyDirectoryMovedMidStep(t *testing.T) {
	edit := func(names ...string) (map[string]string, *Plan) {
		files := map[string]string{".git/HEAD": "ref\n"}
		p := &Plan{}
		for i, name := range names {
			old := fmt.Sprintf("line %d\nkeep\n", i)
			files[name] = old
			p.Diffs = append(p.Diffs, Diff{Path: name, Checksum: Checksum([]byte(old)),
				UnifiedDiff: fmt.Sprintf("@@ -1,2 +1,2 @@\n-line %d\n+line %d changed\n keep\n", i, i)})
		}
		return files, p
	}
	many := func(n int, name func(i int) string) []string {
		var names []string
		for i := range n {
			names = append(names, name(i))
		}
		return names
	}
	cases := []struct {
		name        string
		files       []string
		step, at    string // the hook's step and file that move the directory
		move        string // the directory moved
		outside     bool   // out of the root, not into .git
		writtenOnce string // the one file written before the move, if any
	}{
		{"rename, same directory, fsync each", many(2, func(i int) string { return fmt.Sprintf("x/f%d", i) }), "rename", "x/f1", "x", false, "x/f0"},
		{"rename, same directory, syncfs", many(syncfsMin, func(i int) string { return fmt.Sprintf("x/f%d", i) }), "rename", "x/f1", "x", false, "x/f0"},
		{"rename, parent used by a sibling", many(syncfsMin, func(i int) string { return fmt.Sprintf("p/%c/f%d", 'a'+i%2, i) }), "rename", "p/b/f1", "p", false, "p/a/f0"},
		{"rename, out of the root", many(syncfsMin, func(i int) string { return fmt.Sprintf("x/f%d", i) }), "rename", "x/f1", "x", true, "x/f0"},
		{"create, after the directory's check", []string{"d/f0", "e/f1"}, "write", "e/f1", "d", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, p := edit(c.files...)
			dir, root := tree(t, files)
			to := filepath.Join(dir, ".git", c.move)
			if c.outside {
				to = filepath.Join(t.TempDir(), c.move)
			}
			var staged []string // temporary files in the moved directory when the syncs begin
			opts := Options{Strategy: Write{}, hook: func(step, name string) error {
				if step == c.step && name == c.at {
					if err := os.Rename(filepath.Join(dir, c.move), to); err != nil {
						t.Fatal(err)
					}
				}
				if (step == "fsync" || step == "syncfs") && staged == nil {
					staged = []string{}
					for _, name := range walk(t, to) {
						if strings.Contains(name, ".ctxkit-") {
							staged = append(staged, name)
						}
					}
				}
				return nil
			}}
			rep, err := Apply(context.Background(), root, p, opts)
			if err == nil || rep.Written {
				t.Fatalf("the plan went through: %+v", rep)
			}
			if len(staged) > 0 {
				t.Errorf("temporary files created in the moved directory: %v", staged)
			}
			for _, name := range walk(t, to) {
				b, _ := os.ReadFile(filepath.Join(to, name))
				moved := path.Join(c.move, name)
				if strings.Contains(name, ".ctxkit-") || strings.Contains(string(b), "changed") && moved != c.writtenOnce {
					t.Errorf("written into the moved directory: %s", moved)
				}
			}
		})
	}
}

// TestApplyNewDirectoryInMovedParent: a new directory is not created in
// a parent moved out of the root after an earlier file used it.
func TestApplyNewDirectoryInMovedParent(t *testing.T) {
	files := map[string]string{"x/f0": "line 0\nkeep\n"}
	p := &Plan{Diffs: []Diff{
		{Path: "x/f0", Checksum: Checksum([]byte(files["x/f0"])), UnifiedDiff: "@@ -1,2 +1,2 @@\n-line 0\n+line 0 changed\n keep\n"},
		{Path: "x/new/f1", Checksum: emptySum, UnifiedDiff: "--- /dev/null\n+++ b/x/new/f1\n@@ -0,0 +1 @@\n+changed\n"},
	}}
	dir, root := tree(t, files)
	outside := t.TempDir()
	opts := Options{Strategy: Write{}, hook: func(step, name string) error {
		if step == "write" && name == "x/new/f1" {
			if err := os.Rename(filepath.Join(dir, "x"), filepath.Join(outside, "x")); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}}
	rep, err := Apply(context.Background(), root, p, opts)
	if CodeOf(err) != CodePathRejected || rep.Written || rep.RollbackIncomplete {
		t.Fatalf("got %v, %+v", err, rep)
	}
	if got := strings.Join(walk(t, outside), " "); got != ". x x/f0" {
		t.Fatalf("outside the root: %s", got)
	}
}
