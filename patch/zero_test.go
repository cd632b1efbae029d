package patch

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRuleIndentEveryPass: added lines indented against the file's
// convention are re-indented whichever pass placed their hunk, by the
// mapping the diff's old lines show against the file's; without one, or
// with spaces left over, the hunk is refused rather than written with
// mixed indentation.
func TestRuleIndentEveryPass(t *testing.T) {
	goFile := "package p\n\nfunc f() {\n\ta()\n\tb()\n}\n\nfunc g() {\n\tc()\n}\n"
	// The first hunk's context shows four spaces written for a tab; the
	// second's context is unindented, so it is placed exactly.
	spaced := "@@ -3,4 +3,5 @@\n func f() {\n     a()\n+    x()\n     b()\n }\n@@ -8,3 +9,3 @@\n func g() {\n-\tc()\n+%s\n }\n"
	pyFile := "def f():\n    a()\n    b()\n\n\ndef g():\n    c()\n"
	cases := []ruleCase{
		{
			name:  "an exactly placed hunk takes the mapping another hunk shows",
			file:  goFile,
			diff:  fmt.Sprintf(spaced, "    d()"),
			want:  "package p\n\nfunc f() {\n\ta()\n\tx()\n\tb()\n}\n\nfunc g() {\n\td()\n}\n",
			match: []string{"indent", "exact"},
		},
		{
			name: "spaces left over by the mapping are refused",
			file: goFile,
			diff: fmt.Sprintf(spaced, "      d()"),
			err:  CodeAmbiguous,
			msg:  []string{"hunk 2", "6 leading spaces", "4 spaces per tab"},
		},
		{
			name: "without a mapping the hunk is refused",
			file: goFile,
			diff: "@@ -8,3 +8,3 @@\n func g() {\n-\tc()\n+    d()\n }\n",
			err:  CodeAmbiguous,
			msg:  []string{"indented with spaces where the file indents with tabs", "no indented line"},
		},
		{
			name:  "tabs in a diff for a file indented with spaces",
			file:  pyFile,
			diff:  "@@ -1,3 +1,4 @@\n def f():\n \ta()\n+\tx()\n \tb()\n@@ -6,2 +7,2 @@\n def g():\n-    c()\n+\td()\n",
			want:  "def f():\n    a()\n    x()\n    b()\n\n\ndef g():\n    d()\n",
			match: []string{"indent", "exact"},
		},
		{
			name: "the indentation pass refuses an added line shallower than one tab",
			file: goFile,
			diff: "@@ -3,4 +3,5 @@\n func f() {\n     a()\n+  x()\n     b()\n }\n",
			err:  CodeAmbiguous,
			msg:  []string{"2 spaces, less than the diff's 4 spaces per tab"},
		},
		{
			name:  "a diff indented as the file keeps its space-indented lines",
			file:  goFile,
			diff:  "@@ -3,4 +3,5 @@\n func f() {\n \ta()\n+  raw text\n \tb()\n }\n",
			want:  "package p\n\nfunc f() {\n\ta()\n  raw text\n\tb()\n}\n\nfunc g() {\n\tc()\n}\n",
			match: []string{"exact"},
		},
	}
	runRuleCases(t, cases)
}

// TestRuleHeaderBetweenCopies: a hunk whose old lines are at two places,
// with its header midway between them, is refused, whatever its shape
// says of where a diff tool would have put it.
func TestRuleHeaderBetweenCopies(t *testing.T) {
	filler := func(tag string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s filler line number %d\n", tag, i)
		}
		return b.String()
	}
	lead := "alpha one two\nbeta three four\ngamma five six\n"
	pinned := lead + filler("a", 17) + lead + filler("b", 10)
	block := "x := 1 + one\ny := 2 + two\nz := 3 + three\nw := 4 + four\n"
	ending := block + filler("c", 10) + block
	edit := " x := 1 + one\n y := 2 + two\n z := 3 + three\n-w := 4 + four\n+w := 5 + five\n"
	cases := []ruleCase{
		{
			name: "an insertion allowed at the start of the file with its header elsewhere",
			file: pinned,
			diff: "@@ -11,3 +11,4 @@\n+inserted text line\n alpha one two\n beta three four\n gamma five six\n",
			err:  CodeAmbiguous,
			msg:  []string{"lines 1 and 21", "points at none"},
		},
		{
			name:  "an insertion whose header names the start of the file",
			file:  pinned,
			diff:  "@@ -1,3 +1,4 @@\n+inserted text line\n alpha one two\n beta three four\n gamma five six\n",
			want:  "inserted text line\n" + pinned,
			match: []string{"exact"},
		},
		{
			name: "no trailing context, header midway between the copies",
			file: ending,
			diff: "@@ -8,4 +8,4 @@\n" + edit,
			err:  CodeAmbiguous,
			msg:  []string{"lines 1 and 15"},
		},
		{
			name:  "no trailing context, header nearer the copy that ends the file",
			file:  ending,
			diff:  "@@ -13,4 +13,4 @@\n" + edit,
			want:  block + filler("c", 10) + strings.Replace(block, "4 + four", "5 + five", 1),
			match: []string{"offset"},
		},
	}
	runRuleCases(t, cases)
}

