package patch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLenientIndentation: a hunk whose lines differ from the file's only
// in how their indentation is written (tabs for spaces, another width)
// is placed when each line is at the file's depth, and its added lines
// take the file's indentation at that place, each at its depth.
func TestLenientIndentation(t *testing.T) {
	goTabs := "package main\n\nfunc handle(req *Request) error {\n\tif req == nil {\n\t\treturn errNil\n\t}\n\treturn serve(req)\n}\n"
	goTabsDone := "package main\n\nfunc handle(req *Request) error {\n\tif req == nil {\n\t\treturn errNil\n\t}\n\tif req.Closed {\n\t\treturn errClosed\n\t}\n\n\treturn serve(req)\n}\n"
	spacesDiff := "@@ -3,6 +3,10 @@\n func handle(req *Request) error {\n     if req == nil {\n         return errNil\n     }\n+    if req.Closed {\n+        return errClosed\n+    }\n+\n     return serve(req)\n }\n"

	py4 := "def handle(req):\n    if req is None:\n        return ERR_NIL\n    return serve(req)\n"
	py4Done := "def handle(req):\n    if req is None:\n        return ERR_NIL\n    if req.closed:\n        for w in req.waiters:\n            w.cancel()\n        return ERR_CLOSED\n    return serve(req)\n"
	tabsDiff := "@@ -1,4 +1,8 @@\n def handle(req):\n \tif req is None:\n \t\treturn ERR_NIL\n+\tif req.closed:\n+\t\tfor w in req.waiters:\n+\t\t\tw.cancel()\n+\t\treturn ERR_CLOSED\n \treturn serve(req)\n"

	store4 := "class Store:\n    def get(self, key):\n        if key in self.items:\n            return self.items[key]\n        return None\n"
	store4Done := "class Store:\n    def get(self, key):\n        if key in self.items:\n            return self.items[key]\n        if self.parent is not None:\n            for p in self.parent.chain():\n                return p.get(key)\n        return None\n"
	store2 := strings.ReplaceAll(store4, "    ", "  ")
	store2Done := strings.ReplaceAll(store4Done, "    ", "  ")
	storeDiff := func(unit string) string {
		in := func(n int, s string) string { return strings.Repeat(unit, n) + s }
		return "@@ -2,4 +2,7 @@\n " + in(1, "def get(self, key):") + "\n " + in(2, "if key in self.items:") + "\n " + in(3, "return self.items[key]") +
			"\n+" + in(2, "if self.parent is not None:") + "\n+" + in(3, "for p in self.parent.chain():") + "\n+" + in(4, "return p.get(key)") + "\n " + in(2, "return None") + "\n"
	}

	nested := "func f() {\n\tif ok {\n\t\trun()\n\t}\n\tdone()\n}\n"
	cases := []ruleCase{
		{
			name:  "tabs in the file, four spaces in the diff",
			file:  goTabs,
			diff:  spacesDiff,
			want:  goTabsDone,
			match: []string{"indent"},
		},
		{
			name:   "tabs in the file, four spaces in the diff, already applied",
			file:   goTabsDone,
			diff:   spacesDiff,
			want:   goTabsDone,
			status: Noop,
			match:  []string{"indent"},
		},
		{
			name:  "four spaces in the file, tabs in the diff",
			file:  py4,
			diff:  tabsDiff,
			want:  py4Done,
			match: []string{"indent"},
		},
		{
			name:  "four spaces in the file, two in the diff",
			file:  store4,
			diff:  storeDiff("  "),
			want:  store4Done,
			match: []string{"indent"},
		},
		{
			name:  "two spaces in the file, four in the diff",
			file:  store2,
			diff:  storeDiff("    "),
			want:  store2Done,
			match: []string{"indent"},
		},
		{
			// The same shape one level shallower may be another block.
			name: "the diff one level shallower than the file is refused",
			file: nested,
			diff: "@@ -2,4 +2,5 @@\n if ok {\n     run()\n+    log()\n }\n done()\n",
			err:  CodeNotFound,
			msg:  []string{"depth"},
		},
		{
			name: "indentation that does not map one way is refused",
			file: nested,
			diff: "@@ -2,3 +2,4 @@\n     if ok {\n     run()\n+    log()\n     }\n",
			err:  CodeNotFound,
			msg:  []string{"indentation"},
		},
		{
			name: "two places at the diff's depth once indentation is ignored",
			file: "func f() {\n\tif ok {\n\t\trun(task)\n\t}\n}\n\nfunc g() {\n\tif ok {\n\t\trun(task)\n\t}\n}\n",
			diff: "@@ ... @@\n     if ok {\n-        run(task)\n+        go run(task)\n     }\n",
			err:  CodeAmbiguous,
			msg:  []string{"lines 2 and 8", "indentation"},
		},
		{
			// Unique once indentation is ignored comes first: the depth
			// only confirms the one place.
			name: "two places once indentation is ignored, one at the diff's depth",
			file: "func f() {\n\tif ok {\n\t\trun(task)\n\t}\n\tfor {\n\t\tif ok {\n\t\t\trun(task)\n\t\t}\n\t}\n}\n",
			diff: "@@ ... @@\n     if ok {\n-        run(task)\n+        go run(task)\n     }\n",
			err:  CodeAmbiguous,
			msg:  []string{"lines 2 and 6"},
		},
		{
			name:  "the same indentation with stale trailing spaces is not re-indented",
			file:  "func f() {\n\tif ok {  \n\t\trun()\n\t}\n}\n",
			diff:  "@@ -2,3 +2,4 @@\n \tif ok {\n \t\trun()\n+    log()\n \t}\n",
			want:  "func f() {\n\tif ok {  \n\t\trun()\n    log()\n\t}\n}\n",
			match: []string{"whitespace"},
		},
	}
	runRuleCases(t, cases)
}

