package patch

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The variant corpus: real single-file changes of ctxkit's own history
// (up to corpusTip), each rewritten the ways a model gets a diff wrong,
// applied with Apply and judged against the file it should give.

// maxVariantEntries caps the corpus so that the test stays fast under
// -race on a small machine.
const maxVariantEntries = 300

// variantEntry is a corpus entry prepared once for every generator: its
// diff parsed, its texts split into lines.
type variantEntry struct {
	corpusEntry
	path string // the file's path in the repository
	kind string // Go, Markdown, YAML, JSON, shell or other
	file *File
	// preLines and postLines are the texts split after each "\n".
	preLines, postLines []string
	// spliceable says that the change can be replayed line by line
	// (a splice of the hunks over preLines gives postLines): both texts
	// end with a newline and hold no carriage return. The generators
	// that compute an expected file of their own need it.
	spliceable bool
}

// variant is one diff to apply and what must come of it.
type variant struct {
	src  []byte // the content the diff is applied to
	diff string
	// want is the only acceptable result of an apply.
	want []byte
	// noop says that the diff is already applied to src: the only
	// acceptable success is Noop with src unchanged.
	noop bool
	// refuse says that no place is right: every apply is wrong.
	refuse bool
}

// variantOutcome is the class of an outcome.
type variantOutcome int

const (
	outApplied   variantOutcome = iota // applied as expected (Noop with content unchanged, for an already-applied diff)
	outRefused                         // Parse or Apply refused it
	outWrong                           // applied, but the result is not the expected file (or nothing is right)
	outFalseNoop                       // Noop reported for a file that is not already the result
	variantOutcomes
)

func (o variantOutcome) String() string {
	return [...]string{"applied", "refused", "wrong", "false no-op"}[o]
}

// variantKind generates one kind of variant of an entry; ok is false when
// the entry offers nothing to vary (no context line inside a hunk, a file
// too short for an edit elsewhere). Each kind draws from a generator
// seeded with its own seed and the entry's name, so that a variant does
// not change with the size or order of the corpus.
type variantKind struct {
	name string
	seed uint64
	gen  func(rng *rand.Rand, e *variantEntry, corpus []*variantEntry) (v variant, ok bool)
}

func variantKinds() []variantKind {
	return []variantKind{
		{"exact", 1, genExact},
		{"lines shifted ±k", 2, genShifted},
		{"lines random", 3, genRandomLines},
		{"counts wrong", 4, genCounts},
		{"context missing at an edge", 5, genMissingEdge},
		{"context missing inside", 6, genMissingInside},
		{"context extra inside", 7, genExtraInside},
		{"tabs↔spaces", 8, genIndent},
		{"trailing whitespace", 9, genTrailing},
		{"@@ @@ without numbers", 10, genNoNumbers},
		{"changed since", 11, genChangedSince},
		{"ambiguous, header at one copy", 12, genAmbiguousAt},
		{"ambiguous, header between", 13, genAmbiguousBetween},
		{"ambiguous, no numbers", 14, genAmbiguousNoNumbers},
		{"already applied", 15, genAlreadyApplied},
		{"wrong file", 16, genWrongFile},
	}
}

// variantKey names one variant of one entry.
type variantKey struct{ entry, variant string }

// knownWrongFile lists the variants that Apply gets wrong today (a wrong
// apply or a false no-op): known wrong, to be fixed. One line each,
// "entry | variant | outcome", as the report prints them; # starts a
// comment. The test prints them in its report and fails on any wrong
// outcome not listed, and on any listed one that is no longer wrong (so
// that a fixed case cannot regress unseen).
const knownWrongFile = "testdata/variants/known_wrong.txt"

func loadKnownWrong(t *testing.T, kinds []variantKind) map[variantKey]variantOutcome {
	t.Helper()
	data, err := os.ReadFile(knownWrongFile)
	if err != nil {
		t.Fatal(err)
	}
	known := map[variantKey]variantOutcome{}
	for n, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, " | ")
		if len(f) != 3 {
			t.Fatalf("%s:%d: want \"entry | variant | outcome\", got %q", knownWrongFile, n+1, line)
		}
		if !slices.ContainsFunc(kinds, func(k variantKind) bool { return k.name == f[1] }) {
			t.Fatalf("%s:%d: no variant kind %q", knownWrongFile, n+1, f[1])
		}
		o := outApplied
		switch f[2] {
		case outWrong.String():
			o = outWrong
		case outFalseNoop.String():
			o = outFalseNoop
		default:
			t.Fatalf("%s:%d: outcome %q: want %q or %q", knownWrongFile, n+1, f[2], outWrong, outFalseNoop)
		}
		key := variantKey{f[0], f[1]}
		if _, dup := known[key]; dup {
			t.Fatalf("%s:%d: %s | %s is listed twice", knownWrongFile, n+1, f[0], f[1])
		}
		known[key] = o
	}
	return known
}