// tabIndented finds a line indented with tabs that holds text. The
// patch package counts \v as white space (isSpace), so a line of tabs and
// \v is blank to it, not indented.
var tabIndented = regexp.MustCompile(`(?m)^\t+[^\s\v]`)

// FuzzApplyTabFile: applied to a file indented only with tabs, a diff
// written without tabs either leaves no line of the result opening with
// spaces or is refused: mixed indentation is never written.
func FuzzApplyTabFile(f *testing.F) {
	goFile := "package p\n\nfunc f() {\n\ta()\n\tb()\n}\n\nfunc g() {\n\tc()\n}\n"
	f.Add(goFile, "@@ -3,4 +3,5 @@\n func f() {\n     a()\n+    x()\n     b()\n }\n@@ -8,3 +9,3 @@\n func g() {\n-    c()\n+    d()\n }\n")
	f.Add(goFile, "@@ -8,3 +8,3 @@\n func g() {\n-\tc()\n+    d()\n }\n")
	f.Add(goFile, "@@ -3,4 +3,5 @@\n func f() {\n   a()\n+  x()\n+   y()\n   b()\n }\n")
	f.Add(goFile, "@@ -3,4 +3,5 @@\n func f() {\n     a()\n+  x()\n     b()\n }\n")
	f.Fuzz(func(t *testing.T, src, diff string) {
		if strings.Contains(diff, "\t") || !tabIndented.MatchString(src) || strings.HasPrefix(src, " ") || strings.Contains(src, "\n ") {
			return
		}
		p, err := Parse(diff)
		if err != nil {
			return
		}
		res, err := Apply([]byte(src), p)
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(res.Content), "\n") {
			if strings.HasPrefix(l, " ") && strings.TrimSpace(l) != "" {
				t.Fatalf("line %q of the result opens with spaces in a file indented with tabs:\n%s", l, res.Content)
			}
		}
	})
}

// TestRulePinnedOneLineAfter: an insertion with less context before it
// than after, whose one leading context line was dropped with the header
// kept, is found one line after its header: placed when its lines are at
// that one place in the file, refused when they are anywhere else too or
// further off.
func TestRulePinnedOneLineAfter(t *testing.T) {
	file := "package h\n\nimport \"os\"\n\ntype Handle struct {\n\tf *os.File\n}\n\nfunc (h *Handle) Name() string {\n\treturn h.f.Name()\n}\n\nfunc (h *Handle) Close() error {\n\treturn h.f.Close()\n}\n"
	// The hunk as written with its leading context "" at line 12, then
	// with that line dropped and the header kept.
	hunk := "+// Close releases the handle.\n func (h *Handle) Close() error {\n \treturn h.f.Close()\n }\n"
	want := strings.Replace(file, "func (h *Handle) Close", "// Close releases the handle.\nfunc (h *Handle) Close", 1)
	twice := file + "\nfunc (h *Handle) Close() error {\n\treturn h.f.Close()\n}\n"
	cases := []ruleCase{
		{
			name:  "one line after the header, the only place",
			file:  file,
			diff:  "@@ -12,3 +12,4 @@\n" + hunk,
			want:  want,
			match: []string{"offset"},
		},
		{
			name: "one line after the header, with another copy",
			file: twice,
			diff: "@@ -12,3 +12,4 @@\n" + hunk,
			err:  CodeNeedsContext,
		},
		{
			name: "two lines after the header",
			file: file,
			diff: "@@ -11,3 +11,4 @@\n" + hunk,
			err:  CodeNeedsContext,
		},
	}
	runRuleCases(t, cases)
}

// TestBlankLastLineDeleted: a hunk that deletes the blank line ending a
// file (its other lines, found as its new lines, stay in place) is
// applied, and is not applied a second time.
func TestBlankLastLineDeleted(t *testing.T) {
	diff := "@@ -2,4 +2,3 @@\n \t}\n \treturn sb.String()\n }\n-\n"
	file := "func f() {\n\t}\n\treturn sb.String()\n}\n\n"
	f, err := Parse(diff)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply([]byte(file), f)
	if err != nil || string(res.Content) != "func f() {\n\t}\n\treturn sb.String()\n}\n" || res.Status != Applied {
		t.Fatalf("applied: %v %q", err, res)
	}
	again, err := Apply(res.Content, f)
	if err == nil && again.Status == Applied {
		t.Fatalf("applied twice: %q", again.Content)
	}
}