// TestLenientInnerContext: a hunk with one context line missing, or one
// the file does not have, inside it (not at its edges) is placed when
// that leaves one place, and never where the missing line would leave an
// insertion two ways to go.
func TestLenientInnerContext(t *testing.T) {
	load := "func load(path string) (*Config, error) {\n\tdata, err := os.ReadFile(path)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tvar c Config\n\tif err := json.Unmarshal(data, &c); err != nil {\n\t\treturn nil, err\n\t}\n\treturn &c, nil\n}\n"
	loaded := strings.Replace(strings.Replace(load, "error) {\n", "error) { // strict\n", 1), "\tvar c Config\n", "\tc := Config{Strict: true}\n", 1)
	hunk := []string{
		"-func load(path string) (*Config, error) {",
		"+func load(path string) (*Config, error) { // strict",
		" \tdata, err := os.ReadFile(path)",
		" \tif err != nil {",
		" \t\treturn nil, err",
		" \t}",
		"-\tvar c Config",
		"+\tc := Config{Strict: true}",
		" \tif err := json.Unmarshal(data, &c); err != nil {",
		" \t\treturn nil, err",
		" \t}",
	}
	diff := func(drop int, extra map[int]string) string {
		var b strings.Builder
		b.WriteString("@@ -1,9 +1,9 @@\n")
		for i, l := range hunk {
			if x, ok := extra[i]; ok {
				b.WriteString(x + "\n")
			}
			if i != drop {
				b.WriteString(l + "\n")
			}
		}
		return b.String()
	}
	cases := []ruleCase{
		{name: "whole", file: load, diff: diff(-1, nil), want: loaded, match: []string{"exact"}},
		{name: "one line missing between context lines", file: load, diff: diff(4, nil), want: loaded, match: []string{"inner"}},
		{name: "one line missing beside a replaced line", file: load, diff: diff(2, nil), want: loaded, match: []string{"inner"}},
		{name: "one line missing, already applied", file: loaded, diff: diff(4, nil), want: loaded, status: Noop, match: []string{"inner"}},
		{name: "one extra line", file: load, diff: diff(-1, map[int]string{3: " \t// read the whole file"}), want: loaded, match: []string{"inner"}},
		{name: "one extra line beside a replaced line", file: load, diff: diff(-1, map[int]string{6: " \t// decode"}), want: loaded, match: []string{"inner"}},
		{name: "two lines missing", file: load, diff: strings.Replace(diff(4, nil), " \t}\n", "", 1), err: CodeNotFound},
		{name: "one missing and one extra", file: load, diff: diff(4, map[int]string{3: " \t// read the whole file"}), err: CodeNotFound},
		{
			name: "one line missing where an insertion would go",
			file: load,
			diff: "@@ -2,4 +2,5 @@\n \tdata, err := os.ReadFile(path)\n \tif err != nil {\n+\t\tlog.Print(err)\n \t}\n \tvar c Config\n",
			err:  CodeNotFound,
		},
		{
			// Left out, the extra line places the hunk in b; but a holds
			// that line and nearly all the rest (one line there is
			// edited).
			name: "one extra line naming another place",
			file: "func a() {\n\tbegin()\n\tstep()\n\tprepare(a)\n\tfinish(x)\n\tflush()\n\tcleanup()\n\tend()\n}\n\n" +
				"func b() {\n\tbegin()\n\tstep()\n\tfinish()\n\tflush()\n\tcleanup()\n\tend()\n}\n",
			diff: "@@ ... @@\n \tbegin()\n \tstep()\n \tprepare(a)\n \tfinish()\n-\tflush()\n+\tflush(true)\n \tcleanup()\n \tend()\n",
			err:  CodeAmbiguous,
			msg:  []string{"line 4", "line 12"},
		},
		{
			// The line left out places the hunk in two(); one() has
			// another line in its place: an edit, perhaps.
			name: "one extra line, or one changed line elsewhere",
			file: "func one() {\n\topen()\n\tlock()\n\tcheck(1)\n\tread()\n\tclose()\n\tunlock()\n}\n\nfunc two() {\n\topen()\n\tlock()\n\tread()\n\tclose()\n\tunlock()\n}\n",
			diff: "@@ ... @@\n \topen()\n \tlock()\n \tcheck(0)\n \tread()\n-\tclose()\n+\tclose(true)\n \tunlock()\n",
			err:  CodeAmbiguous,
			msg:  []string{"line 2", "line 11"},
		},
	}
	runRuleCases(t, cases)
}

