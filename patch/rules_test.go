package patch

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// ruleCase is one diff applied to one file: either want (with status
// and each hunk's match) or the error code, with words its message must
// and must not hold.
type ruleCase struct {
	name   string
	file   string
	diff   string
	want   string
	status Status
	match  []string
	err    Code
	msg    []string
	notMsg []string
}

// runRuleCases runs cases twice: searching short targets line by line, as
// Apply does, and with every search going through the index of the
// target's lines, as it does for long targets.
func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, indexed := range []bool{false, true} {
		for _, c := range cases {
			name := c.name
			if indexed {
				name += "/indexed"
			}
			t.Run(name, func(t *testing.T) {
				if indexed {
					defer func(n int) { indexMin = n }(indexMin)
					indexMin = 1
				}
				checkRuleCase(t, c)
			})
		}
	}
}

func checkRuleCase(t *testing.T, c ruleCase) {
	t.Helper()
	f, err := Parse(c.diff)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	res, err := Apply([]byte(c.file), f)
	if c.err != "" {
		var pe *Error
		if !errors.As(err, &pe) {
			got := ""
			if res != nil {
				got = fmt.Sprintf("status %s, content:\n%s", res.Status, res.Content)
			}
			t.Fatalf("Apply: got %v, want error %s; %s", err, c.err, got)
		}
		if pe.Code != c.err {
			t.Fatalf("Apply: got %s error %v, want %s", pe.Code, err, c.err)
		}
		for _, m := range c.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("error %q does not say %q", err, m)
			}
		}
		for _, m := range c.notMsg {
			if strings.Contains(err.Error(), m) {
				t.Errorf("error %q says %q", err, m)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := string(res.Content); got != c.want {
		t.Fatalf("content:\n%s\nwant:\n%s", got, c.want)
	}
	if res.Status != c.status {
		t.Errorf("status %s, want %s", res.Status, c.status)
	}
	if c.match != nil {
		var got []string
		for _, h := range res.Hunks {
			got = append(got, h.Match.String())
		}
		if strings.Join(got, ",") != strings.Join(c.match, ",") {
			t.Errorf("match %q, want %q", got, c.match)
		}
	}
	for _, w := range res.Warnings {
		t.Logf("warning: %s", w)
	}
}

// filler is n distinct indented lines, to put distance between the
// places a test file repeats.
func filler(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\t%s%d := compute(%d)\n", prefix, i, i*3)
	}
	return b.String()
}

// twinFunc is a function whose body the twins files repeat exactly.
func twinFunc(name string) string {
	return "func " + name + "() error {\n\tconn := dial(\"primary\")\n\tdefer conn.Close()\n\treturn conn.Send(msg)\n}\n"
}

// The body of twinFunc changed: a hunk whose old lines are the same in
// every copy.
const twinHunkBody = " \tconn := dial(\"primary\")\n \tdefer conn.Close()\n-\treturn conn.Send(msg)\n+\treturn conn.SendAll(msg)\n"

func twinChanged(name string) string {
	return strings.Replace(twinFunc(name), "conn.Send(msg)", "conn.SendAll(msg)", 1)
}

