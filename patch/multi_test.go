package patch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sectionWant is what a test expects of one section.
type sectionWant struct {
	git                  bool
	old, new             string
	renameFrom, renameTo string
	oldMode, newMode     string
	newFile, deleted     bool
	binary               bool
	hunks                int
}

func got(s Section) sectionWant {
	return sectionWant{git: s.Git, old: s.OldName, new: s.NewName, renameFrom: s.RenameFrom, renameTo: s.RenameTo,
		oldMode: s.OldMode, newMode: s.NewMode, newFile: s.NewFile, deleted: s.Deleted, binary: s.Binary, hunks: s.Hunks}
}

func readMulti(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "multi", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSplitTools splits what git diff, git format-patch, diff -ruN and
// diff -u write (testdata/multi holds their real output).
func TestSplitTools(t *testing.T) {
	gitSections := []sectionWant{
		{git: true, old: "a/bin.dat", new: "b/bin.dat", binary: true},
		{git: true, old: "a/moved.txt", new: "b/docs/moved.txt", renameFrom: "moved.txt", renameTo: "docs/moved.txt", hunks: 1},
		{git: true, old: DevNull, new: "b/docs/new.txt", newMode: "100644", newFile: true, hunks: 1},
		{git: true, old: "a/emptygone", new: "b/emptynew", renameFrom: "emptygone", renameTo: "emptynew"},
		{git: true, old: "a/gone.txt", new: DevNull, oldMode: "100644", deleted: true, hunks: 1},
		{git: true, old: "a/pure.txt", new: "b/renamed.txt", renameFrom: "pure.txt", renameTo: "renamed.txt"},
		{git: true, old: "a/run.sh", new: "b/run.sh", oldMode: "100644", newMode: "100755"},
		{git: true, old: "a/src/main.go", new: "b/src/main.go", hunks: 1},
		{git: true, old: "a/with space.txt", new: "b/with space.txt", hunks: 1},
		{git: true, old: DevNull, new: "b/é.txt", newMode: "100644", newFile: true, hunks: 1},
	}
	cases := []struct {
		file            string
		want            []sectionWant
		preamble, trail string // prefixes of the preamble and the trailer
	}{
		{"git.patch", gitSections, "", ""},
		{"format.patch", gitSections, "From ", "-- \n"},
		{"ruN.patch", []sectionWant{
			{old: DevNull, new: "new/src/add.txt", hunks: 1},
			{old: "old/src/del.txt", new: DevNull, hunks: 1},
			{old: "old/src/x.txt", new: "new/src/x.txt", hunks: 1},
		}, "", ""},
		{"u.patch", []sectionWant{{old: "x.txt.orig", new: "x.txt", hunks: 1}}, "", ""},
		{"empty.patch", []sectionWant{
			{git: true, old: "a/e1", new: DevNull, oldMode: "100644", deleted: true},
			{git: true, old: DevNull, new: "b/e2", newMode: "100644", newFile: true},
			{git: true, old: DevNull, new: "b/z.txt", newMode: "100644", newFile: true, hunks: 1},
		}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			text := readMulti(t, c.file)
			m, err := Split(text)
			if err != nil {
				t.Fatal(err)
			}
			checkCover(t, text, m)
			if len(m.Sections) != len(c.want) {
				t.Fatalf("%d sections, want %d", len(m.Sections), len(c.want))
			}
			for i, s := range m.Sections {
				if g := got(s); g != c.want[i] {
					t.Errorf("section %d:\n got %+v\nwant %+v", i, g, c.want[i])
				}
				if s.Hunks > 0 {
					f, err := Parse(s.Text)
					if err != nil || len(f.Hunks) != s.Hunks {
						t.Errorf("section %d: Parse: %v", i, err)
					}
				}
			}
			if !strings.HasPrefix(m.Preamble, c.preamble) || (c.preamble == "") != (m.Preamble == "") {
				t.Errorf("preamble %q", m.Preamble)
			}
			if !strings.HasPrefix(m.Trailer, c.trail) || (c.trail == "") != (m.Trailer == "") {
				t.Errorf("trailer %q", m.Trailer)
			}
		})
	}
}

// checkCover checks that m's pieces, joined, are text and that each
// section's Line is where its text starts.
func checkCover(t testing.TB, text string, m *Multi) {
	t.Helper()
	var b strings.Builder
	b.WriteString(m.Preamble)
	for i, s := range m.Sections {
		if line := 1 + strings.Count(b.String(), "\n"); s.Line != line {
			t.Fatalf("section %d: Line %d, its text starts at line %d", i, s.Line, line)
		}
		if s.HeaderLine < s.Line {
			t.Fatalf("section %d: HeaderLine %d before Line %d", i, s.HeaderLine, s.Line)
		}
		b.WriteString(s.Text)
	}
	b.WriteString(m.Trailer)
	if b.String() != text {
		t.Fatalf("the pieces do not re-join to the input:\n%q\n%q", b.String(), text)
	}
}

