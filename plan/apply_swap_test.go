package plan

import (
	"context"
	"os"
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