// TestRuleExactTies: a hunk found byte for byte in more than one place
// is placed by its header only when the header points exactly at one
// copy, when one copy is far nearer the header than any other, or when
// the hunk's shape (no context after an insertion at the end) and its
// header agree on a copy; otherwise it is refused, naming the places.
func TestRuleExactTies(t *testing.T) {
	// Copies at lines 2 and 8.
	near := twinFunc("first") + "\n" + twinFunc("second")
	// Copies at lines 2 and 48.
	far := twinFunc("first") + "\nfunc pad() {\n" + filler("p", 38) + "}\n\n" + twinFunc("second")
	// An ending that the file repeats: at lines 5-7 and 27-29 (the end).
	tail := "\t\t}\n\t}\n}\n"
	ending := "func a() {\n\tfor {\n\t\tif x {\n\t\t\tbreak\n" + tail + "\nfunc b() {\n" + filler("q", 14) + "\tfor {\n\t\tif y {\n\t\t\tbreak\n" + tail
	appendHunk := " \t\t}\n \t}\n }\n+\n+func c() {}\n"
	notice := "// Copyright the authors.\n// Licensed as the rest of ctxkit.\n//\n// Edit with care.\n"
	cases := []ruleCase{
		{
			name:  "header at one copy",
			file:  near,
			diff:  "@@ -8,3 +8,3 @@\n" + twinHunkBody,
			want:  twinFunc("first") + "\n" + twinChanged("second"),
			match: []string{"exact"},
		},
		{
			name: "header near both copies is refused, naming both",
			file: near,
			diff: "@@ -6,3 +6,3 @@\n" + twinHunkBody,
			err:  CodeAmbiguous,
			msg:  []string{"lines 2 and 8", "line 6"},
		},
		{
			name: "header a line off one copy, with the other close, is refused",
			file: near,
			diff: "@@ -7,3 +7,3 @@\n" + twinHunkBody,
			err:  CodeAmbiguous,
			msg:  []string{"lines 2 and 8"},
		},
		{
			name:  "header far nearer one copy",
			file:  far,
			diff:  "@@ -46,3 +46,3 @@\n" + twinHunkBody,
			want:  twinFunc("first") + "\nfunc pad() {\n" + filler("p", 38) + "}\n\n" + twinChanged("second"),
			match: []string{"offset"},
		},
		{
			name: "header nearer one copy but not by the margin",
			file: far,
			diff: "@@ -20,3 +20,3 @@\n" + twinHunkBody,
			err:  CodeAmbiguous,
			msg:  []string{"lines 2 and 49"},
		},
		{
			name: "no header",
			file: near,
			diff: "@@ ... @@\n" + twinHunkBody,
			err:  CodeAmbiguous,
			msg:  []string{"lines 2 and 8"},
		},
		{
			name:  "insertion without trailing context goes to the end its header is nearest",
			file:  ending,
			diff:  "@@ -18,3 +18,5 @@\n" + appendHunk,
			want:  ending + "\nfunc c() {}\n",
			match: []string{"offset"},
		},
		{
			name: "insertion without trailing context, header nearer another copy, is refused",
			file: ending,
			diff: "@@ -8,3 +8,5 @@\n" + appendHunk,
			err:  CodeAmbiguous,
			msg:  []string{"lines 5 and 27"},
		},
		{
			name:  "insertion without trailing context, header exactly at another copy",
			file:  ending,
			diff:  "@@ -5,3 +5,5 @@\n" + appendHunk,
			want:  strings.Replace(ending, tail, tail+"\nfunc c() {}\n", 1),
			match: []string{"exact"},
		},
		{
			// The first hunk is found 4 lines below its header; the
			// second's header, 4 lines on, points exactly at a copy.
			name:  "second hunk's header corrected by the first hunk's offset",
			file:  notice + "package main\n\nvar version = \"1.0\"\n\n" + near,
			diff:  "@@ -1,3 +1,3 @@\n package main\n \n-var version = \"1.0\"\n+var version = \"1.1\"\n@@ -12,3 +12,3 @@\n" + twinHunkBody,
			want:  notice + "package main\n\nvar version = \"1.1\"\n\n" + twinFunc("first") + "\n" + twinChanged("second"),
			match: []string{"offset", "offset"},
		},
		{
			name: "second hunk's header without the first hunk's offset",
			file: notice + "package main\n\nvar version = \"1.0\"\n\n" + near,
			diff: "@@ -5,3 +5,3 @@\n package main\n \n-var version = \"1.0\"\n+var version = \"1.1\"\n@@ -12,3 +12,3 @@\n" + twinHunkBody,
			err:  CodeAmbiguous,
			msg:  []string{"lines 10 and 16"},
		},
	}
	runRuleCases(t, cases)
}

