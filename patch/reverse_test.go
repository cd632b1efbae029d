package patch

import (
	"errors"
	"strings"
	"testing"
)

const revSrc = `package main

import "fmt"

func add(a, b int) int {
	return a + b
}

func main() {
	fmt.Println(add(1, 2))
}
`

// TestReverseRoundTrip applies each diff, then its reverse exactly to the
// result: the original comes back byte for byte.
func TestReverseRoundTrip(t *testing.T) {
	cases := []struct {
		name, src, diff string
	}{
		{"one line", revSrc, "--- a/m.go\n+++ b/m.go\n@@ -5,3 +5,3 @@\n func add(a, b int) int {\n-\treturn a + b\n+\treturn b + a\n }\n"},
		{"wrong header lines", revSrc, "@@ -50,3 +50,4 @@\n func add(a, b int) int {\n \treturn a + b\n+\t// sum\n }\n"},
		{"two hunks", revSrc, "@@ -1,3 +1,3 @@\n-package main\n+package adder\n \n import \"fmt\"\n@@ -9,3 +9,3 @@\n func main() {\n-\tfmt.Println(add(1, 2))\n+\tfmt.Println(add(2, 3))\n }\n"},
		{"crlf file", strings.ReplaceAll(revSrc, "\n", "\r\n"), "@@ -5,3 +5,4 @@\n func add(a, b int) int {\n+\t// add adds\n \treturn a + b\n }\n"},
		{"no newline at end, kept", "a\nb\nc", "@@ -2,2 +2,2 @@\n b\n-c\n+C\n"},
		{"newline added at end", "a\nb\nc", "@@ -2,2 +2,2 @@\n b\n-c\n\\ No newline at end of file\n+c\n"},
		{"newline removed at end", "a\nb\nc\n", "@@ -2,2 +2,2 @@\n b\n-c\n+c\n\\ No newline at end of file\n"},
		{"insertion at the top", "x\ny\n", "@@ -1 +1,3 @@\n+// header\n+\n x\n"},
		{"new file", "", "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"},
		{"deletion", "one\ntwo\n", "--- a/n.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.diff)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Apply([]byte(c.src), f)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ApplyExact(res.Content, Reverse(f))
			if err != nil {
				t.Fatalf("reverse of %q: %v", res.Content, err)
			}
			if string(back) != c.src {
				t.Fatalf("reverse gave %q, want %q", back, c.src)
			}
		})
	}
}

// TestApplyExactRefuses: whatever is not exactly the diff's result is
// refused, never bent into place.
func TestApplyExactRefuses(t *testing.T) {
	cases := []struct {
		name, src, diff string
		code            Code
	}{
		{"line changed since", revSrc, "@@ -5,3 +5,3 @@\n func add(a, b int) int {\n-\treturn a + b \n+\treturn b + a\n }\n", CodeNotFound},
		{"indentation differs", revSrc, "@@ -5,3 +5,3 @@\n func add(a, b int) int {\n-    return a + b\n+\treturn b + a\n }\n", CodeNotFound},
		{"new file over content", "x\n", "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n", CodeNotFound},
		{"deletion leaves bytes", "one\ntwo\nthree\n", "--- a/x\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n", CodeNotFound},
		{"insertion past the end", "a\n", "@@ -7,0 +8 @@\n+b\n", CodeNotFound},
		{"hunks out of order", "a\nb\nc\nd\n", "@@ -3 +3 @@\n-c\n+C\n@@ -1 +1 @@\n-a\n+A\n", CodeNotFound},
		{"marker on a line that is not last", "a\nb\n", "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+A\n", CodeNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.diff)
			if err != nil {
				t.Fatal(err)
			}
			out, err := ApplyExact([]byte(c.src), f)
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != c.code {
				t.Fatalf("got %q, %v; want code %s", out, err, c.code)
			}
		})
	}
}

// TestApplyExactNearest: of two exact copies, the one nearer the header's
// line is taken.
func TestApplyExactNearest(t *testing.T) {
	src := "x\nsame\nx\nx\nx\nx\nsame\nx\n"
	for _, c := range []struct {
		header string
		want   string
	}{
		{"@@ -2 +2 @@", "x\nSAME\nx\nx\nx\nx\nsame\nx\n"},
		{"@@ -6 +6 @@", "x\nsame\nx\nx\nx\nx\nSAME\nx\n"},
	} {
		f, err := Parse(c.header + "\n-same\n+SAME\n")
		if err != nil {
			t.Fatal(err)
		}
		out, err := ApplyExact([]byte(src), f)
		if err != nil || string(out) != c.want {
			t.Fatalf("%s: got %q, %v; want %q", c.header, out, err, c.want)
		}
	}
}

// TestApplyExactInsertion: a hunk without old lines goes exactly where
// its header says.
func TestApplyExactInsertion(t *testing.T) {
	for header, want := range map[string]string{
		"@@ -0,0 +1 @@": "x\na\nb\n",
		"@@ -1,0 +2 @@": "a\nx\nb\n",
		"@@ -2,0 +3 @@": "a\nb\nx\n",
	} {
		f, err := Parse(header + "\n+x\n")
		if err != nil {
			t.Fatal(err)
		}
		out, err := ApplyExact([]byte("a\nb\n"), f)
		if err != nil || string(out) != want {
			t.Fatalf("%s: got %q, %v; want %q", header, out, err, want)
		}
	}
}

func TestReverseTwiceIsTheDiff(t *testing.T) {
	f, err := Parse("--- /dev/null\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\n+b\n")
	if err != nil {
		t.Fatal(err)
	}
	r := Reverse(f)
	if !r.IsDelete() || r.IsNew() || r.Hunks[0].Header != "@@ -1,2 +0,0 @@" || r.Hunks[0].Lines[0].Op != Delete {
		t.Fatalf("reverse: %+v", r)
	}
	if f.Hunks[0].Lines[0].Op != Insert {
		t.Fatal("Reverse changed its argument")
	}
	rr := Reverse(r)
	if rr.OldName != f.OldName || rr.NewName != f.NewName || rr.Hunks[0].Header != "@@ -0,0 +1,2 @@" || rr.Hunks[0].Lines[1] != f.Hunks[0].Lines[1] {
		t.Fatalf("reverse of reverse: %+v", rr)
	}
}

// FuzzReverse: ApplyExact never panics and fails only with *Error, on a
// diff and its reverse alike.
func FuzzReverse(f *testing.F) {
	f.Add(revSrc, "@@ -5,3 +5,3 @@\n func add(a, b int) int {\n-\treturn a + b\n+\treturn b + a\n }\n")
	f.Add("a\nb\nc", "@@ -2,2 +2,2 @@\n b\n-c\n\\ No newline at end of file\n+c\n")
	f.Add("", "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n")
	f.Fuzz(func(t *testing.T, src, diff string) {
		p, err := Parse(diff)
		if err != nil {
			return
		}
		if _, err := ApplyExact([]byte(src), p); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
		}
		if _, err := ApplyExact([]byte(src), Reverse(p)); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
		}
	})
}