// TestSplitEdges: the structure of model-written and unusual patches.
func TestSplitEdges(t *testing.T) {
	cases := []struct {
		name, text string
		want       []sectionWant
		trailer    string
	}{
		{"prose around two files", "Here you go:\n\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n\nThat is all.\n",
			[]sectionWant{{old: "a/x", new: "b/x", hunks: 1}, {old: "a/y", new: "b/y", hunks: 1}}, "That is all.\n"},
		{"deleted lines that look like headers, within counts", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- a\n+++ b\n",
			[]sectionWant{{old: "a/x", new: "b/x", hunks: 1}}, ""},
		{"wrong counts: lines keep going", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n-b\n+c\n d\n",
			[]sectionWant{{old: "a/x", new: "b/x", hunks: 1}}, ""},
		{"unnumbered hunks", "--- x\n+++ x\n@@ ... @@\n a\n-b\n+c\n@@\n-d\n+e\n",
			[]sectionWant{{old: "x", new: "x", hunks: 2}}, ""},
		{"diff -r noise between files", "diff -ru a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nOnly in b: z\ndiff -ru a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\nBinary files a/w and b/w differ\n",
			[]sectionWant{{old: "a/x", new: "b/x", hunks: 1}, {old: "a/y", new: "b/y", hunks: 1}, {old: "a/w", new: "b/w", binary: true}}, ""},
		{"git binary patch", "diff --git a/b b/b\nindex 1..2 100644\nGIT binary patch\nliteral 2\nJcmZQ%00031\n\nliteral 2\nJcmZQz00031\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
			[]sectionWant{{git: true, old: "a/b", new: "b/b", binary: true}, {git: true, old: "a/x", new: "b/x", hunks: 1}}, ""},
		{"crlf patch", "--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
			[]sectionWant{{old: "a/x", new: "b/x", hunks: 1}}, ""},
		{"no final newline", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b",
			[]sectionWant{{old: "a/x", new: "b/x", hunks: 1}}, ""},
		{"quoted git names with a space", "diff --git \"a/x y\" \"b/x y\"\nnew file mode 100755\n",
			[]sectionWant{{git: true, old: DevNull, new: "b/x y", newMode: "100755", newFile: true}}, ""},
		{"epoch without an empty range is a real side", "--- x\t1970-01-01 00:00:00.000000000 +0000\n+++ x\t2024-01-01 00:00:00.000000000 +0000\n@@ -1 +1 @@\n-a\n+b\n",
			[]sectionWant{{old: "x", new: "x", hunks: 1}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Split(c.text)
			if err != nil {
				t.Fatal(err)
			}
			checkCover(t, c.text, m)
			if len(m.Sections) != len(c.want) {
				t.Fatalf("%d sections, want %d: %+v", len(m.Sections), len(c.want), m.Sections)
			}
			for i, s := range m.Sections {
				if g := got(s); g != c.want[i] {
					t.Errorf("section %d:\n got %+v\nwant %+v", i, g, c.want[i])
				}
			}
			if m.Trailer != c.trailer {
				t.Errorf("trailer %q, want %q", m.Trailer, c.trailer)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	cases := []struct {
		name, text string
		code       Code
		line       int
	}{
		{"nothing", "", CodeSyntax, 1},
		{"prose only", "no diff here\n", CodeSyntax, 1},
		{"a hunk without headers", "@@ -1 +1 @@\n-a\n+b\n", CodeSyntax, 1},
		{"a hunk after prose after a file", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nsome prose\n@@ -5 +5 @@\n-c\n+d\n", CodeSyntax, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Split(c.text)
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != c.code || pe.Line != c.line {
				t.Fatalf("got %v (%+v), want %s at line %d", err, pe, c.code, c.line)
			}
		})
	}
	if _, err := Split(strings.Repeat("x", MaxMultiBytes+1)); err == nil || err.(*Error).Code != CodeTooLarge {
		t.Fatalf("too large: %v", err)
	}
}

// FuzzSplitPatch: Split never panics, fails only with *Error, and its
// pieces re-join to the input.
func FuzzSplitPatch(f *testing.F) {
	for _, name := range []string{"git.patch", "format.patch", "ruN.patch", "u.patch", "empty.patch"} {
		f.Add(readMulti(f, name))
	}
	f.Add("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- a\n+++ b\n-- \n2.0\n")
	f.Add("diff --git \"a/x\\\" y\" b/z\nrename from x\nrename to z\n")
	f.Add("diff -ru a/x b/x\nBinary files a/x and b/x differ\nOnly in a: q\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := Split(text)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		if len(m.Sections) == 0 {
			t.Fatal("no sections and no error")
		}
		checkCover(t, text, m)
	})
}