// variantCorpus is the history corpus (or, when the history is not
// there, the generated one) prepared for the generators, at most
// maxVariantEntries modified text files with at least one hunk: every
// entry that is not Go first, then Go ones, newest first.
func variantCorpus(t *testing.T) (entries []*variantEntry, fromHistory bool) {
	t.Helper()
	raw := historyCorpus(t, moduleRoot(t), 1000)
	fromHistory = len(raw) > 0
	if !fromHistory {
		// A checkout without the history (a shallow clone, a source
		// archive) still runs every variant kind, on generated pairs.
		t.Logf("NOTE: no history corpus up to %s (no git, a shallow clone or a source archive): using generated file pairs", corpusTip[:12])
		raw = syntheticCorpus(t, 60)
	}
	var goEntries []*variantEntry
	for _, c := range raw {
		if c.newFile || c.deleteFile || len(c.pre) == 0 || len(c.post) == 0 {
			continue
		}
		f, err := Parse(c.diff)
		if err != nil {
			t.Fatalf("%s: Parse: %v", c.name, err)
		}
		e := &variantEntry{corpusEntry: c, file: f}
		e.path = c.name
		if i := strings.IndexByte(c.name, ':'); i >= 0 {
			e.path = c.name[i+1:]
		}
		e.kind = corpusFileKind(e.path, c.pre)
		e.preLines, e.postLines = linesOf(c.pre), linesOf(c.post)
		if bytes.HasSuffix(c.pre, []byte("\n")) && bytes.HasSuffix(c.post, []byte("\n")) &&
			!bytes.Contains(c.pre, []byte("\r")) && !bytes.Contains(c.post, []byte("\r")) {
			got, ok := spliceLines(e.preLines, hunkLineEdits(f.Hunks))
			e.spliceable = ok && slices.Equal(got, e.postLines)
		}
		if e.kind == "Go" {
			goEntries = append(goEntries, e)
		} else {
			entries = append(entries, e)
		}
	}
	n := max(0, min(len(goEntries), maxVariantEntries-len(entries)))
	return append(entries, goEntries[:n]...), fromHistory
}

// linesOf splits b after each newline; an unterminated last line is a
// line too.
func linesOf(b []byte) []string {
	ls := strings.SplitAfter(string(b), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// corpusFileKind names the language of a corpus file for the report.
func corpusFileKind(p string, content []byte) string {
	switch path.Ext(p) {
	case ".go":
		return "Go"
	case ".md":
		return "Markdown"
	case ".yaml", ".yml":
		return "YAML"
	case ".json":
		return "JSON"
	case ".sh", ".bash":
		return "shell"
	}
	if bytes.HasPrefix(content, []byte("#!/bin/sh")) || bytes.HasPrefix(content, []byte("#!/usr/bin/env bash")) ||
		bytes.HasPrefix(content, []byte("#!/bin/bash")) || bytes.HasPrefix(content, []byte("#!/usr/bin/env sh")) {
		return "shell"
	}
	if strings.HasPrefix(p, "synthetic-") {
		return "generated"
	}
	return "other"
}

// lineEdit replaces the lines old, at 0-based line at, with new (an empty old
// inserts before line at).
type lineEdit struct {
	at       int
	old, new []string
}

// hunkLineEdits is the edits the hunks of a diff make, at the lines their
// headers name.
func hunkLineEdits(hs []Hunk) []lineEdit {
	var es []lineEdit
	for _, h := range hs {
		e := lineEdit{at: h.OldStart - 1}
		if h.OldLines == 0 {
			e.at = h.OldStart // "-l,0" inserts after line l
		}
		for _, l := range h.Lines {
			if l.Op != Insert {
				e.old = append(e.old, l.Text+"\n")
			}
			if l.Op != Delete {
				e.new = append(e.new, l.Text+"\n")
			}
		}
		es = append(es, e)
	}
	return es
}

// spliceLines makes the edits (in any order, not overlapping) on lines; ok is
// false when an edit's old lines are not where it says.
func spliceLines(lines []string, es []lineEdit) (out []string, ok bool) {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b lineEdit) int { return a.at - b.at })
	next := 0
	for _, e := range es {
		if e.at < next || e.at+len(e.old) > len(lines) || !slices.Equal(lines[e.at:e.at+len(e.old)], e.old) {
			return nil, false
		}
		out = append(out, lines[next:e.at]...)
		out = append(out, e.new...)
		next = e.at + len(e.old)
	}
	return append(out, lines[next:]...), true
}