// TestRuleInsertionPinned: a hunk that opens with an insertion and has
// fewer context lines before it than after is placed where its header
// says (the start of the file for line 1), never found elsewhere.
func TestRuleInsertionPinned(t *testing.T) {
	store := "package store\n\nimport \"errors\"\n\nvar errGone = errors.New(\"gone\")\n"
	generated := "// Code generated by hand.\n" + store
	docHunk := "+// Package store keeps records.\n package store\n \n import \"errors\"\n"
	handle := "package h\n\nimport \"os\"\n\ntype Handle struct {\n\tf *os.File\n}\n\n" +
		"// Name is the file's name.\nfunc (h *Handle) Name() string {\n\treturn h.f.Name()\n}\n\n" +
		"func (h *Handle) Close() error {\n\treturn h.f.Close()\n}\n"
	closeHunk := "+// Close releases the handle.\n func (h *Handle) Close() error {\n \treturn h.f.Close()\n }\n"
	closeDone := strings.Replace(handle, "func (h *Handle) Close", "// Close releases the handle.\nfunc (h *Handle) Close", 1)
	cases := []ruleCase{
		{
			name:  "start of the file",
			file:  store,
			diff:  "@@ -1,3 +1,4 @@\n" + docHunk,
			want:  "// Package store keeps records.\n" + store,
			match: []string{"exact"},
		},
		{
			name: "start of the file, but the file starts otherwise",
			file: generated,
			diff: "@@ -1,3 +1,4 @@\n" + docHunk,
			err:  CodeNeedsContext,
			msg:  []string{"start of the file", "line 2"},
		},
		{
			name: "start of the file with a zero start line, but the file starts otherwise",
			file: generated,
			diff: "@@ -0,3 +1,4 @@\n" + docHunk,
			err:  CodeNeedsContext,
		},
		{
			name:  "where the header says",
			file:  handle,
			diff:  "@@ -14,3 +14,4 @@\n" + closeHunk,
			want:  closeDone,
			match: []string{"exact"},
		},
		{
			name: "header off by some lines",
			file: handle,
			diff: "@@ -20,3 +20,4 @@\n" + closeHunk,
			err:  CodeNeedsContext,
			msg:  []string{"line 14", "line 20"},
		},
		{
			name: "header off by one line",
			file: handle,
			diff: "@@ -15,3 +15,4 @@\n" + closeHunk,
			err:  CodeNeedsContext,
		},
		{
			name: "one context line before, more after, header off",
			file: handle,
			diff: "@@ -11,4 +11,5 @@\n \n+// Close releases the handle.\n func (h *Handle) Close() error {\n \treturn h.f.Close()\n }\n",
			err:  CodeNeedsContext,
		},
		{
			name:  "one context line before, more after, header right",
			file:  handle,
			diff:  "@@ -13,4 +13,5 @@\n \n+// Close releases the handle.\n func (h *Handle) Close() error {\n \treturn h.f.Close()\n }\n",
			want:  closeDone,
			match: []string{"exact"},
		},
		{
			name:  "as much context before as after slides",
			file:  handle,
			diff:  "@@ -30,5 +30,6 @@\n }\n \n+// Close releases the handle.\n func (h *Handle) Close() error {\n \treturn h.f.Close()\n",
			want:  closeDone,
			match: []string{"offset"},
		},
		{
			name:  "a hunk opening with a replacement is found by its deleted lines",
			file:  generated,
			diff:  "@@ -1,3 +1,3 @@\n-package store\n+package records\n \n import \"errors\"\n",
			want:  strings.Replace(generated, "package store", "package records", 1),
			match: []string{"offset"},
		},
		{
			name:  "no header: placed by its content when that is unique",
			file:  handle,
			diff:  "@@ ... @@\n" + closeHunk,
			want:  closeDone,
			match: []string{"exact"},
		},
		{
			name: "no header: refused when its content is not unique",
			file: handle + "\nfunc (h *Handle) Close() error {\n\treturn h.f.Close()\n}\n",
			diff: "@@ ... @@\n" + closeHunk,
			err:  CodeAmbiguous,
		},
		{
			name: "no header: never with context lines ignored",
			file: strings.Replace(handle, "\treturn h.f.Close()\n}\n", "\treturn h.f.Close()\n} // Close\n", 1),
			diff: "@@ ... @@\n" + closeHunk,
			err:  CodeNeedsContext,
		},
		{
			name:  "header corrected by an earlier hunk's offset",
			file:  "// Package h wraps files.\n" + handle,
			diff:  "@@ -1,3 +2,3 @@\n-package h\n+package handles\n \n import \"os\"\n@@ -14,3 +14,4 @@\n" + closeHunk,
			want:  "// Package h wraps files.\n" + strings.Replace(closeDone, "package h\n", "package handles\n", 1),
			match: []string{"offset", "offset"},
		},
	}
	runRuleCases(t, cases)
}