// lenientVariant rewrites a git diff the way a model gets one wrong, or
// reports that the diff has nothing to rewrite.
type lenientVariant struct {
	name    string
	rewrite func(rng *rand.Rand, diff string) (string, bool)
}

var bodyLine = regexp.MustCompile(`^[ +-]`)

// hunkBodies calls fn with each hunk of a git diff as its body lines
// (each with its first column) and puts back what fn returns.
func hunkBodies(diff string, fn func(hunk int, body []string) []string) string {
	lines := strings.SplitAfter(diff, "\n")
	var out []string
	hunk := -1
	for i := 0; i < len(lines); {
		l := lines[i]
		if !strings.HasPrefix(l, "@@") {
			out = append(out, l)
			i++
			continue
		}
		hunk++
		out = append(out, l)
		i++
		var body []string
		for i < len(lines) && bodyLine.MatchString(lines[i]) && !strings.HasPrefix(lines[i], "--- ") {
			body = append(body, strings.TrimSuffix(lines[i], "\n"))
			i++
		}
		for _, b := range fn(hunk, body) {
			out = append(out, b+"\n")
		}
	}
	return strings.Join(out, "")
}

func innerContext(body []string) []int {
	var at []int
	for j := 1; j+1 < len(body); j++ {
		if body[j-1][0] == ' ' && body[j][0] == ' ' && body[j+1][0] == ' ' {
			at = append(at, j)
		}
	}
	return at
}