func concatLines(ls []string) []byte { return []byte(strings.Join(ls, "")) }

// renderDiff writes hunks as a unified diff of e's file; header writes a
// hunk's "@@" line (nil: the hunk's numbers, with counts recounted from
// its body).
func renderDiff(e *variantEntry, hunks []Hunk, header func(h *Hunk) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", e.path, e.path)
	for i := range hunks {
		h := &hunks[i]
		if header != nil {
			b.WriteString(header(h))
		} else {
			o, n := bodyCounts(h)
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@", h.OldStart, o, h.NewStart, n)
		}
		b.WriteByte('\n')
		for _, l := range h.Lines {
			b.WriteByte(byte(l.Op))
			b.WriteString(l.Text)
			if l.CR {
				b.WriteByte('\r')
			}
			b.WriteByte('\n')
			if l.NoEOL {
				b.WriteString("\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}

func bodyCounts(h *Hunk) (old, new int) {
	for _, l := range h.Lines {
		if l.Op != Insert {
			old++
		}
		if l.Op != Delete {
			new++
		}
	}
	return old, new
}

// cloneHunks copies hunks deeply enough for a generator to change lines.
func cloneHunks(hs []Hunk) []Hunk {
	out := slices.Clone(hs)
	for i := range out {
		out[i].Lines = slices.Clone(out[i].Lines)
	}
	return out
}

func genExact(_ *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	return variant{src: e.pre, diff: e.diff, want: e.post}, true
}

// genShifted moves every header by the same k lines, up or down.
func genShifted(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	k := 1 + rng.IntN(40)
	if rng.IntN(2) == 0 && e.file.Hunks[0].OldStart-k >= 1 {
		k = -k
	}
	hs := cloneHunks(e.file.Hunks)
	for i := range hs {
		hs[i].OldStart += k
		hs[i].NewStart += k
	}
	return variant{src: e.pre, diff: renderDiff(e, hs, nil), want: e.post}, true
}

// genRandomLines gives every header a random line of the file.
func genRandomLines(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	hs := cloneHunks(e.file.Hunks)
	for i := range hs {
		d := hs[i].NewStart - hs[i].OldStart
		hs[i].OldStart = 1 + rng.IntN(len(e.preLines))
		hs[i].NewStart = max(1, hs[i].OldStart+d)
	}
	return variant{src: e.pre, diff: renderDiff(e, hs, nil), want: e.post}, true
}

// genCounts writes wrong counts in every header, too small or too large.
func genCounts(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	wrong := func(n int) int {
		for {
			if m := rng.IntN(2*n + 6); m != n {
				return m
			}
		}
	}
	diff := renderDiff(e, e.file.Hunks, func(h *Hunk) string {
		o, n := bodyCounts(h)
		return fmt.Sprintf("@@ -%d,%d +%d,%d @@", h.OldStart, wrong(o), h.NewStart, wrong(n))
	})
	return variant{src: e.pre, diff: diff, want: e.post}, true
}

// genMissingEdge drops the first or the last line of one hunk, a context
// line.
func genMissingEdge(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	type at struct{ h, l int }
	var cands []at
	for i, h := range e.file.Hunks {
		if h.Lines[0].Op == Context {
			cands = append(cands, at{i, 0})
		}
		if last := len(h.Lines) - 1; h.Lines[last].Op == Context && !h.Lines[last].NoEOL {
			cands = append(cands, at{i, last})
		}
	}
	if len(cands) == 0 {
		return variant{}, false
	}
	c := cands[rng.IntN(len(cands))]
	hs := cloneHunks(e.file.Hunks)
	hs[c.h].Lines = slices.Delete(hs[c.h].Lines, c.l, c.l+1)
	return variant{src: e.pre, diff: renderDiff(e, hs, nil), want: e.post}, true
}

// genMissingInside drops a context line of one hunk that has context
// lines on both sides, so that where the changed lines go stays certain.
func genMissingInside(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	type at struct{ h, l int }
	var cands []at
	for i, h := range e.file.Hunks {
		for j := 1; j < len(h.Lines)-1; j++ {
			if h.Lines[j-1].Op == Context && h.Lines[j].Op == Context && h.Lines[j+1].Op == Context {
				cands = append(cands, at{i, j})
			}
		}
	}
	if len(cands) == 0 {
		return variant{}, false
	}
	c := cands[rng.IntN(len(cands))]
	hs := cloneHunks(e.file.Hunks)
	hs[c.h].Lines = slices.Delete(hs[c.h].Lines, c.l, c.l+1)
	return variant{src: e.pre, diff: renderDiff(e, hs, nil), want: e.post}, true
}

// genExtraInside adds, between two context lines of one hunk, a context
// line the file does not have there: a blank line, the line before
// repeated, or a made-up comment.
func genExtraInside(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	type at struct{ h, l int }
	var cands []at
	for i, h := range e.file.Hunks {
		for j := 1; j < len(h.Lines); j++ {
			if h.Lines[j-1].Op == Context && h.Lines[j].Op == Context {
				cands = append(cands, at{i, j})
			}
		}
	}
	if len(cands) == 0 {
		return variant{}, false
	}
	c := cands[rng.IntN(len(cands))]
	hs := cloneHunks(e.file.Hunks)
	prev := hs[c.h].Lines[c.l-1]
	extra := Line{Op: Context, CR: prev.CR}
	switch rng.IntN(3) {
	case 0: // blank
	case 1:
		extra.Text = prev.Text
	default:
		extra.Text = prev.Text[:leadingSpace(prev.Text)] + madeUpLine(e.kind)
	}
	hs[c.h].Lines = slices.Insert(hs[c.h].Lines, c.l, extra)
	return variant{src: e.pre, diff: renderDiff(e, hs, nil), want: e.post}, true
}

// madeUpLine is a line a model might invent in a file of the kind.
func madeUpLine(kind string) string {
	switch kind {
	case "YAML", "shell", "other":
		return "# see below"
	case "Markdown":
		return "See below."
	case "JSON":
		return `"note": "see below",`
	}
	return "// see below"
}

// genIndent rewrites the indentation of the context and added lines in the
// other convention: a tab file's tabs as runs of 2, 4 or 8 spaces, a space
// file's indentation unit as a tab. The expected file is the real one:
// added lines back in the file's own convention. Entries whose lines
// could not be re-indented without a guess (a space-indented line in a
// tab file, indentation off the file's unit) are left out.
func genIndent(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	tabs, spaces := 0, 0
	unit := 0
	for _, l := range e.preLines {
		switch {
		case strings.HasPrefix(l, "\t"):
			tabs++
		case strings.HasPrefix(l, " ") && strings.TrimSpace(l) != "":
			spaces++
			unit = gcdInt(unit, len(l)-len(strings.TrimLeft(l, " ")))
		}
	}
	tabFile := tabs > spaces
	if !tabFile && (unit < 2 || tabs > 0) {
		return variant{}, false
	}
	width := []int{2, 4, 8}[rng.IntN(3)]
	hs := cloneHunks(e.file.Hunks)
	changed := false
	for i := range hs {
		for j := range hs[i].Lines {
			l := &hs[i].Lines[j]
			lead := l.Text[:leadingSpace(l.Text)]
			if lead == "" {
				continue
			}
			if l.Op == Delete {
				if strings.Contains(lead, "\t") == !tabFile {
					// A line against the file's convention: re-indenting
					// the lines around it would be a guess.
					return variant{}, false
				}
				continue
			}
			rest := l.Text[len(lead):]
			if tabFile {
				if strings.Trim(lead, "\t") != "" {
					return variant{}, false
				}
				l.Text = strings.Repeat(" ", width*len(lead)) + rest
			} else {
				if strings.Trim(lead, " ") != "" || len(lead)%unit != 0 {
					return variant{}, false
				}
				l.Text = strings.Repeat("\t", len(lead)/unit) + rest
			}
			changed = true
		}
	}
	if !changed {
		return variant{}, false
	}
	return variant{src: e.pre, diff: renderDiff(e, hs, nil), want: e.post}, true
}

func gcdInt(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// genTrailing drops the trailing whitespace of the context and deleted
// lines that have some, and adds some to others.
func genTrailing(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	hs := cloneHunks(e.file.Hunks)
	changed := false
	for i := range hs {
		for j := range hs[i].Lines {
			l := &hs[i].Lines[j]
			if l.Op == Insert {
				continue
			}
			if t := trimSpaceRight(l.Text); t != l.Text {
				l.Text, changed = t, true
			} else if rng.IntN(2) == 0 {
				l.Text += []string{" ", "  ", "\t"}[rng.IntN(3)]
				changed = true
			}
		}
	}
	if !changed {
		return variant{}, false
	}
	return variant{src: e.pre, diff: renderDiff(e, hs, nil), want: e.post}, true
}

func genNoNumbers(_ *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	diff := renderDiff(e, e.file.Hunks, func(*Hunk) string { return "@@ @@" })
	return variant{src: e.pre, diff: diff, want: e.post}, true
}

// editMargin is how many lines an unrelated edit or a duplicated region
// keeps away from a hunk's lines.
const editMargin = 3

// linesAwayFrom is the 0-based lines of e's file at least editMargin lines
// away from every hunk in hs: where an edit (or an insertion before the
// line) leaves the hunks' lines alone.
func linesAwayFrom(e *variantEntry, hs []Hunk) []int {
	var free []int
	es := hunkLineEdits(hs)
	for l := 0; l <= len(e.preLines); l++ {
		ok := true
		for _, ed := range es {
			if l >= ed.at-editMargin && l < ed.at+len(ed.old)+editMargin {
				ok = false
				break
			}
		}
		if ok {
			free = append(free, l)
		}
	}
	return free
}

// genChangedSince edits the file away from the hunks (lines inserted, a
// line deleted or replaced) before applying the diff as git wrote it: the
// expected file is the real one with the same edit.
func genChangedSince(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	if !e.spliceable {
		return variant{}, false
	}
	free := linesAwayFrom(e, e.file.Hunks)
	if len(free) == 0 {
		return variant{}, false
	}
	at := free[rng.IntN(len(free))]
	tag := fmt.Sprintf("%08x", rng.Uint32())
	var ed lineEdit
	switch k := rng.IntN(3); {
	case k == 0 || at == len(e.preLines):
		ed = lineEdit{at: at}
		for i := range 1 + rng.IntN(4) {
			ed.new = append(ed.new, fmt.Sprintf("unrelated line %d %s\n", i, tag))
		}
	case k == 1:
		ed = lineEdit{at: at, old: e.preLines[at : at+1]}
	default:
		ed = lineEdit{at: at, old: e.preLines[at : at+1], new: []string{"unrelated change " + tag + "\n"}}
	}
	src, ok1 := spliceLines(e.preLines, []lineEdit{ed})
	want, ok2 := spliceLines(e.preLines, append(hunkLineEdits(e.file.Hunks), ed))
	if !ok1 || !ok2 {
		return variant{}, false
	}
	return variant{src: concatLines(src), diff: e.diff, want: concatLines(want)}, true
}

// dupRegion is one hunk of e's diff with its region (its old lines)
// copied elsewhere in the file: src is the file with the copy, orig and
// dup the 0-based lines where the two copies start.
type dupRegion struct {
	hunk      Hunk
	src       []string
	orig, dup int
}

func makeDupRegion(rng *rand.Rand, e *variantEntry) (dupRegion, bool) {
	if !e.spliceable {
		return dupRegion{}, false
	}
	var hs []int
	for i, h := range e.file.Hunks {
		if h.OldLines > 0 {
			hs = append(hs, i)
		}
	}
	if len(hs) == 0 {
		return dupRegion{}, false
	}
	h := e.file.Hunks[hs[rng.IntN(len(hs))]]
	free := linesAwayFrom(e, []Hunk{h})
	if len(free) == 0 {
		return dupRegion{}, false
	}
	a := dupRegion{hunk: h, dup: free[rng.IntN(len(free))], orig: h.OldStart - 1}
	block := hunkLineEdits([]Hunk{h})[0].old
	src, ok := spliceLines(e.preLines, []lineEdit{{at: a.dup, new: block}})
	if !ok {
		return dupRegion{}, false
	}
	if a.dup <= a.orig {
		a.orig += len(block)
	}
	a.src = src
	return a, true
}

// diff is the one-hunk diff of a with its header at 0-based line at
// (-1: no numbers).
func (a dupRegion) diff(e *variantEntry, at int) string {
	h := a.hunk
	h.OldStart, h.NewStart = at+1, at+1
	if at < 0 {
		return renderDiff(e, []Hunk{h}, func(*Hunk) string { return "@@ @@" })
	}
	return renderDiff(e, []Hunk{h}, nil)
}

// genAmbiguousAt points the header exactly at one of the two copies: the
// hunk belongs there.
func genAmbiguousAt(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	a, ok := makeDupRegion(rng, e)
	if !ok {
		return variant{}, false
	}
	at := a.orig
	if rng.IntN(2) == 0 {
		at = a.dup
	}
	ed := hunkLineEdits([]Hunk{a.hunk})[0]
	ed.at = at
	want, ok := spliceLines(a.src, []lineEdit{ed})
	if !ok {
		return variant{}, false
	}
	return variant{src: concatLines(a.src), diff: a.diff(e, at), want: concatLines(want)}, true
}

// genAmbiguousBetween points the header halfway between the copies:
// nothing tells them apart.
func genAmbiguousBetween(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	a, ok := makeDupRegion(rng, e)
	if !ok {
		return variant{}, false
	}
	at := (a.orig + a.dup) / 2
	if old := hunkLineEdits([]Hunk{a.hunk})[0].old; at+len(old) <= len(a.src) && slices.Equal(a.src[at:at+len(old)], old) {
		return variant{}, false // a third copy, where the header points: the hunk may go there
	}
	return variant{src: concatLines(a.src), diff: a.diff(e, at), refuse: true}, true
}

func genAmbiguousNoNumbers(rng *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	a, ok := makeDupRegion(rng, e)
	if !ok {
		return variant{}, false
	}
	return variant{src: concatLines(a.src), diff: a.diff(e, -1), refuse: true}, true
}

func genAlreadyApplied(_ *rand.Rand, e *variantEntry, _ []*variantEntry) (variant, bool) {
	return variant{src: e.post, diff: e.diff, want: e.post, noop: true}, true
}

// genWrongFile applies the diff to another file of the corpus (of the
// same kind when one qualifies). A file the diff fits (every hunk's old
// lines, or every hunk's new lines, in it, whitespace aside) is not a
// wrong file for it and is passed over.
func genWrongFile(rng *rand.Rand, e *variantEntry, corpus []*variantEntry) (variant, bool) {
	var same, other []*variantEntry
	for _, o := range corpus {
		switch {
		case o.path == e.path:
		case o.kind == e.kind:
			same = append(same, o)
		default:
			other = append(other, o)
		}
	}
	rng.Shuffle(len(same), func(i, j int) { same[i], same[j] = same[j], same[i] })
	rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
	es := hunkLineEdits(e.file.Hunks)
	for _, o := range append(same, other...) {
		text := normalisedText(o.preLines)
		fitsOld, fitsNew := true, true
		for _, ed := range es {
			fitsOld = fitsOld && strings.Contains(text, normalisedText(ed.old))
			fitsNew = fitsNew && strings.Contains(text, normalisedText(ed.new))
		}
		if !fitsOld && !fitsNew {
			return variant{src: o.pre, diff: e.diff, refuse: true}, true
		}
	}
	return variant{}, false
}

// normalisedText is lines with their whitespace collapsed and trimmed,
// each line closed by "\n" and the whole opened by one, so that a
// contiguous run of lines is a substring.
func normalisedText(lines []string) string {
	var b strings.Builder
	b.WriteByte('\n')
	for _, l := range lines {
		b.WriteString(strings.Join(strings.Fields(l), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// judgeVariant applies v and classifies the outcome; res is what Apply
// returned (nil when refused), why the refusal.
func judgeVariant(v variant) (o variantOutcome, res *Result, why error) {
	f, err := Parse(v.diff)
	if err != nil {
		return outRefused, nil, err
	}
	res, err = Apply(v.src, f)
	if err != nil {
		return outRefused, nil, err
	}
	switch {
	case v.refuse:
		return outWrong, res, nil
	case res.Status == Noop && !v.noop:
		return outFalseNoop, res, nil
	case v.noop && (res.Status != Noop || !bytes.Equal(res.Content, v.src)):
		return outWrong, res, nil
	case !v.noop && !bytes.Equal(res.Content, v.want):
		return outWrong, res, nil
	}
	return outApplied, res, nil
}

// placements says where and how Apply placed each hunk.
func placements(res *Result) string {
	var ps []string
	for _, h := range res.Hunks {
		ps = append(ps, fmt.Sprintf("line %d (%s)", h.Match.Line, h.Match))
	}
	return fmt.Sprintf("%s, hunks placed at %s", res.Status, strings.Join(ps, ", "))
}

// lineDiffSummary shows where got departs from want: the lines between their
// common start and common end, a few of each.
func lineDiffSummary(want, got []byte) string {
	w := strings.SplitAfter(string(want), "\n")
	g := strings.SplitAfter(string(got), "\n")
	p := 0
	for p < len(w) && p < len(g) && w[p] == g[p] {
		p++
	}
	s := 0
	for s < len(w)-p && s < len(g)-p && w[len(w)-1-s] == g[len(g)-1-s] {
		s++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "      from line %d:\n", p+1)
	show := func(mark string, ls []string) {
		for i, l := range ls {
			if i == 4 {
				fmt.Fprintf(&b, "      %s … %d more\n", mark, len(ls)-i)
				break
			}
			fmt.Fprintf(&b, "      %s %q\n", mark, strings.TrimSuffix(l, "\n"))
		}
	}
	show("want", w[p:len(w)-s])
	show("got ", g[p:len(g)-s])
	return b.String()
}

// TestVariantCorpus applies model-like variants of real changes and
// counts, per kind of variant, the diffs applied as expected, refused,
// applied wrongly and reported already applied when they are not. A wrong
// apply or a false no-op fails the test unless knownWrong lists it.
func TestVariantCorpus(t *testing.T) {
	start := time.Now()
	corpus, fromHistory := variantCorpus(t)
	read := time.Since(start)
	if len(corpus) == 0 {
		t.Logf("no variant corpus: git is not installed")
		return
	}
	perKind := map[string]int{}
	for _, e := range corpus {
		perKind[e.kind]++
	}
	var langs []string
	for k, n := range perKind {
		langs = append(langs, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(langs)

	var report strings.Builder
	src := "generated file pairs (no history)"
	if fromHistory {
		src = "ctxkit's history up to " + corpusTip[:12]
	}
	fmt.Fprintf(&report, "variant corpus: %d single-file changes from %s (%s)\n\n", len(corpus), src, strings.Join(langs, ", "))
	report.WriteString("applied: the expected file (for \"already applied\": Noop, content unchanged); refused: Parse or Apply\n" +
		"failed; wrong: another result (any result where only a refusal is right); false no-op: Noop for a file that\n" +
		"is not already the result.\n\n")
	fmt.Fprintf(&report, "%-32s %6s %8s %8s %6s %12s\n", "variant", "total", "applied", "refused", "wrong", "false no-op")

	// Every variant of an entry is generated and applied by one worker;
	// the entries are shared out among GOMAXPROCS workers (Apply runs
	// concurrently, as a server runs it).
	kinds := variantKinds()
	knownWrong := loadKnownWrong(t, kinds)
	type result struct {
		made      bool
		code      Code // the refusal's
		o         variantOutcome
		want, got []byte // kept for a wrong outcome only
		placed    string
	}
	results := make([][]result, len(corpus)) // [entry][kind]
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(corpus) {
					return
				}
				e := corpus[i]
				h := fnv.New64a()
				h.Write([]byte(e.name))
				rs := make([]result, len(kinds))
				for j, k := range kinds {
					v, ok := k.gen(rand.New(rand.NewPCG(k.seed, h.Sum64())), e, corpus)
					if !ok {
						continue
					}
					o, res, why := judgeVariant(v)
					rs[j] = result{made: true, o: o}
					if pe := (*Error)(nil); errors.As(why, &pe) {
						rs[j].code = pe.Code
					}
					if o == outWrong || o == outFalseNoop {
						rs[j].want, rs[j].got, rs[j].placed = v.want, res.Content, placements(res)
						if v.noop || v.refuse {
							rs[j].want = v.src
						}
					}
				}
				results[i] = rs
			}
		})
	}
	wg.Wait()

	type failure struct {
		key       variantKey
		o         variantOutcome
		want, got []byte
		placed    string
	}
	var (
		failures []failure
		known    []failure
		seen     = map[variantKey]bool{}
		sum      [variantOutcomes]int
	)
	for j, k := range kinds {
		var count [variantOutcomes]int
		for i, e := range corpus {
			r := results[i][j]
			if !r.made {
				continue
			}
			count[r.o]++
			if r.o != outWrong && r.o != outFalseNoop {
				continue
			}
			key := variantKey{e.name, k.name}
			f := failure{key, r.o, r.want, r.got, r.placed}
			if o, ok := knownWrong[key]; ok && o == r.o {
				known = append(known, f)
				seen[key] = true
			} else {
				failures = append(failures, f)
			}
		}
		total := 0
		for i, n := range count {
			total += n
			sum[i] += n
		}
		fmt.Fprintf(&report, "%-32s %6d %8d %8d %6d %12d\n", k.name, total, count[outApplied], count[outRefused], count[outWrong], count[outFalseNoop])
	}
	fmt.Fprintf(&report, "%-32s %6d %8d %8d %6d %12d\n", "all", sum[0]+sum[1]+sum[2]+sum[3], sum[outApplied], sum[outRefused], sum[outWrong], sum[outFalseNoop])
	// Why the variants were refused, per kind: where leniency could grow.
	report.WriteString("\nrefused, by error code:\n")
	for j, k := range kinds {
		codes := map[Code]int{}
		for i := range corpus {
			if r := results[i][j]; r.made && r.o == outRefused {
				codes[r.code]++
			}
		}
		if len(codes) == 0 {
			continue
		}
		var cs []string
		for c, n := range codes {
			if c == "" {
				c = "other"
			}
			cs = append(cs, fmt.Sprintf("%s %d", c, n))
		}
		slices.Sort(cs)
		fmt.Fprintf(&report, "  %-32s %s\n", k.name, strings.Join(cs, ", "))
	}
	if len(known) > 0 {
		fmt.Fprintf(&report, "\nknown wrong, to be fixed (%d):\n", len(known))
		for _, f := range known {
			fmt.Fprintf(&report, "  %s | %s | %s\n", f.key.entry, f.key.variant, f.o)
		}
	}
	// A listed variant of an entry in the corpus that is no longer wrong
	// (or, from the history, one of an entry no longer in the corpus).
	names := map[string]bool{}
	for _, e := range corpus {
		names[e.name] = true
	}
	var stale []string
	for key, o := range knownWrong {
		synthetic := strings.HasPrefix(key.entry, "synthetic-")
		if !seen[key] && (names[key.entry] || fromHistory && !synthetic) {
			stale = append(stale, fmt.Sprintf("%s | %s | %s", key.entry, key.variant, o))
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		fmt.Fprintf(&report, "\nlisted as known wrong but no longer wrong (%d):\n  %s\n", len(stale), strings.Join(stale, "\n  "))
	}
	t.Logf("corpus read in %v, variants generated and applied in %v", read.Round(time.Millisecond), (time.Since(start) - read).Round(time.Millisecond))
	t.Logf("\n%s", report.String())
	if p := os.Getenv("CTXKIT_VARIANT_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(report.String()), 0o644); err != nil {
			t.Errorf("CTXKIT_VARIANT_REPORT: %v", err)
		}
	}
	if len(stale) > 0 {
		t.Errorf("%d variants listed in %s are no longer wrong: remove their lines (listed in the report above)", len(stale), knownWrongFile)
	}
	// The first few with what went wrong, the rest by name only.
	const shown, named = 8, 200
	for i, f := range failures {
		if i == shown {
			var rest []string
			for _, f := range failures[i:min(len(failures), named)] {
				rest = append(rest, fmt.Sprintf("%s | %s | %s", f.key.entry, f.key.variant, f.o))
			}
			if len(failures) > named {
				rest = append(rest, fmt.Sprintf("… and %d more", len(failures)-named))
			}
			t.Errorf("%d more:\n%s", len(failures)-i, strings.Join(rest, "\n"))
			break
		}
		t.Errorf("%s | %s | %s\n      %s\n%s", f.key.entry, f.key.variant, f.o, f.placed, lineDiffSummary(f.want, f.got))
	}
}

// TestJudgeVariant holds the classes the variant corpus counts to their
// definitions, so that a broken judge cannot pass every variant.
func TestJudgeVariant(t *testing.T) {
	const (
		before = "alpha\nbravo\ncharlie\ndelta\necho\n"
		after  = "alpha\nbravo\nCHARLIE\ndelta\necho\n"
		diff   = "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n alpha\n bravo\n-charlie\n+CHARLIE\n delta\n echo\n"
	)
	for _, c := range []struct {
		name string
		v    variant
		want variantOutcome
	}{
		{"applied as expected", variant{src: []byte(before), diff: diff, want: []byte(after)}, outApplied},
		{"applied, another result", variant{src: []byte(before), diff: diff, want: []byte(before)}, outWrong},
		{"applied where only a refusal is right", variant{src: []byte(before), diff: diff, refuse: true}, outWrong},
		{"refused where only a refusal is right", variant{src: []byte("x\ny\n"), diff: diff, refuse: true}, outRefused},
		{"not found", variant{src: []byte("x\ny\n"), diff: diff, want: []byte(after)}, outRefused},
		{"unreadable diff", variant{src: []byte(before), diff: "@@ -1 +1 @@\n", want: []byte(after)}, outRefused},
		{"noop for a file not yet changed", variant{src: []byte(after), diff: diff, want: []byte(before)}, outFalseNoop},
		{"noop for an applied diff", variant{src: []byte(after), diff: diff, want: []byte(after), noop: true}, outApplied},
		{"applied again", variant{src: []byte(before), diff: diff, want: []byte(before), noop: true}, outWrong},
	} {
		if got, _, _ := judgeVariant(c.v); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestSpliceLines checks the line edits the expected files of "changed
// since" and "ambiguous" are made with.
func TestSpliceLines(t *testing.T) {
	lines := []string{"a\n", "b\n", "c\n", "d\n"}
	got, ok := spliceLines(lines, []lineEdit{
		{at: 3, old: []string{"d\n"}, new: []string{"D\n"}},
		{at: 0, new: []string{"0\n"}},
		{at: 1, old: []string{"b\n", "c\n"}},
	})
	if want := []string{"0\n", "a\n", "D\n"}; !ok || !slices.Equal(got, want) {
		t.Errorf("spliceLines = %q, %v; want %q", got, ok, want)
	}
	if _, ok := spliceLines(lines, []lineEdit{{at: 1, old: []string{"c\n"}}}); ok {
		t.Error("spliceLines accepted an edit whose old lines are not there")
	}
	if _, ok := spliceLines(lines, []lineEdit{{at: 0, old: []string{"a\n", "b\n"}}, {at: 1, old: []string{"b\n"}}}); ok {
		t.Error("spliceLines accepted overlapping edits")
	}
}