// TestRuleFuzzKeepsDistinctiveLines: the loosest pass ignores a context
// line at a hunk's edge only when the line that stands there is like it
// or the line is found just beside, and never when the ignored line
// points at another place that matches the hunk as well.
func TestRuleFuzzKeepsDistinctiveLines(t *testing.T) {
	pair := "func alpha() {\n\ty := load()\n\tx.close()\n}\n\nfunc beta() {\n\tx := load()\n\tx.close()\n}\n"
	run := "func run() {\n\tstart := now()\n\tprocess(items)\n\treport(start)\n}\n"
	cases := []ruleCase{
		{
			name: "the ignored line is the one that names the other place",
			file: pair,
			diff: "@@ -1,4 +1,4 @@\n func alpha() {\n \tx := load()\n-\tx.close()\n+\tdefer x.close()\n }\n",
			err:  CodeAmbiguous,
			msg:  []string{"line 1", "line 7"},
		},
		{
			name: "the ignored line is unlike the line that stands there",
			file: run,
			diff: "@@ -1,4 +1,4 @@\n \tcleanupTemporaryFiles(dir)\n \tstart := now()\n-\tprocess(items)\n+\tprocessAll(items)\n \treport(start)\n",
			err:  CodeNotFound,
		},
		{
			name: "the ignored line would stand before the start of the file",
			file: run,
			diff: "@@ -1,4 +1,4 @@\n // Package run starts things.\n func run() {\n \tstart := now()\n-\tprocess(items)\n+\tprocessAll(items)\n",
			err:  CodeNotFound,
		},
		{
			name:  "the ignored line is an edited version of the line there",
			file:  run,
			diff:  "@@ -1,4 +1,4 @@\n func run(ctx context.Context) {\n \tstart := now()\n-\tprocess(items)\n+\tprocessAll(items)\n \treport(start)\n",
			want:  strings.Replace(run, "process(items)", "processAll(items)", 1),
			match: []string{"fuzz 1"},
		},
		{
			name:  "the ignored line is just beside",
			file:  "func run() {\n\t// begin\n\tstart := now()\n\tprocess(items)\n\treport(start)\n}\n",
			diff:  "@@ -1,4 +1,4 @@\n func run() {\n \tstart := now()\n-\tprocess(items)\n+\tprocessAll(items)\n \treport(start)\n",
			want:  "func run() {\n\t// begin\n\tstart := now()\n\tprocessAll(items)\n\treport(start)\n}\n",
			match: []string{"fuzz 1"},
		},
	}
	runRuleCases(t, cases)
}

// TestRuleBlankOnlyNeverNoop: whether a diff is already applied is judged
// only from hunks whose changed lines hold text; a diff that only adds or
// deletes blank lines and does not apply is refused, and a hunk of blank
// lines found applied goes along with the text hunks, never decides.
func TestRuleBlankOnlyNeverNoop(t *testing.T) {
	two := "first := compute(1)\nsecond := compute(2)\n"
	spaced := "first := compute(1)\n\nsecond := compute(2)\n"
	addBlank := "@@ -1,2 +1,3 @@\n first := compute(1)\n+\n second := compute(2)\n"
	delBlank := "@@ -1,3 +1,2 @@\n first := compute(1)\n-\n second := compute(2)\n"
	cases := []ruleCase{
		{name: "a blank line added, found added", file: spaced, diff: addBlank, err: CodeNotFound},
		{name: "a blank line deleted, found deleted", file: two, diff: delBlank, err: CodeNotFound},
		{name: "a blank line added", file: two, diff: addBlank, want: spaced, match: []string{"exact"}},
		{
			name: "a blank line added beside blank lines",
			file: "first := compute(1)\n\n\nsecond := compute(2)\n",
			diff: "@@ -1,2 +1,3 @@\n first := compute(1)\n+\n \n",
			err:  CodeAmbiguous,
			msg:  []string{"blank"},
		},
		{name: "a blank line deleted", file: spaced, diff: delBlank, want: two, match: []string{"exact"}},
		{
			name: "a line of spaces added, found added",
			file: "first := compute(1)\n   \nsecond := compute(2)\n",
			diff: "@@ -1,2 +1,3 @@\n first := compute(1)\n+   \n second := compute(2)\n",
			err:  CodeNotFound,
		},
		{
			// The text hunk decides; the blank one goes along.
			name:   "blank and text hunks, all found applied",
			file:   "package main\n\nvar version = \"1.1\"\n\n" + spaced,
			diff:   "@@ -1,3 +1,3 @@\n package main\n \n-var version = \"1.0\"\n+var version = \"1.1\"\n@@ -5,2 +5,3 @@\n first := compute(1)\n+\n second := compute(2)\n",
			want:   "package main\n\nvar version = \"1.1\"\n\n" + spaced,
			status: Noop,
			match:  []string{"exact", "exact"},
		},
		{
			name: "blank and text hunks, the text hunk not applied",
			file: "package main\n\nvar version = \"1.0\"\n\n" + spaced,
			diff: "@@ -1,3 +1,3 @@\n package main\n \n-var version = \"1.0\"\n+var version = \"1.1\"\n@@ -5,2 +5,3 @@\n first := compute(1)\n+\n second := compute(2)\n",
			err:  CodeNotFound,
			msg:  []string{"blank"},
		},
		{
			name: "blank and text hunks, the blank hunk not applied",
			file: "package main\n\nvar version = \"1.1\"\n\n" + two,
			diff: "@@ -1,3 +1,3 @@\n package main\n \n-var version = \"1.0\"\n+var version = \"1.1\"\n@@ -5,2 +5,3 @@\n first := compute(1)\n+\n second := compute(2)\n",
			err:  CodePartial,
		},
		{
			name:   "text hunk found applied",
			file:   "package main\n\nvar version = \"1.1\"\n",
			diff:   "@@ -1,3 +1,3 @@\n package main\n \n-var version = \"1.0\"\n+var version = \"1.1\"\n",
			want:   "package main\n\nvar version = \"1.1\"\n",
			status: Noop,
			match:  []string{"exact"},
		},
	}
	runRuleCases(t, cases)
}