var lenientVariants = []lenientVariant{
	{"indented with four spaces for each tab", func(_ *rand.Rand, d string) (string, bool) {
		changed := false
		out := hunkBodies(d, func(_ int, body []string) []string {
			for j, l := range body {
				n := len(l[1:]) - len(strings.TrimLeft(l[1:], "\t"))
				if n > 0 {
					body[j] = l[:1] + strings.Repeat("    ", n) + l[1+n:]
					changed = true
				}
			}
			return body
		})
		return out, changed
	}},
	{"one inner context line missing", func(rng *rand.Rand, d string) (string, bool) {
		changed := false
		out := hunkBodies(d, func(h int, body []string) []string {
			at := innerContext(body)
			if changed || len(at) == 0 {
				return body
			}
			changed = true
			j := at[rng.IntN(len(at))]
			return append(body[:j:j], body[j+1:]...)
		})
		return out, changed
	}},
	{"one inner context line extra", func(rng *rand.Rand, d string) (string, bool) {
		changed := false
		out := hunkBodies(d, func(h int, body []string) []string {
			at := innerContext(body)
			if changed || len(at) == 0 {
				return body
			}
			changed = true
			j := at[rng.IntN(len(at))]
			extra := " " + body[j][1:1+leadingSpace(body[j][1:])] + "// a line the file does not have"
			return append(body[:j:j], append([]string{extra}, body[j:]...)...)
		})
		return out, changed
	}},
	{"first context line edited", func(_ *rand.Rand, d string) (string, bool) {
		changed := false
		out := hunkBodies(d, func(h int, body []string) []string {
			if changed || len(body) < 2 || body[0][0] != ' ' || body[1][0] != ' ' || strings.TrimSpace(body[0]) == "" {
				return body
			}
			changed = true
			body[0] += " // edited"
			return body
		})
		return out, changed
	}},
}

// sameButIndentation reports whether a and b differ only in the leading
// whitespace of their lines.
func sameButIndentation(a, b []byte) bool {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(al) != len(bl) {
		return false
	}
	for i := range al {
		if strings.TrimLeft(al[i], " \t") != strings.TrimLeft(bl[i], " \t") {
			return false
		}
	}
	return true
}

// TestLenientCorpus applies this repository's history rewritten the way
// models get diffs wrong (indentation, a context line missing or extra
// inside a hunk, an edited context line) to the file before: each is
// applied with the file after as its result, or refused, never applied
// elsewhere or reported as already applied. The figures per variant are
// logged.
func TestLenientCorpus(t *testing.T) {
	corpus := historyCorpus(t, moduleRoot(t), 40)
	if len(corpus) == 0 {
		t.Logf("no history corpus: the figures below are of no diffs")
	}
	for vi, v := range lenientVariants {
		t.Run(v.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(19, uint64(vi)))
			var applied, reindented, refused, wrong int
			codes := map[Code]int{}
			for _, e := range corpus {
				if e.newFile || e.deleteFile {
					continue
				}
				d, ok := v.rewrite(rng, e.diff)
				if !ok {
					continue
				}
				f, err := Parse(d)
				if err != nil {
					t.Errorf("%s: Parse: %v", e.name, err)
					continue
				}
				res, err := Apply(e.pre, f)
				var pe *Error
				switch {
				case errors.As(err, &pe):
					refused++
					codes[pe.Code]++
				case err != nil:
					t.Errorf("%s: Apply: %v", e.name, err)
				case res.Status == Noop:
					wrong++
					t.Errorf("%s: reported already applied", e.name)
				case bytes.Equal(res.Content, e.post):
					applied++
				case sameButIndentation(res.Content, e.post):
					// Placed right, with added lines indented as the
					// diff wrote them (its old lines matched as written).
					reindented++
				default:
					wrong++
					t.Errorf("%s: applied, but the result differs from the file after the commit\n%s", e.name, d)
				}
			}
			t.Logf("%d applied, %d applied with the diff's own indentation, %d refused %v, %d wrong", applied, reindented, refused, fmt.Sprint(codes), wrong)
		})
	}
}

