package patch

import (
	"errors"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, diff string
		code       Code
		line       int
		msg        string
	}{
		{"NUL byte", "@@ -1 +1 @@\n-a\n+b\x00\n", CodeBinary, 3, "NUL"},
		{"binary diff", "diff --git a/x b/x\nBinary files a/x and b/x differ\n", CodeBinary, 2, "binary"},
		{"no hunks", "--- a/x\n+++ b/x\n", CodeSyntax, 2, "no hunks"},
		{"empty", "", CodeSyntax, 0, "no hunks"},
		{"empty hunk", "@@ -1 +1 @@\n@@ -3 +3 @@\n-a\n+b\n", CodeSyntax, 1, "empty"},
		{"context only", "@@ -1 +1 @@\n a\n", CodeSyntax, 1, "no + or - lines"},
		{"two files", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", CodeSyntax, 6, "one file"},
		{"two git diffs", "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/y b/y\n", CodeSyntax, 5, "one file"},
		{"marker first", "@@ -1 +1 @@\n\\ No newline at end of file\n-a\n", CodeSyntax, 2, "marker"},
		{"text after a hunk", "@@ -1 +1 @@\n-a\n+b\nI changed a to b.\n", CodeSyntax, 4, "unexpected text after hunk 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.diff)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *Error", err)
			}
			if pe.Code != tt.code || pe.Line != tt.line || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %s at line %d: %v; want %s at line %d containing %q", pe.Code, pe.Line, err, tt.code, tt.line, tt.msg)
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	tests := []struct {
		name, diff   string
		oldN, newN   string
		numbered     bool
		start, count int
		lines        int
	}{
		{"git", "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -3,2 +3,2 @@ func f() {\n a\n-b\n+c\n", "a/x.go", "b/x.go", true, 3, 2, 3},
		{"timestamps", "--- x.go\t2024-01-01 00:00:00\n+++ x.go\t2024-01-02 00:00:00\n@@ -1 +1 @@\n-b\n+c\n", "x.go", "x.go", true, 1, 1, 2},
		{"quoted", "--- \"a/sp ace\\t.go\"\n+++ \"b/sp ace\\t.go\"\n@@ -1,0 +1 @@\n+c\n", "a/sp ace\t.go", "b/sp ace\t.go", true, 1, 0, 1},
		{"new file", "--- /dev/null\n+++ b/n.go\n@@ -0,0 +1,2 @@\n+a\n+b\n", DevNull, "b/n.go", true, 0, 0, 2},
		{"no numbers", "@@ ... @@\n-b\n+c\n", "", "", false, 0, 0, 2},
		{"junk numbers", "@@ -x,y +1 @@\n-b\n+c\n", "", "", false, 0, 0, 2},
		{"deleted line looking like a header", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- a\n+++ b\n", "a/x", "b/x", true, 1, 2, 2},
		{"trailing empty lines", "@@ -1,2 +1,2 @@\n-b\n+c\n\n\n", "", "", true, 1, 2, 2},
		{"blank context inside", "@@ -1,3 +1,3 @@\n-b\n\n+c\n \n", "", "", true, 1, 3, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(tt.diff)
			if err != nil {
				t.Fatal(err)
			}
			h := f.Hunks[0]
			if f.OldName != tt.oldN || f.NewName != tt.newN || h.Numbered != tt.numbered || h.OldStart != tt.start || h.OldLines != tt.count || len(h.Lines) != tt.lines {
				t.Fatalf("got %q %q numbered=%v start=%d count=%d lines=%d", f.OldName, f.NewName, h.Numbered, h.OldStart, h.OldLines, len(h.Lines))
			}
		})
	}
}

func TestApplyRefusesBinaryTargets(t *testing.T) {
	f, err := Parse("@@ -1 +1 @@\n-a\n+b\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"a\n\x00\n", "a\n\xff\xfe\n"} {
		_, err := Apply([]byte(src), f)
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeBinary {
			t.Errorf("Apply(%q): got %v, want a binary error", src, err)
		}
	}
}

func TestApplyBoundsRepetitiveTargets(t *testing.T) {
	// Many identical lines and a hunk that almost matches everywhere: the
	// search gives up with an error instead of running for minutes.
	src := strings.Repeat("x\n", 60000)
	diff := "@@ ... @@\n" + strings.Repeat(" x\n", 2500) + "-y\n+z\n"
	f, err := Parse(diff)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply([]byte(src), f)
	var pe *Error
	if !errors.As(err, &pe) || (pe.Code != CodeTooLarge && pe.Code != CodeNotFound) {
		t.Fatalf("got %v", err)
	}
}

// TestErrorPath: an error about one hunk names it by its place in the
// parsed diff as well as by its number; one about the whole diff has no
// Path.
func TestErrorPath(t *testing.T) {
	_, err := Parse("@@ -1 +1 @@\n-a\n+b\n@@ -3 +3 @@\n c\n")
	var pe *Error
	if !errors.As(err, &pe) || pe.Hunk != 2 || pe.Path != "hunks[1]" {
		t.Fatalf("parse: got %#v, want hunk 2 at hunks[1]", err)
	}
	f, err := Parse("@@ -1,2 +1,2 @@\n x\n-a\n+b\n@@ -5,2 +5,2 @@\n y\n-c\n+d\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply([]byte("x\na\nq\nq\ny\nz\n"), f)
	if !errors.As(err, &pe) || pe.Code != CodeNotFound || pe.Hunk != 2 || pe.Path != "hunks[1]" {
		t.Fatalf("apply: got %#v, want hunk 2 not found at hunks[1]", err)
	}
	_, err = Parse("--- a/x\n+++ b/x\n")
	if !errors.As(err, &pe) || pe.Hunk != 0 || pe.Path != "" {
		t.Fatalf("parse: got %#v, want no hunk and no Path", err)
	}
}