// TestRuleMessagesSayWhatIsMissing: a refusal says why; a hunk found only
// with whitespace ignored but too short to be placed that way says so,
// not that it is 100% similar.
func TestRuleMessagesSayWhatIsMissing(t *testing.T) {
	cases := []ruleCase{
		{
			name:   "too little text once whitespace is ignored",
			file:   "x()\n\t}   \n}\nend()\n",
			diff:   "@@ -2,2 +2,2 @@\n \t}\n-}\n+})\n",
			err:    CodeNotFound,
			msg:    []string{"too little text", "line 2", "add context"},
			notMsg: []string{"similarity 100%"},
		},
		{
			name:   "too little text once indentation is ignored",
			file:   "x()\n\t\t}\n\t}\nend()\n",
			diff:   "@@ -2,2 +2,2 @@\n     }\n-  }\n+  })\n",
			err:    CodeNotFound,
			msg:    []string{"too little text"},
			notMsg: []string{"similarity 100%"},
		},
		{
			name:   "the hunk must end the file",
			file:   "alpha := one()\nbeta := two()\ngamma := three()\n",
			diff:   "@@ -1,2 +1,2 @@\n alpha := one()\n-beta := two()\n\\ No newline at end of file\n+beta := 2\n",
			err:    CodeNotFound,
			msg:    []string{"end of the file"},
			notMsg: []string{"similarity 100%"},
		},
		{
			name: "closest region",
			file: "alpha := one()\nbeta := two()\ngamma := three()\n",
			diff: "@@ -1,3 +1,3 @@\n alpha := one()\n-beta := 2\n+beta := 3\n gamma := three()\n",
			err:  CodeNotFound,
			msg:  []string{"line 2 is \"beta := two()\", the diff expects \"beta := 2\""},
		},
	}
	runRuleCases(t, cases)
}

// TestRuleAppliedOnlyWhenOldLinesAbsent: a hunk's new lines found only
// loosely make it already applied only when its old lines are found at
// no looser step either.
func TestRuleAppliedOnlyWhenOldLinesAbsent(t *testing.T) {
	file := "func check(token string) error {\n\treturn nil\n}\n\n// verify checks a token.\nfunc verify(token string) error {\n\treturn check(token)\n}\n\n// verified is a checked token.\ntype verified struct {\n\ttoken string\n}\n"
	deleteVerify := "@@ -3,9 +3,5 @@\n }\n \n // verify checks a token.\n-func verify(token string) error {\n-    return check(token)\n-}\n-\n // verified is a checked token.\n type verified struct {\n"
	cases := []ruleCase{
		{
			// Its new lines are there with its comment line taken as
			// extra, its old lines with indentation ignored.
			name: "new lines one line off, old lines with indentation ignored",
			file: file,
			diff: deleteVerify,
			err:  CodeAmbiguous,
			msg:  []string{"already be changed"},
		},
	}
	runRuleCases(t, cases)
}