// FuzzApplyLenient builds a correct one-hunk diff for an edit of a
// tab-indented target, rewrites it the way models get diffs wrong (spaces
// for tabs, an inner context line left out, a context line added that the
// target does not have) and applies it. It is refused, or it gives the
// edited target; a hunk placed by a loose pass never lands elsewhere, and
// the indentation pass leaves the target's tabs.
func FuzzApplyLenient(f *testing.F) {
	goFile := "package main\n\nfunc handle(req *Request) error {\n\tif req == nil {\n\t\treturn errNil\n\t}\n\treturn serve(req)\n}\n"
	f.Add(goFile, uint8(6), uint8(0), "\tif req.Closed {\n\t\treturn errClosed\n\t}", uint8(3), uint8(0))
	f.Add(goFile, uint8(4), uint8(1), "\t\treturn errGone", uint8(3), uint8(1))
	f.Add(goFile, uint8(5), uint8(1), "\t}\n\tlog(req)", uint8(3), uint8(2))
	f.Add("a()\nb()\nc()\nd()\ne()\nf()\ng()\n", uint8(3), uint8(1), "x()", uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, src string, at, del uint8, ins string, ctx, mode uint8) {
		if len(src) > 1<<12 || len(ins) > 1<<10 || strings.ContainsAny(src+ins, "\x00\r") || !utf8.ValidString(src) || !utf8.ValidString(ins) {
			return
		}
		tabbed := func(s string) []string {
			if s == "" {
				return nil
			}
			ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			for i, l := range ls {
				// Tabs only, and none on a blank line (the indentation
				// pass adds a blank line without any).
				if body := strings.TrimLeft(l, " \t\v\f"); body != "" {
					ls[i] = strings.Repeat("\t", strings.Count(l[:len(l)-len(body)], "\t")) + body
				} else {
					ls[i] = ""
				}
			}
			return ls
		}
		lines, insLines := tabbed(src), tabbed(ins)
		n := len(lines)
		a := min(int(at), n)
		d := min(int(del), n-a)
		if d == 0 && len(insLines) == 0 {
			return
		}
		c := 2 + int(ctx%3)
		from, to := max(a-c, 0), min(a+d+c, n)
		var body []string
		for _, l := range lines[from:a] {
			body = append(body, " "+l)
		}
		for _, l := range lines[a : a+d] {
			body = append(body, "-"+l)
		}
		for _, l := range insLines {
			body = append(body, "+"+l)
		}
		for _, l := range lines[a+d : to] {
			body = append(body, " "+l)
		}
		text := strings.Join(lines, "\n") + "\n"
		if n == 0 {
			text = ""
		}
		switch mode % 3 {
		case 0:
			for j, l := range body {
				k := len(l) - len(strings.TrimLeft(l[1:], "\t")) - 1
				body[j] = l[:1] + strings.Repeat("    ", k) + l[1+k:]
			}
		case 1:
			at := innerContext(body)
			if len(at) == 0 {
				return
			}
			j := at[len(at)/2]
			body = append(body[:j:j], body[j+1:]...)
		case 2:
			at := innerContext(body)
			const extra = "\tctxkit: a line the target does not have"
			if len(at) == 0 || strings.Contains(text, strings.TrimSpace(extra)) {
				return
			}
			j := at[len(at)/2]
			body = append(body[:j:j], append([]string{" " + extra}, body[j:]...)...)
		}
		diff := fmt.Sprintf("@@ -%d +%d @@\n%s\n", from+1, from+1, strings.Join(body, "\n"))
		parts := append(append(append([]string{}, lines[:a]...), insLines...), lines[a+d:]...)
		want := strings.Join(parts, "\n")
		if len(parts) > 0 {
			want += "\n"
		}
		p, err := Parse(diff)
		if err != nil {
			t.Fatalf("Parse(%q): %v", diff, err)
		}
		res, err := Apply([]byte(text), p)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		if res.Status == Noop {
			// The target may hold the hunk's new lines too; a Noop is
			// judged by the corpus tests, not here.
			if string(res.Content) != text {
				t.Fatal("a Noop changed the content")
			}
			return
		}
		m := res.Hunks[0].Match
		switch m.Pass {
		case PassExact, PassOffset, PassWhitespace:
			// The rewritten diff matches as written, wherever that is.
		case PassIndent, PassInner:
			if string(res.Content) != want {
				t.Fatalf("Apply(%q, %q) by %s = %q, want %q", text, diff, m, res.Content, want)
			}
		case PassFuzz:
			if string(res.Content) != want && !(mode%3 == 0 && sameButIndentation(res.Content, []byte(want))) {
				t.Fatalf("Apply(%q, %q) by %s = %q, want %q", text, diff, m, res.Content, want)
			}
		}
	})
}
