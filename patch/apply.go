package patch

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/textcut"
)

// MaxTarget is the largest target Apply takes, in bytes.
const MaxTarget = 1 << 30

// minInfo is the fewest non-whitespace bytes a hunk's old lines need to be
// placed by a pass looser than exact.
const minInfo = 10

// hunkBudget bounds the line comparisons the search for one hunk may
// make, so that a pathological target (thousands of lines equal to the
// hunk's) cannot stall it. Each hunk has a budget of its own.
const hunkBudget = 1 << 23

// maxCands is how many candidate places a search collects before it
// stops: enough to tell the nearest to the header's line and to list
// the places of an ambiguous hunk.
const maxCands = 8

// indexMin is the fewest lines a target needs for a search to go through
// an index of its lines; a shorter one is searched line by line. (A
// variable so that tests can send every search through the index.)
var indexMin = 256

// Status is what applying a diff did.
type Status int

// Statuses.
const (
	Applied Status = iota // the diff changed the content
	Noop                  // the diff was already applied: the content is unchanged
)

func (s Status) String() string {
	if s == Noop {
		return "noop"
	}
	return "applied"
}

// Pass is how a hunk was matched, from the strictest to the loosest.
type Pass int

// Passes.
const (
	PassExact      Pass = iota // the old lines at the header's line, byte for byte
	PassOffset                 // the old lines byte for byte, at another line
	PassWhitespace             // equal once trailing whitespace is dropped or runs of whitespace collapsed
	PassFuzz                   // with up to two context lines per side ignored
	// PassIndent: equal once indentation is ignored too, the hunk's
	// indentation mapping one way onto the file's; the added lines are
	// re-indented to the file's indentation at that place.
	PassIndent
	// PassInner: with one context line inside the hunk (not at its
	// edges) missing from it, or one extra in it that the file does not
	// have.
	PassInner
)

// Match is where and how a hunk was placed.
type Match struct {
	Pass Pass
	// Fuzz is the most context lines ignored on one side (PassFuzz).
	Fuzz int
	// Offset is the placed line minus the header's line (0 when the
	// header has no numbers).
	Offset int
	// Line is the 1-based line of the original content where the hunk's
	// old lines start.
	Line int
}

func (m Match) String() string {
	switch m.Pass {
	case PassExact:
		return "exact"
	case PassOffset:
		return "offset"
	case PassWhitespace:
		return "whitespace"
	case PassIndent:
		return "indent"
	case PassInner:
		return "inner"
	}
	return "fuzz " + strconv.Itoa(m.Fuzz)
}

// HunkResult is one hunk's outcome: its match, or why it has none.
type HunkResult struct {
	Match Match
	Err   *Error
}

// Result is the outcome of applying a diff.
type Result struct {
	// Content is the new content (the original for Noop).
	Content []byte
	Status  Status
	// Hunks has one entry per hunk of the diff, in diff order.
	Hunks    []HunkResult
	Warnings []string
}

// Apply applies f to src, the target's content (empty for a file that does
// not exist). It returns the first hunk's error when any hunk cannot be
// placed, with every hunk's outcome in the result; nothing is applied
// then. A target holding a NUL byte or invalid UTF-8 is refused.
func Apply(src []byte, f *File) (*Result, error) {
	return apply(nil, src, f)
}

// ApplyInto is Apply, writing the new content into buf's memory when it
// is large enough (buf's length is ignored): a caller applying many diffs
// and done with each result's content can hand it back for the next.
// Result.Content then shares buf's memory; for a Noop it is src, as with
// Apply. buf must not share memory with src.
func ApplyInto(buf, src []byte, f *File) (*Result, error) {
	return apply(buf, src, f)
}

func apply(buf, src []byte, f *File) (*Result, error) {
	if len(src) > MaxTarget {
		return nil, &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the target is %d bytes, more than %d", len(src), MaxTarget)}
	}
	if bytes.IndexByte(src, 0) >= 0 || !utf8.Valid(src) {
		return nil, &Error{Code: CodeBinary, Msg: "the target is binary (it holds a NUL byte or invalid UTF-8)"}
	}
	for i := range f.Hunks {
		for _, l := range f.Hunks[i].Lines {
			if !utf8.ValidString(l.Text) {
				return nil, &Error{Code: CodeBinary, Hunk: i + 1, Path: hunkPath(i), Line: f.Hunks[i].Pos, Msg: "the hunk holds invalid UTF-8"}
			}
		}
	}
	sc := scratchPool.Get().(*targetScratch)
	a := &applier{t: newTarget(src, sc), f: f, buf: buf}
	// Nothing of the target's tables leaves Apply: the result holds its
	// own copies.
	defer a.t.release()
	res := &Result{Hunks: make([]HunkResult, len(f.Hunks))}
	if f.IsNew() && len(src) > 0 {
		// A new-file diff is already applied only when the file holds
		// exactly what it creates, and that is more than blank lines.
		out, err := a.newContent()
		if err != nil || !bytes.Equal(out, src) || !a.changesText(-1) {
			e := &Error{Code: CodeNotFound, Hunk: 1, Path: hunkPath(0), Line: f.Hunks[0].Pos, Msg: "the diff creates the file, but it exists with other content"}
			if err == nil && bytes.Equal(out, src) {
				e.Msg = "the diff creates the file with blank lines only, and it exists with them: blank lines cannot show that the diff is already applied"
			}
			res.Hunks[0].Err = e
			return res, e
		}
		for i := range res.Hunks {
			res.Hunks[i].Match = Match{Pass: PassExact, Line: 1}
		}
		res.Content, res.Status = src, Noop
		res.Warnings = []string{"the diff is already applied: nothing to change"}
		return res, nil
	}
	locs, errs := a.locateAll()
	a.indentAll(locs, errs)
	// Whether the diff is already applied is judged from the hunks whose
	// changed lines hold text: blank lines added or deleted are found
	// "applied" almost anywhere. A hunk of blank lines found applied only
	// goes along with them.
	fwd, rev, revText, failed := 0, 0, 0, 0
	for i := range locs {
		switch {
		case errs[i] != nil:
			failed++
		case locs[i].reverse:
			rev++
			if a.changesText(i) {
				revText++
			}
		default:
			fwd++
		}
	}
	switch {
	case failed == 0 && rev == 0:
		out, err := a.build(locs)
		if err != nil {
			return nil, err
		}
		for i, l := range locs {
			res.Hunks[i].Match = l.match
		}
		res.Content, res.Status, res.Warnings = out, Applied, a.warns
		return res, nil
	case failed == 0 && fwd == 0 && revText > 0:
		for i, l := range locs {
			res.Hunks[i].Match = l.match
		}
		res.Content, res.Status = src, Noop
		res.Warnings = append(a.warns, "the diff is already applied: nothing to change")
		return res, nil
	}
	var first, partial *Error
	for i := range errs {
		e := errs[i]
		switch {
		case e == nil && locs[i].reverse && !a.changesText(i):
			e = &Error{Code: CodeNotFound, Hunk: i + 1, Path: hunkPath(i), Line: f.Hunks[i].Pos, FileLine: locs[i].match.Line,
				Msg: fmt.Sprintf("its old lines are not in the file; its changed lines are blank, and at line %d the file reads as the hunk would leave it, but blank lines cannot show that a diff is already applied", locs[i].match.Line)}
			if first == nil {
				first = e
			}
		case e == nil && locs[i].reverse:
			e = &Error{Code: CodePartial, Hunk: i + 1, Path: hunkPath(i), Line: f.Hunks[i].Pos, FileLine: locs[i].match.Line,
				Msg: fmt.Sprintf("already applied (its new lines are at line %d) while other hunks are not: the file is partly changed", locs[i].match.Line)}
			if partial == nil {
				partial = e
			}
		case e != nil && first == nil:
			first = e
		}
		if e != nil {
			res.Hunks[i].Err = e
		} else {
			res.Hunks[i].Match = locs[i].match
		}
	}
	if first == nil {
		first = partial
	}
	res.Warnings = a.warns
	return res, first
}

func firstErr(errs []*Error) *Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// target is the content being patched, split into lines.
type target struct {
	src []byte
	// starts[i] is the offset of line i; starts[n] is len(src).
	starts []int32
	n      int
	// idx holds, per normalisation level, the index of the lines' text
	// (built when a search first needs it).
	idx [levels][]uint64
	has [levels]bool
	// sc, when not nil, lends starts and idx their memory and takes it
	// back in release.
	sc *targetScratch
}

// targetScratch is the memory of a target's line table and indexes, kept
// from one Apply to the next: a run applying hundreds of diffs in a short
// process otherwise takes fresh pages for each, and pays for every one
// as a page fault.
type targetScratch struct {
	starts []int32
	keys   [levels][]uint64
}

// maxScratchLines bounds the tables a targetScratch keeps (4 bytes a line
// for starts, 8 a line for each level's index): a huge file's tables are
// left to the collector rather than held for the next, small, one.
const maxScratchLines = 1 << 16

var scratchPool = sync.Pool{New: func() any { return new(targetScratch) }}

// newTarget splits src into lines, the line table in sc's memory when sc
// is not nil and large enough.
func newTarget(src []byte, sc *targetScratch) target {
	n := bytes.Count(src, []byte{'\n'})
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	var starts []int32
	if sc != nil && cap(sc.starts) >= n+1 {
		starts = sc.starts[:0]
	} else {
		starts = make([]int32, 0, n+1)
	}
	for off := 0; off < len(src); {
		starts = append(starts, int32(off))
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	starts = append(starts, int32(len(src)))
	return target{src: src, starts: starts, n: n, sc: sc}
}

// release hands the target's tables back to the pool; t is not used
// after.
func (t *target) release() {
	sc := t.sc
	if sc == nil {
		return
	}
	t.sc = nil
	if cap(t.starts) > maxScratchLines+1 {
		return
	}
	sc.starts = t.starts
	for l := range t.idx {
		if t.has[l] && cap(t.idx[l]) <= maxScratchLines {
			sc.keys[l] = t.idx[l]
		}
	}
	scratchPool.Put(sc)
}

// line is line i without its line ending.
func (t *target) line(i int) []byte {
	b := t.src[t.starts[i]:t.starts[i+1]]
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// eol is the target's dominant line ending ("" when it has none), and
// whether it mixes CRLF and LF.
func (t *target) eol() (eol string, mixed bool) {
	lf := bytes.Count(t.src, []byte{'\n'})
	crlf := bytes.Count(t.src, []byte("\r\n"))
	switch {
	case lf == 0:
		return "", false
	case crlf > 0 && crlf*2 >= lf:
		return "\r\n", crlf < lf
	}
	return "\n", crlf > 0
}

// Normalisation levels of a line comparison.
const (
	levelExact  = iota
	levelRstrip // trailing whitespace ignored
	levelFields // trailing whitespace ignored and inner runs of whitespace collapsed; the indentation must be equal
	levelIndent // as levelFields, with the indentation ignored too
	levels
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' }

func trimSpaceRight[T []byte | string](s T) T {
	n := len(s)
	for n > 0 && isSpace(s[n-1]) {
		n--
	}
	return s[:n]
}

func leadingSpace[T []byte | string](s T) int {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func eqLine(level int, a []byte, b string) bool {
	switch level {
	case levelExact:
		return string(a) == b
	case levelRstrip:
		return string(trimSpaceRight(a)) == trimSpaceRight(b)
	}
	a, b = trimSpaceRight(a), trimSpaceRight(b)
	i, j := leadingSpace(a), leadingSpace(b)
	if level == levelFields && string(a[:i]) != b[:j] {
		return false
	}
	for {
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		sa, sb := isSpace(a[i]), isSpace(b[j])
		if sa != sb {
			return false
		}
		if sa {
			for i < len(a) && isSpace(a[i]) {
				i++
			}
			for j < len(b) && isSpace(b[j]) {
				j++
			}
			continue
		}
		if a[i] != b[j] {
			return false
		}
		i++
		j++
	}
}

// hashLine hashes s as eqLine compares it at level: lines equal at a
// level have equal hashes.
func hashLine[T []byte | string](level int, s T) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	if level == levelExact {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * prime
		}
		return h
	}
	s = trimSpaceRight(s)
	i := 0
	switch level {
	case levelFields:
		i = leadingSpace(s)
		for k := 0; k < i; k++ {
			h = (h ^ uint64(s[k])) * prime
		}
	case levelIndent:
		i = leadingSpace(s)
	}
	for ; i < len(s); i++ {
		c := s[i]
		if level >= levelFields && isSpace(c) {
			for i+1 < len(s) && isSpace(s[i+1]) {
				i++
			}
			c = ' '
		}
		h = (h ^ uint64(c)) * prime
	}
	return h
}

// Index keys hold a line's hash in their high bits and its number in the
// low lineBits bits, so that sorting the keys groups the lines by hash,
// each group in line order.
const (
	lineBits = 31
	lineMask = 1<<lineBits - 1
)

// index is the sorted keys of the target's lines at level.
func (t *target) index(level int) []uint64 {
	if t.has[level] {
		return t.idx[level]
	}
	var keys []uint64
	if t.sc != nil && cap(t.sc.keys[level]) >= t.n {
		keys = t.sc.keys[level][:t.n]
	} else {
		keys = make([]uint64, t.n)
	}
	for i := range keys {
		keys[i] = hashLine(level, t.line(i))&^lineMask | uint64(i)
	}
	slices.Sort(keys)
	t.idx[level], t.has[level] = keys, true
	return keys
}

// lookup is the keys of the lines whose hash at level is h, in line order.
func lookup(keys []uint64, h uint64) []uint64 {
	h &^= lineMask
	lo, _ := slices.BinarySearch(keys, h)
	hi, _ := slices.BinarySearch(keys[lo:], h|lineMask)
	if lo+hi < len(keys) && keys[lo+hi] == h|lineMask {
		hi++
	}
	return keys[lo : lo+hi]
}

// side is a hunk seen from one direction: forward, or reversed to test
// whether it is already applied.
type side struct {
	index int      // 0-based hunk index
	old   []string // the old-side lines (context and deleted)
	// lead and trail are the context lines before the first change and
	// after the last one; keepLead and keepTrail say that one of them must
	// stay because an insertion is next to it.
	lead, trail         int
	keepLead, keepTrail bool
	// insFirst says that the first change is a pure insertion (no
	// deleted line in its run of changed lines): only context places it.
	insFirst bool
	// atEOF says that the last old or new line carries a "\ No newline
	// at end of file" marker: the hunk ends the file, so its old lines
	// must end the target, which ends in a newline unless noEOL (the
	// marker is on the last old line).
	atEOF, noEOL bool
	reverse      bool
	numbered     bool
	start        int // header line for this side (1-based; 0 when none)
	count        int // header count for this side
	pos          int // diff line of the header
}

// loc is a placed hunk.
type loc struct {
	cand
	match Match
	// reverse says that the hunk's new lines were found, not its old
	// ones: the hunk is already applied.
	reverse bool
}

// cand is a place where a side's old lines match, without lead and trail
// context lines.
type cand struct {
	// region is the 0-based target line where the untrimmed old lines
	// start.
	region      int
	lead, trail int
	// skip is 1 + the index of an old line the target does not hold (an
	// extra context line in the hunk), 0 for none.
	skip int
	// gap is 1 + the index of the old line before which the target holds
	// one line the hunk does not (a context line missing from it), 0 for
	// none.
	gap int
	// ind maps the hunk's indentation onto the target's (PassIndent).
	ind *reindent
}

// span is the target lines a candidate of s matched.
func (c cand) span(s *side) (int, int) {
	return c.region + c.lead, c.region + c.size(s) - c.trail
}

// size is the target lines the untrimmed old lines of s take at c.
func (c cand) size(s *side) int {
	n := len(s.old)
	if c.skip > 0 {
		n--
	}
	if c.gap > 0 {
		n++
	}
	return n
}

// at is the target line of old line j of s at c, or -1 when the target
// does not hold it.
func (c cand) at(j int) int {
	switch {
	case c.skip == j+1:
		return -1
	case c.skip > 0 && j >= c.skip:
		j--
	}
	if c.gap > 0 && j >= c.gap-1 {
		j++
	}
	return c.region + j
}

// same reports whether c and d are one place.
func (c cand) same(d cand) bool {
	return c.region == d.region && c.skip == d.skip && c.gap == d.gap
}

type applier struct {
	t target
	f *File
	// pin is the pinning of the hunk being placed (forward).
	pin   pinning
	work  int // line comparisons made for the current hunk
	warns []string
	// buf is the memory the new content is written into when it is
	// large enough (ApplyInto).
	buf []byte
}

// side fills s with hunk i seen from one direction. Its old lines reuse
// buf's storage.
func (a *applier) side(s *side, i int, reverse bool, buf []string) {
	h := &a.f.Hunks[i]
	*s = side{index: i, numbered: h.Numbered, start: h.OldStart, count: h.OldLines, pos: h.Pos, reverse: reverse}
	if reverse {
		s.start, s.count = h.NewStart, h.NewLines
	}
	op := func(j int) Op {
		o := h.Lines[j].Op
		if reverse && o != Context {
			o ^= Delete ^ Insert
		}
		return o
	}
	s.old = buf[:0]
	changed, newNoEOL := false, false
	group := 0 // 0 before the first run of changed lines, 1 in it, 2 after it
	for j, l := range h.Lines {
		o := op(j)
		switch {
		case o == Context && group == 1:
			group = 2
		case o != Context && group == 0:
			group, s.insFirst = 1, true
		}
		if o == Delete && group == 1 {
			s.insFirst = false
		}
		if o == Insert && (j == 0 || op(j-1) == Context) && !changed {
			s.keepLead = true
		}
		if o == Insert && (j == len(h.Lines)-1 || op(j+1) == Context) {
			s.keepTrail = true
		} else if o == Delete {
			s.keepTrail = false
		}
		if o != Insert {
			s.old = append(s.old, l.Text)
			s.noEOL = l.NoEOL
		}
		if o != Delete {
			newNoEOL = l.NoEOL
		}
		if o == Context {
			if changed {
				s.trail++
			} else {
				s.lead++
			}
		} else {
			changed = true
			s.trail = 0
		}
	}
	s.atEOF = s.noEOL || newNoEOL
}

// locateAll places every hunk, in header order, so that the offset found
// for one hunk refines the hint for the next. A hunk is placed forward
// (its old lines found) or found already applied (its new lines found,
// loc.reverse).
func (a *applier) locateAll() ([]loc, []*Error) {
	locs := make([]loc, len(a.f.Hunks))
	errs := make([]*Error, len(a.f.Hunks))
	order := make([]int, len(a.f.Hunks))
	for i := range order {
		order[i] = i
	}
	hs := a.f.Hunks
	if !slices.ContainsFunc(hs, func(h Hunk) bool { return !h.Numbered }) {
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(hs[x].OldStart, hs[y].OldStart) })
	}
	delta := 0
	var fwd, rev side
	for _, i := range order {
		a.side(&fwd, i, false, fwd.old)
		a.side(&rev, i, true, rev.old)
		l, err := a.locate(&fwd, &rev, delta)
		if err != nil {
			errs[i] = err
			continue
		}
		locs[i] = l
		if hs[i].Numbered {
			delta = l.match.Offset
		}
	}
	return locs, errs
}

// headerLine is the 0-based target line the header names.
func (s *side) headerLine() int {
	if len(s.old) == 0 && s.count == 0 {
		return s.start // "-l,0" inserts after line l
	}
	return max(s.start-1, 0)
}

// Search steps, from the strictest to the loosest. The first fuzz step
// takes a hunk one context line off: one ignored at an edge, or one
// missing or extra inside it (both readings at once, so that a place
// found one way and another place found the other make the hunk
// ambiguous); the second ignores two context lines per side; the
// indentation step ignores indentation.
//
// Ignoring a few edge context lines comes before ignoring indentation:
// the edge lines it ignores must be like the lines that stand there, and
// the lines it keeps and the added lines stay as the diff wrote them,
// where the indentation step rewrites the added lines.
const (
	stepExact = iota
	stepRstrip
	stepFields
	stepFuzz1
	stepFuzz2
	stepIndent
	steps
)

// locate places hunk fwd (rev is the same hunk reversed). At each step,
// from exact to indentation ignored, it looks for the old lines and for
// the new lines (the hunk already applied), and stops at the first step
// where either is found: a looser match in one direction never wins over
// a stricter one in the other. Found both ways at one step, the hunk is
// ambiguous, unless one match lies inside the other (the lines of an
// insertion's context, found inside the hunk's new lines, are no sign
// that it is not applied). Already applied is believed only from a
// unique match with enough text to be sure of it, and from a loose match
// only when the old lines are found at no looser step; for the diff as a
// whole, only from hunks whose changed lines hold text (see Apply).
func (a *applier) locate(fwd, rev *side, delta int) (loc, *Error) {
	a.work = 0
	if len(fwd.old) == 0 {
		return a.placeInsertion(fwd, delta)
	}
	hintF, hintR := -1, -1
	if fwd.numbered {
		hintF, hintR = fwd.headerLine()+delta, rev.headerLine()+delta
	}
	pin := pinOf(fwd, hintF)
	a.pin = pin
	judgeApplied := len(rev.old) > 0 // a hunk without new lines proves nothing applied
	blank := !a.changesText(fwd.index)
	var away []cand // a pinned hunk's matches in other places
	for step := range steps {
		fc, err := a.candidates(fwd, step, hintF)
		if err != nil {
			return loc{}, err
		}
		if pin.on {
			var off []cand
			fc, off = pin.split(fc, step)
			if len(fc) == 0 && len(off) == 1 && pin.at > 0 && !pin.start && step <= stepFields && info(fwd.old) >= minInfo &&
				off[0].region > pin.at && off[0].region-pin.at <= pinSlack {
				// The one place in the file its lines are, one line after
				// its header's line: a context line dropped before the
				// insertion, the header kept (found before the
				// header's line, the header itself is wrong). Its lines
				// say where the insertion goes; the header, that this
				// copy is meant. A header naming the start of the file
				// says more than a line number and stays strict.
				a.warnf("hunk %d placed at line %d, %s after where its header puts it, the only place its lines are", fwd.index+1, off[0].region+off[0].lead+1, plural(off[0].region-pin.at, "line"))
				fc, off = off, nil
			}
			if pin.at > 0 && len(fc) > 0 && len(off) > 0 && !slices.ContainsFunc(fc, func(c cand) bool { return c.region == pin.at }) {
				// Allowed at the start of the file only, with a copy
				// elsewhere and a header pointing at neither: the start
				// of the file is where such a hunk may be, not where it
				// must be.
				e := a.ambiguous(fwd, append(fc, off...), "")
				e.Msg = fmt.Sprintf("matches at lines %s %s, and its header's line %d points at none of them: add context lines that make it unique", e.lineList(), stepWhy(step), fwd.start)
				return loc{}, e
			}
			if away == nil {
				away = off
			}
		}
		var rc []cand
		if judgeApplied {
			if rc, err = a.candidates(rev, step, hintR); err != nil {
				return loc{}, err
			}
		}
		if blank && len(fc) > 0 && len(rc) > 0 {
			// A hunk that ends the file is judged where it must be:
			// deleting a blank last line leaves its other lines in
			// place, found as its new lines, but only the old ones end
			// the file.
			fc, rc = a.anchored(fc, fwd, rc, rev)
		}
		if blank && len(fc) > 0 && len(rc) > 0 {
			// Blank lines added or deleted beside blank lines: the new
			// lines found around the old ones say nothing either way.
			e := a.ambiguous(fwd, append(fc, rc...), "")
			e.Msg = fmt.Sprintf("its changed lines are blank, and the file holds both its old lines (line %d) and its new lines (line %d) %s: whether it is already applied cannot be told; add context lines with text",
				fc[0].region+fc[0].lead+1, rc[0].region+rc[0].lead+1, stepWhy(step))
			return loc{}, e
		}
		fc, rc = dropInner(fc, fwd, rc, rev), dropInner(rc, rev, fc, fwd)
		if len(fc) > 0 && len(rc) > 0 {
			fc, rc = a.anchored(fc, fwd, rc, rev)
		}
		if len(fc) > 0 && len(rc) > 0 && step == stepExact && hintF >= 0 && !a.adds(fwd.index) {
			// A hunk that only deletes, its old lines exactly where its
			// header says and its new lines only elsewhere: its new
			// lines are nothing but its context, and context found
			// elsewhere says nothing about the deletion being made
			// (repeated text around it, as in a list of alike items).
			// Applied where the header points, as git apply does. A
			// hunk that adds lines stays refused: its added lines found
			// elsewhere may be the change made to another copy.
			at := func(cs []cand, hint int) []cand {
				var out []cand
				for _, c := range cs {
					if c.region == hint || c.region == hint-delta {
						out = append(out, c)
					}
				}
				return out
			}
			if af, ar := at(fc, hintF), at(rc, hintR); len(af) == 1 && len(ar) == 0 {
				a.warnf("hunk %d's new lines are also at line %d; its old lines are where its header points, at line %d: applied there",
					fwd.index+1, rc[0].region+rc[0].lead+1, af[0].region+af[0].lead+1)
				fc, rc = af, nil
			}
		}
		switch {
		case len(fc) > 0 && len(rc) > 0:
			e := a.ambiguous(fwd, append(fc, rc...), "")
			e.Msg = fmt.Sprintf("its old lines are at line %d and its new lines at line %d %s: the file may already be changed; add context lines that make it unique",
				fc[0].region+fc[0].lead+1, rc[0].region+rc[0].lead+1, stepWhy(step))
			return loc{}, e
		case len(rc) > 1:
			e := a.ambiguous(rev, rc, stepWhy(step))
			e.Msg = "its new lines (the diff already applied) " + e.Msg
			return loc{}, e
		case len(rc) == 1:
			if e := a.rival(rev, rc[0], step); e != nil {
				e.Msg = "its new lines (the diff already applied) " + e.Msg
				return loc{}, e
			}
			if e := a.appliedOnly(fwd, rc[0], step, hintF); e != nil {
				return loc{}, e
			}
			return a.mk(rev, rc[0], step), nil
		case len(fc) == 0:
			continue
		case len(fc) > 1 && step == stepExact:
			best, e := a.pick(fwd, fc, hintF, delta)
			if e != nil {
				return loc{}, e
			}
			return a.mk(fwd, best, step), nil
		case len(fc) > 1:
			return loc{}, a.ambiguous(fwd, fc, stepWhy(step))
		}
		c := fc[0]
		if e := a.rival(fwd, c, step); e != nil {
			return loc{}, e
		}
		switch {
		case step == stepExact:
		case step == stepRstrip || step == stepFields:
			a.warnf("hunk %d matched only with whitespace ignored", fwd.index+1)
		case step == stepIndent:
			a.warnf("hunk %d matched only with indentation ignored; its added lines are indented as the file is there (%s)", fwd.index+1, c.ind.describe())
		case c.skip > 0:
			a.warnf("hunk %d matched with its context line %q, which the file does not hold there, ignored", fwd.index+1, textcut.Clip(fwd.old[c.skip-1], 60, "…"))
		case c.gap > 0:
			a.warnf("hunk %d matched with line %d of the file, which the hunk leaves out, taken as context", fwd.index+1, c.region+c.gap)
		default:
			a.warnf("hunk %d matched with %s ignored", fwd.index+1, plural(step-stepFields, "context line"))
		}
		return a.mk(fwd, c, step), nil
	}
	if len(away) > 0 {
		return loc{}, a.unpinned(fwd, pin, away[0])
	}
	return loc{}, a.notFound(fwd, hintF)
}

// adds reports whether hunk i adds any line.
func (a *applier) adds(i int) bool {
	return slices.ContainsFunc(a.f.Hunks[i].Lines, func(l Line) bool { return l.Op == Insert })
}

// appliedOnly checks a hunk's new lines found at step (at c) against its
// old lines at the looser steps: already applied is the new lines found
// and the old lines not (a match of the old lines however loose says the
// change may be still to make). From an exact or whitespace match of the
// new lines that is taken as settled, as it always was; from a looser
// one, a looser reading of the old lines makes the hunk ambiguous.
func (a *applier) appliedOnly(fwd *side, c cand, step, hint int) *Error {
	if step < stepFuzz1 {
		return nil
	}
	for later := step + 1; later < steps; later++ {
		lc, err := a.candidates(fwd, later, hint)
		if err != nil {
			return err
		}
		if len(lc) > 0 {
			e := a.ambiguous(fwd, append(lc, c), "")
			e.Msg = fmt.Sprintf("its new lines are at line %d %s, and its old lines at line %d %s: the file may already be changed; add context lines that make it unique",
				c.region+c.lead+1, stepWhy(step), lc[0].region+lc[0].lead+1, stepWhy(later))
			return e
		}
	}
	return nil
}

func stepWhy(step int) string {
	switch step {
	case stepExact:
		return "exactly"
	case stepRstrip, stepFields:
		return "when whitespace is ignored"
	case stepIndent:
		return "when indentation is ignored"
	case stepFuzz1:
		return "with one context line ignored, missing or extra"
	}
	return fmt.Sprintf("with %s ignored", plural(step-stepFields, "context line"))
}

// Two exact copies of a hunk are told apart by its header's line only
// when the header points exactly at one of them, or when one copy is far
// nearer: at distance d1 from the header's line against d2 for the next,
// d2 >= tieRatio*d1 + tieSlack. A header line is a model's count of the
// lines of the file it saw: off by a few lines when it miscounted, by any
// amount when the file changed above the hunk since. The nearer copy is
// taken only when the other would need the header to be wrong four times
// as much plus a hunk's usual height (three context lines each side and a
// change or two): a header off by a hunk's height, the commonest large
// miscount, never sends a hunk to a copy a hunk's height away, and a
// closer call is refused, naming both places, for context to settle.
const (
	tieRatio = 4
	tieSlack = 8
)

// pick chooses among exact copies cands of s's old lines (more than one),
// by the header's line hint (-1 when there is none) or refuses the hunk
// as ambiguous. The header points exactly at a copy when the copy is at
// its line as written or moved by delta, the offset the hunks before it
// were found at. Failing that, a copy is chosen when it is far nearer
// the header (see tieRatio), or when it is the nearest by more than a
// line and the only one where a diff tool's hunk of this shape must be:
// a hunk with context before its changes and none after ends the file.
func (a *applier) pick(s *side, cands []cand, hint, delta int) (cand, *Error) {
	if hint < 0 {
		return cand{}, a.ambiguous(s, cands, "with no line number to choose between them")
	}
	var at []cand
	for _, c := range cands {
		if c.region == hint || c.region == hint-delta {
			at = append(at, c)
		}
	}
	if len(at) > 1 {
		e := a.ambiguous(s, at, "")
		e.Msg = fmt.Sprintf("matches exactly at lines %s, one where its header says and one where the offset of the hunks before it puts it: add context lines that make it unique", e.lineList())
		return cand{}, e
	}
	best, d1, d2 := nearest2(cands, hint)
	// A copy where a diff tool would put a hunk of this shape (one
	// without trailing context at the end of the file) is chosen only
	// when the header is nearer it than any other copy by more than a
	// line: a header midway between two copies (off by the rounding of
	// a midpoint) points at neither, and the shape alone does not
	// decide, a model drops trailing context as readily as leading.
	shaped, bestShaped := 0, false
	for _, c := range cands {
		if a.shaped(s, c) {
			shaped++
			bestShaped = bestShaped || c.same(best)
		}
	}
	switch {
	case len(at) == 1:
		best = at[0]
	case shaped == 1 && bestShaped && d2 > d1+1:
	case shaped == 0 && d2 >= tieRatio*d1+tieSlack:
	default:
		e := a.ambiguous(s, cands, "")
		e.Msg = fmt.Sprintf("matches exactly at lines %s, and its header's line %d is not far nearer one of them: add context lines that make it unique", e.lineList(), s.start)
		return cand{}, e
	}
	var others []string
	for _, c := range cands {
		if !c.same(best) {
			others = append(others, strconv.Itoa(c.region+c.lead+1))
		}
	}
	a.warnf("hunk %d also matches at line %s; placed at line %d, where its header points", s.index+1, andList(others), best.region+best.lead+1)
	return best, nil
}

// nearest2 is the candidate nearest hint, its distance and the distance
// of the next nearest.
func nearest2(cands []cand, hint int) (best cand, d1, d2 int) {
	d1, d2 = -1, -1
	for _, c := range cands {
		switch d := abs(c.region - hint); {
		case d1 < 0 || d < d1:
			best, d1, d2 = c, d, d1
		case d2 < 0 || d < d2:
			d2 = d
		}
	}
	return best, d1, d2
}

// shaped reports whether c is where a diff tool puts a hunk of s's shape:
// one with context before its changes and none after at the end of the
// file, one with context after and none before at its start.
func (a *applier) shaped(s *side, c cand) bool {
	b, e := c.span(s)
	switch {
	case s.lead > 0 && s.trail == 0:
		return e == a.t.n
	case s.lead == 0 && s.trail > 0:
		return b == 0
	}
	return false
}

// pinning is where a hunk that opens with a pure insertion and has fewer
// context lines before it than after must sit: at the line its header
// says (the start of the file for line 1, or 0), corrected by the offset
// the hunks before it were found at, or at the start of the file, the one
// place where a diff tool writes such a hunk (it runs out of lines
// before the change there and nowhere else). Such a hunk's insertion is
// placed by the little context before it, or by none; found anywhere
// else by the context after it, it could go anywhere that context
// repeats. Without a header, only an exact or whitespace match places
// it.
// pinSlack is how far after its header's line a pinned hunk may be found
// when its lines are at that one place in the file: the context line a
// model drops before an insertion while keeping the header. Two lines
// off is as likely a wrong header as two dropped lines, and is refused.
const pinSlack = 1

type pinning struct {
	on    bool
	at    int  // the 0-based target line where the old lines start; -1 without a header
	start bool // the header names the start of the file
}

func pinOf(s *side, hint int) pinning {
	switch {
	case !s.insFirst || s.lead >= s.trail:
		return pinning{}
	case !s.numbered:
		return pinning{on: true, at: -1}
	case s.start <= 1:
		return pinning{on: true, at: 0, start: true}
	}
	return pinning{on: true, at: hint}
}

// allows reports whether the pin allows candidate c found at step.
func (p pinning) allows(c cand, step int) bool {
	switch {
	case !p.on:
		return true
	case p.at < 0:
		return step <= stepFields
	}
	return c.region == p.at || c.region == 0
}

// split divides the candidates found at step into those where the pin
// allows and the others.
func (p pinning) split(cands []cand, step int) (in, out []cand) {
	for _, c := range cands {
		if p.allows(c, step) {
			in = append(in, c)
		} else {
			out = append(out, c)
		}
	}
	return in, out
}

// unpinned is the error of a pinned hunk s found only away from its pin,
// at c.
func (a *applier) unpinned(s *side, p pinning, c cand) *Error {
	at := c.region + c.lead + 1
	e := &Error{Code: CodeNeedsContext, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos, FileLine: at}
	why := "it has less context before its insertion than after"
	switch {
	case p.start:
		e.Msg = fmt.Sprintf("its header puts it at the start of the file and %s, so it goes only there; but its lines are at line %d, and line 1 is %q: add the lines before them as context, or correct the header",
			why, at, textcut.Clip(string(a.t.line(0)), 60, "…"))
	case p.at < 0:
		e.Msg = fmt.Sprintf("it has no line numbers and %s, so only its exact lines place it; they are at line %d only loosely: add context lines before the insertion", why, at)
	default:
		e.Msg = fmt.Sprintf("%s, so it goes only where its header says, line %d; but its lines are at line %d: correct the header's line number or add context lines before the insertion", why, p.at+1, at)
	}
	return e
}

// dropInner drops the candidates of s that lie strictly inside a
// candidate of other.
func dropInner(cs []cand, s *side, others []cand, other *side) []cand {
	if len(others) == 0 {
		return cs
	}
	return slices.DeleteFunc(slices.Clone(cs), func(c cand) bool {
		b, e := c.span(s)
		for _, o := range others {
			ob, oe := o.span(other)
			if ob <= b && e <= oe && oe-ob > e-b {
				return true
			}
		}
		return false
	})
}

// anchored settles a hunk found both ways by where it must be: a hunk
// with leading context and no trailing context is at the end of the file
// (a diff tool stops its context there and nowhere else), one with
// trailing context, no leading context and a header naming the first
// line is at its start. The candidates of both directions in that place
// are kept, when there are any.
func (a *applier) anchored(fc []cand, fwd *side, rc []cand, rev *side) ([]cand, []cand) {
	var keep func(c cand, s *side) bool
	switch {
	case fwd.lead > 0 && fwd.trail == 0:
		keep = func(c cand, s *side) bool { _, e := c.span(s); return e == a.t.n && c.trail == 0 }
	case fwd.lead == 0 && fwd.trail > 0 && fwd.numbered && fwd.start <= 1 && rev.start <= 1:
		keep = func(c cand, s *side) bool { b, _ := c.span(s); return b == 0 && c.lead == 0 }
	default:
		return fc, rc
	}
	f := slices.DeleteFunc(slices.Clone(fc), func(c cand) bool { return !keep(c, fwd) })
	r := slices.DeleteFunc(slices.Clone(rc), func(c cand) bool { return !keep(c, rev) })
	if len(f)+len(r) == 0 {
		return fc, rc
	}
	return f, r
}

// mk is the loc of candidate c of s, matched at step.
func (a *applier) mk(s *side, c cand, step int) loc {
	m := Match{Pass: PassExact, Line: c.region + c.lead + 1}
	switch step {
	case stepRstrip, stepFields:
		m.Pass = PassWhitespace
	case stepFuzz1, stepFuzz2:
		m.Pass, m.Fuzz = PassFuzz, step-stepFields
		if c.skip > 0 || c.gap > 0 {
			m.Pass, m.Fuzz = PassInner, 0
		}
	case stepIndent:
		m.Pass = PassIndent
	}
	if s.numbered {
		m.Offset = c.region - s.headerLine()
		if m.Pass == PassExact && m.Offset != 0 {
			m.Pass = PassOffset
		}
	}
	return loc{cand: c, match: m, reverse: s.reverse}
}

// candidates is where s's old lines match at step, nearest hint first.
// Passes looser than exact, and every pass of a reversed hunk, need
// enough text to be sure of a match.
func (a *applier) candidates(s *side, step, hint int) ([]cand, *Error) {
	if (step > stepExact || s.reverse) && info(s.old) < minInfo {
		return nil, nil
	}
	switch step {
	case stepExact:
		return a.scan(s, levelExact, cand{}, hint, nil, maxCands)
	case stepRstrip, stepFields:
		return a.scan(s, step-stepRstrip+levelRstrip, cand{}, hint, nil, 2)
	case stepIndent:
		// Unique once indentation is ignored, then at the file's depths.
		found, err := a.scan(s, levelIndent, cand{}, hint, nil, 2)
		if err != nil || len(found) != 1 {
			return found, err
		}
		if found[0].ind = a.reindentAt(s, found[0]); found[0].ind == nil {
			return nil, nil
		}
		return found, nil
	}
	found, err := a.fuzzy(s, step-stepFields, hint)
	if err != nil {
		return nil, err
	}
	if step == stepFuzz1 {
		in, err := a.inner(s, hint)
		if err != nil {
			return nil, err
		}
		found = append(found, in...)
	}
	return a.settle(s, found, step), nil
}

// settle reduces the candidates of a fuzz step to one per place (the
// target lines they change), and when there is one place, to the
// candidate that holds there: an edge-trimmed one whose ignored lines
// fit, else an inner one, either preferably where the hunk's pin allows;
// none when neither holds. The places are counted before the ignored
// lines are judged, so a place they do not fit still makes the hunk
// ambiguous.
func (a *applier) settle(s *side, found []cand, step int) []cand {
	if len(found) == 0 {
		return nil
	}
	ops, insAt := a.oldOps(s)
	var places []cand
	var sigs [][]int
	for _, c := range found {
		sig := changeSig(s, c, ops, insAt)
		if !slices.ContainsFunc(sigs, func(o []int) bool { return slices.Equal(o, sig) }) {
			places, sigs = append(places, c), append(sigs, sig)
		}
	}
	if len(places) > 1 {
		return places
	}
	var fit, inner []cand
	for _, c := range found {
		switch {
		case c.skip > 0 || c.gap > 0:
			inner = append(inner, c)
		case a.dropsFit(s, &c):
			fit = append(fit, c)
		}
	}
	held := append(fit, inner...)
	for _, c := range held {
		if s.reverse || a.pin.allows(c, step) {
			return []cand{c}
		}
	}
	if len(held) > 0 {
		return held[:1]
	}
	return nil
}

// fuzzy is where s's old lines match with up to fuzz context lines
// ignored at each edge (and fuzz at one of them at least), each place
// once per number of lines ignored at each edge.
func (a *applier) fuzzy(s *side, fuzz, hint int) ([]cand, *Error) {
	var found []cand
	for lead := 0; lead <= fuzz; lead++ {
		for trail := 0; trail <= fuzz; trail++ {
			if max(lead, trail) != fuzz || lead > s.lead || trail > s.trail || lead+trail >= len(s.old) ||
				(s.keepLead && lead == s.lead && lead > 0) || (s.keepTrail && trail == s.trail && trail > 0) {
				continue
			}
			if info(s.old[lead:len(s.old)-trail]) < minInfo {
				continue
			}
			// Whitespace collapsed: its matches take in the exact ones.
			cs, err := a.scan(s, levelFields, cand{lead: lead, trail: trail}, hint, nil, 2)
			if err != nil {
				return nil, err
			}
			found = append(found, cs...)
		}
	}
	return found, nil
}

// nearLines is how far from its place a context line that a loose pass
// ignores may be found and still count as there: a model that left out
// or added a line or two beside it.
const nearLines = 3

// dropsFit reports whether each context line that candidate c of s
// ignores at the hunk's edges is like the line that stands in its place,
// or is found beside that place. A line the file does not have there,
// nor anything like it, says that the hunk was written for another place
// or another version of the file.
func (a *applier) dropsFit(s *side, c *cand) bool {
	t := &a.t
	fits := func(j int) bool {
		p := c.region + j
		if p < 0 || p >= t.n {
			return false
		}
		a.work++
		if similar(t.line(p), s.old[j]) {
			return true
		}
		for q := max(p-nearLines, 0); q <= min(p+nearLines, t.n-1); q++ {
			a.work++
			if eqLine(levelIndent, t.line(q), s.old[j]) {
				return true
			}
		}
		return false
	}
	for j := 0; j < c.lead; j++ {
		if !fits(j) {
			return false
		}
	}
	for j := len(s.old) - c.trail; j < len(s.old); j++ {
		if !fits(j) {
			return false
		}
	}
	return true
}

// maxSimilar bounds the characters of a line that similar compares.
const maxSimilar = 256

// similar reports whether a line of the target and one of a diff read as
// versions of one line: once whitespace is dropped, one is empty, or the
// characters they share in order (their longest common subsequence) make
// 80% of the shorter, or 60% of both together.
func similar(a []byte, b string) bool {
	x, y := compact(a), compact([]byte(b))
	if len(x) == 0 || len(y) == 0 {
		return true
	}
	l := lcs(x, y)
	return 5*l >= 4*min(len(x), len(y)) || 10*l >= 3*(len(x)+len(y))
}

// compact is s without whitespace, at most maxSimilar bytes of it.
func compact(s []byte) []byte {
	out := make([]byte, 0, min(len(s), maxSimilar))
	for _, c := range s {
		if !isSpace(c) {
			out = append(out, c)
			if len(out) == maxSimilar {
				break
			}
		}
	}
	return out
}

// lcs is the length of the longest common subsequence of x and y.
func lcs(x, y []byte) int {
	prev, cur := make([]int, len(y)+1), make([]int, len(y)+1)
	for i := range x {
		for j := range y {
			switch {
			case x[i] == y[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}

// rival refuses candidate c of s, found at step, when a context line it
// ignores points at another place: a place that holds the line and
// matches the hunk about as well as c does, the text that c matches and
// the other place does not being less than minInfo non-space characters,
// the least text ctxkit places a hunk by. The ignored line may be the
// very line that tells the hunk's place, so neither place is certain. A
// line the target holds in many places tells no place, nor does a blank
// one; counting characters, not lines, keeps braces and blank lines that
// match anywhere from making a rival.
func (a *applier) rival(s *side, c cand, step int) *Error {
	if step < stepFuzz1 || step == stepIndent {
		return nil
	}
	var ignored []int
	for j := 0; j < c.lead; j++ {
		ignored = append(ignored, j)
	}
	for j := len(s.old) - c.trail; j < len(s.old); j++ {
		ignored = append(ignored, j)
	}
	if c.skip > 0 {
		ignored = append(ignored, c.skip-1)
	}
	if len(ignored) == 0 {
		return nil
	}
	score := a.score(s, c)
	for _, j := range ignored {
		if info1(s.old[j]) == 0 {
			continue
		}
		where := c.region + j
		places := a.occurrences(s.old[j], maxCands+1)
		if len(places) > maxCands {
			continue
		}
		for _, q := range places {
			if abs(q-where) <= nearLines {
				continue
			}
			if r := (cand{region: q - j}); a.score(s, r)+minInfo > score {
				line := c.region + c.lead + 1
				e := a.ambiguous(s, []cand{c, r}, "")
				e.Msg = fmt.Sprintf("matches at line %d only %s, and the line it ignores there, %q, is at line %d, where the hunk matches about as well: add context lines that make it unique",
					line, stepWhy(step), textcut.Clip(s.old[j], 60, "…"), q+1)
				return e
			}
		}
	}
	return nil
}

// score counts the non-space characters of the old lines of s that the
// target holds, indentation ignored, at their lines at c.
func (a *applier) score(s *side, c cand) int {
	n := 0
	for j := range s.old {
		p := c.at(j)
		if p < 0 || p >= a.t.n {
			continue
		}
		a.work++
		if eqLine(levelIndent, a.t.line(p), s.old[j]) {
			n += info1(s.old[j])
		}
	}
	return n
}

// occurrences is the target lines equal to text once whitespace is
// collapsed (the indentation as written), stopping after limit of them.
// (The fuzz steps that call it have built the index at that level.)
func (a *applier) occurrences(text string, limit int) []int {
	t := &a.t
	var out []int
	if t.n < indexMin {
		for i := 0; i < t.n && len(out) < limit; i++ {
			a.work++
			if eqLine(levelFields, t.line(i), text) {
				out = append(out, i)
			}
		}
		return out
	}
	for _, k := range lookup(t.index(levelFields), hashLine(levelFields, text)) {
		a.work++
		if i := int(k & lineMask); eqLine(levelFields, t.line(i), text) {
			if out = append(out, i); len(out) == limit {
				break
			}
		}
	}
	return out
}

// inner is where s's old lines match with one context line inside the
// hunk left out (the target does not have it), or with one target line
// between two of them (the hunk left it out). A missing line is never
// allowed where a pure insertion goes (it could go before or after that
// line) nor between two deleted lines.
func (a *applier) inner(s *side, hint int) ([]cand, *Error) {
	ops, insAt := a.oldOps(s)
	var variants []cand
	for k := 1; k+1 < len(s.old); k++ {
		if ops[k] == Context {
			variants = append(variants, cand{skip: k + 1})
		}
	}
	for g := 1; g < len(s.old); g++ {
		if !insAt[g] && (ops[g-1] != Delete || ops[g] != Delete) {
			variants = append(variants, cand{gap: g + 1})
		}
	}
	// Each variant searched on its own, so that none hides another's
	// second place.
	var out []cand
	for _, q := range variants {
		cs, err := a.scan(s, levelFields, q, hint, nil, 2)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	// A context line found extra may instead be a line the file has
	// changed: when the hunk matches somewhere with another line in its
	// place, either reading could be the right one.
	for _, c := range out {
		if c.skip == 0 {
			continue
		}
		alt, err := a.scan(s, levelFields, cand{skip: c.skip, gap: c.skip}, hint, nil, 0)
		if err != nil {
			return nil, err
		}
		if len(alt) > 0 {
			e := a.ambiguous(s, []cand{c, alt[0]}, "")
			e.Msg = fmt.Sprintf("matches at line %d with its context line %q left out, and at line %d with another line in its place: add context lines that make it unique",
				c.region+1, textcut.Clip(s.old[c.skip-1], 60, "…"), alt[0].region+1)
			return nil, e
		}
	}
	return out, nil
}

// oldOps is what each old line of s is (Context or Delete), and where
// the pure insertions of s go: insAt[g] when one goes before old line g
// (g == len(s.old): after the last).
func (a *applier) oldOps(s *side) (ops []Op, insAt []bool) {
	ops = make([]Op, 0, len(s.old))
	insAt = make([]bool, len(s.old)+1)
	ins, del := false, false
	for _, l := range a.f.Hunks[s.index].Lines {
		o := l.Op
		if s.reverse && o != Context {
			o ^= Delete ^ Insert
		}
		switch o {
		case Insert:
			ins = true
		case Delete:
			del = true
			ops = append(ops, Delete)
		default:
			insAt[len(ops)] = insAt[len(ops)] || (ins && !del)
			ins, del = false, false
			ops = append(ops, Context)
		}
	}
	insAt[len(ops)] = insAt[len(ops)] || (ins && !del)
	return ops, insAt
}

// changeSig is the target lines candidate c of s changes: each deleted
// line's, and each pure insertion's place (negated, minus one).
func changeSig(s *side, c cand, ops []Op, insAt []bool) []int {
	var sig []int
	for j := 0; j <= len(s.old); j++ {
		if insAt[j] {
			p := c.region + c.size(s)
			if j < len(s.old) {
				p = c.at(j)
			}
			sig = append(sig, -p-1)
		}
		if j < len(s.old) && ops[j] == Delete {
			sig = append(sig, c.at(j))
		}
	}
	return sig
}

// placeInsertion places a hunk without old lines, which only an empty or
// missing target can take: nothing in a target with lines would confirm
// where the hunk goes, nor show that it is already there.
func (a *applier) placeInsertion(s *side, delta int) (loc, *Error) {
	if a.t.n > 0 {
		return loc{}, &Error{Code: CodeNeedsContext, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos,
			Msg: "the hunk has no context lines and deletes nothing: nothing in the file confirms where it goes; add the lines around it as context"}
	}
	m := Match{Pass: PassExact, Line: 1}
	if s.numbered {
		m.Offset = -s.headerLine()
		if m.Offset != 0 {
			m.Pass = PassOffset
		}
	}
	return loc{match: m}, nil
}

// info counts non-whitespace bytes.
func info(lines []string) int {
	n := 0
	for _, l := range lines {
		n += info1(l)
	}
	return n
}

// info1 counts the non-whitespace bytes of one line.
func info1(l string) int {
	n := 0
	for i := 0; i < len(l); i++ {
		if !isSpace(l[i]) {
			n++
		}
	}
	return n
}

// scan appends to found the candidates where s's old lines match at
// level, nearest hint first (from the start when hint is negative),
// stopping once found holds more than limit entries. q says which old
// lines: without q.lead and q.trail context lines at the edges, without
// old line q.skip-1, with one target line of any content before old line
// q.gap-1. A place already in found is not added again. The candidates
// come from the target's index: the places of the old line the target
// holds least often, each checked line by line.
func (a *applier) scan(s *side, level int, q cand, hint int, found []cand, limit int) ([]cand, *Error) {
	old := s.old[q.lead : len(s.old)-q.trail]
	if q.skip > 0 {
		k := q.skip - 1 - q.lead
		old = append(old[:k:k], old[k+1:]...)
	}
	hole := -1 // the window line the hunk does not hold
	if q.gap > 0 {
		hole = q.gap - 1 - q.lead
	}
	// off is the window line of old line j.
	off := func(j int) int {
		if hole >= 0 && j >= hole {
			return j + 1
		}
		return j
	}
	t := &a.t
	m := len(old)
	w := off(m-1) + 1
	if m == 0 || w > t.n {
		return found, nil
	}
	if s.atEOF && (len(t.src) > 0 && t.src[len(t.src)-1] == '\n') == s.noEOL {
		return found, nil // the target's final newline is not the one the hunk expects
	}
	full := q.size(s)
	// Candidate places: in a short target every line, otherwise the
	// places of the old line the target holds least often.
	anchor, cnt := 0, t.n
	pos := func(i int) int { return i }
	if t.n >= indexMin {
		keys := t.index(level)
		anchor = -1
		var at []uint64
		for j, l := range old {
			k := lookup(keys, hashLine(level, l))
			if anchor < 0 || len(k) < len(at) {
				anchor, at = j, k
			}
			if len(k) == 0 {
				return found, nil
			}
		}
		cnt = len(at)
		pos = func(i int) int { return int(at[i] & lineMask) }
	}
	// Outward from the hint.
	h := max(hint, 0) + q.lead + off(anchor)
	hi := sort.Search(cnt, func(i int) bool { return pos(i) >= h })
	lo := hi - 1
	for lo >= 0 || hi < cnt {
		var p int
		if hi < cnt && (lo < 0 || pos(hi)-h <= h-pos(lo)) {
			p = pos(hi)
			hi++
		} else {
			p = pos(lo)
			lo--
		}
		start := p - off(anchor)
		region := start - q.lead
		if start < 0 || start+w > t.n || (s.atEOF && region+full != t.n) {
			continue
		}
		ok := true
		for j := 0; j < m && ok; j++ {
			a.work++
			ok = eqLine(level, t.line(start+off(j)), old[j])
		}
		if a.work > hunkBudget {
			return nil, &Error{Code: CodeTooLarge, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos,
				Msg: fmt.Sprintf("the search gave up after %d line comparisons: the file holds each of the hunk's lines in too many places (its rarest, %q, in %d); add context lines found in fewer places", hunkBudget, textcut.Clip(old[anchor], 60, "…"), cnt)}
		}
		if !ok {
			continue
		}
		c := q
		c.region = region
		if !slices.ContainsFunc(found, c.same) {
			found = append(found, c)
			if len(found) > limit {
				break
			}
		}
	}
	return found, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (a *applier) warnf(format string, args ...any) {
	a.warns = append(a.warns, fmt.Sprintf(format, args...))
}

// ambiguous is the error of s matching at each of cands, lines listed in
// the target's order.
func (a *applier) ambiguous(s *side, cands []cand, why string) *Error {
	var lines []int
	for _, c := range cands {
		if l := c.region + c.lead + 1; !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	e := &Error{Code: CodeAmbiguous, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos, Candidates: lines}
	e.Msg = fmt.Sprintf("matches at lines %s %s: add context lines that make it unique", e.lineList(), why)
	return e
}

// lineList is e.Candidates as "3, 9 and 20".
func (e *Error) lineList() string {
	strs := make([]string, len(e.Candidates))
	for i, l := range e.Candidates {
		strs[i] = strconv.Itoa(l)
	}
	return andList(strs)
}

// closest is the target line where the most of s's old lines match at
// level, the nearest hint among equals, and how many match there.
func (a *applier) closest(s *side, level, hint int) (best, bestN int) {
	t := &a.t
	best, bestN = 0, -1
	for p := 0; p < t.n && a.work <= hunkBudget; p++ {
		n := 0
		for j := 0; j < len(s.old) && p+j < t.n; j++ {
			a.work++
			if eqLine(level, t.line(p+j), s.old[j]) {
				n++
			}
		}
		if n > bestN || (n == bestN && hint >= 0 && abs(p-hint) < abs(best-hint)) {
			best, bestN = p, n
		}
	}
	return best, bestN
}

// notFound describes the region of the target most like s's old lines,
// and when every old line is there once whitespace or indentation is
// ignored, why that match could not place the hunk.
func (a *applier) notFound(s *side, hint int) *Error {
	e := &Error{Code: CodeNotFound, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos}
	t := &a.t
	if t.n == 0 {
		e.Msg = fmt.Sprintf("the file is empty or missing, but the hunk expects %s in it", plural(len(s.old), "line"))
		return e
	}
	m := len(s.old)
	best, bestN := a.closest(s, levelFields, hint)
	ignored := "whitespace"
	if bestN < m {
		if ib, ibN := a.closest(s, levelIndent, hint); ibN == m {
			best, bestN, ignored = ib, ibN, "whitespace and indentation"
		}
	}
	e.FileLine = best + 1
	if bestN == m {
		e.Similarity = 1
		if n := info(s.old); n < minInfo {
			e.Msg = fmt.Sprintf("its old lines are at line %d only with %s ignored, and with %s they are too little text to be placed that way (it takes %d): add context lines around the change",
				best+1, ignored, plural(n, "non-space character"), minInfo)
			return e
		}
		if s.atEOF {
			endNL := len(t.src) > 0 && t.src[len(t.src)-1] == '\n'
			switch {
			case best+m != t.n:
				e.Msg = fmt.Sprintf(`its old lines are at line %d, but the diff's "\ No newline at end of file" marker puts them at the end of the file, and there they are not: add the lines after them as context, or drop the marker`, best+1)
			case endNL:
				e.Msg = fmt.Sprintf(`its old lines end the file at line %d, but the diff's "\ No newline at end of file" marker says the file's last line has no final newline, and it has one`, best+1)
			default:
				e.Msg = fmt.Sprintf("its old lines end the file at line %d, but the diff says the file's last line ends with a newline, and it does not", best+1)
			}
			return e
		}
		if ignored != "whitespace" {
			e.Msg = fmt.Sprintf("its old lines are at line %d only with indentation ignored, and their indentation does not map onto the file's there: each line must be at the depth the file has it at, in tabs or in any number of spaces; indent the diff as the file is", best+1)
			return e
		}
		e.Msg = fmt.Sprintf("its old lines are at line %d only with whitespace ignored, and no pass could place them there: add context lines around the change", best+1)
		return e
	}
	if bestN <= 0 {
		e.FileLine = 0
		e.Msg = fmt.Sprintf("none of its %s is in the file: the diff does not fit this file", plural(m, "old line"))
		return e
	}
	e.Similarity = float64(bestN) / float64(m)
	var why string
	for j := 0; j < m; j++ {
		if best+j >= t.n {
			why = fmt.Sprintf("the file ends at line %d, the diff expects %q", t.n, textcut.Clip(s.old[j], 80, "…"))
			break
		}
		if l := t.line(best + j); !eqLine(levelExact, l, s.old[j]) {
			why = fmt.Sprintf("line %d is %q, the diff expects %q", best+j+1, textcut.Clip(string(l), 80, "…"), textcut.Clip(s.old[j], 80, "…"))
			break
		}
	}
	e.Msg = fmt.Sprintf("its old lines are not in the file; the closest region is line %d (similarity %d%%), where %s", best+1, int(e.Similarity*100), why)
	return e
}

// edit replaces del target lines at line at by ins.
type edit struct {
	at, del int
	ins     []Line
	hunk    int
}

// editSet is what the placed hunks do to the target: each hunk's edits and
// the region of the target it covers, with what the output needs to know.
type editSet struct {
	list     []edit   // in the target's order
	regions  [][3]int // start, end, hunk
	insBytes int      // inserted bytes, line endings counted as 2
	newNo    bool     // a "\ No newline" marker on the new side at the end of the file
	oldNo    bool
}

// build applies the placed hunks to the target.
func (a *applier) build(locs []loc) ([]byte, error) {
	es := a.edits(locs)
	if err := a.checkOverlaps(es); err != nil {
		return nil, err
	}
	return a.render(es), nil
}

// edits collects the edits of the hunks placed at locs, sorted by where
// they apply.
func (a *applier) edits(locs []loc) editSet {
	t := &a.t
	es := editSet{regions: make([][3]int, 0, len(locs))} // one per hunk
	for i, l := range locs {
		h := &a.f.Hunks[i]
		lines := h.Lines[l.lead : len(h.Lines)-l.trail]
		cur := l.region + l.lead
		start := cur
		var e *edit
		j := l.lead // the old line ln is, when it is one
		for _, ln := range lines {
			if ln.Op != Insert {
				if l.gap == j+1 {
					cur++ // the target's line that the hunk leaves out
					e = nil
				}
				j++
				if l.skip == j {
					continue // the hunk's context line that the target does not hold
				}
			}
			switch ln.Op {
			case Context:
				cur++
				e = nil
			case Delete, Insert:
				if e == nil {
					es.list = append(es.list, edit{at: cur, hunk: i})
					e = &es.list[len(es.list)-1]
				}
				if ln.Op == Delete {
					e.del++
					cur++
				} else {
					if l.ind != nil {
						ln.Text = l.ind.apply(ln.Text)
					}
					e.ins = append(e.ins, ln)
					es.insBytes += len(ln.Text) + 2
				}
			}
		}
		es.regions = append(es.regions, [3]int{start, cur, i})
		if cur == t.n {
			for _, ln := range lines {
				switch {
				case ln.NoEOL && ln.Op == Insert:
					es.newNo = true
				case ln.NoEOL && ln.Op == Delete:
					es.oldNo = true
				}
			}
		}
	}
	slices.SortStableFunc(es.list, func(x, y edit) int { return cmp.Compare(x.at, y.at) })
	return es
}

// checkOverlaps fails when two hunks change the same lines, or one
// changes lines another needs as context.
func (a *applier) checkOverlaps(es editSet) error {
	edits := es.list
	for i := 1; i < len(edits); i++ {
		p, c := edits[i-1], edits[i]
		if p.at+p.del > c.at || (p.at == c.at && p.del == 0 && c.del == 0 && p.hunk != c.hunk) {
			return a.overlap(c.hunk, p.hunk, c.at)
		}
	}
	// A hunk's context must not be changed by another hunk.
	for _, r := range es.regions {
		k, _ := slices.BinarySearchFunc(edits, r[0], func(e edit, v int) int { return cmp.Compare(e.at+max(e.del, 1), v+1) })
		for ; k < len(edits) && edits[k].at < r[1]; k++ {
			e := edits[k]
			if e.hunk == r[2] {
				continue
			}
			if (e.del > 0 && e.at+e.del > r[0]) || (e.del == 0 && e.at > r[0]) {
				return a.overlap(max(e.hunk, r[2]), min(e.hunk, r[2]), e.at)
			}
		}
	}
	return nil
}

// render is the target with es applied.
func (a *applier) render(es editSet) []byte {
	t := &a.t
	// Inserted lines take the target's line ending, unless the target
	// has none or mixes them and the diff mixes them too: then each line
	// keeps the ending it has in the diff.
	eol, mixed := t.eol()
	perLine := eol == "" || (mixed && a.diffMixesEOL())
	if eol == "" {
		eol = "\n"
	}
	var out []byte
	if need := len(t.src) + es.insBytes + 2; cap(a.buf) >= need {
		out = a.buf[:0]
	} else {
		out = make([]byte, 0, need)
	}
	cur := 0
	copyLines := func(from, to int) {
		if from >= to {
			return
		}
		out = append(out, t.src[t.starts[from]:t.starts[to]]...)
		if out[len(out)-1] != '\n' {
			out = append(out, eol...)
		}
	}
	for _, e := range es.list {
		copyLines(cur, e.at)
		for _, l := range e.ins {
			out = append(out, l.Text...)
			switch {
			case perLine && l.CR:
				out = append(out, '\r', '\n')
			case perLine:
				out = append(out, '\n')
			default:
				out = append(out, eol...)
			}
		}
		cur = e.at + e.del
	}
	copyLines(cur, t.n)
	finalNL := len(t.src) == 0 || t.src[len(t.src)-1] == '\n'
	switch {
	case es.newNo:
		finalNL = false
	case es.oldNo:
		finalNL = true
	}
	if !finalNL && len(out) > 0 {
		out = out[:len(out)-1]
		if len(out) > 0 && out[len(out)-1] == '\r' {
			out = out[:len(out)-1]
		}
	}
	return out
}

func (a *applier) overlap(h1, h2, at int) *Error {
	return &Error{Code: CodeOverlap, Hunk: h1 + 1, Path: hunkPath(h1), Line: a.f.Hunks[h1].Pos, FileLine: at + 1,
		Msg: fmt.Sprintf("changes line %d, which hunk %d also changes or needs as context: merge the two hunks", at+1, h2+1)}
}

// diffMixesEOL reports whether the diff's lines end in both CRLF and LF.
func (a *applier) diffMixesEOL() bool {
	cr, lf := false, false
	for _, h := range a.f.Hunks {
		for _, l := range h.Lines {
			if l.CR {
				cr = true
			} else {
				lf = true
			}
		}
	}
	return cr && lf
}

// changesText reports whether a changed line of hunk i (of any hunk for
// -1) holds more than whitespace.
func (a *applier) changesText(i int) bool {
	for k, h := range a.f.Hunks {
		if i >= 0 && k != i {
			continue
		}
		for _, l := range h.Lines {
			if l.Op != Context && info1(l.Text) > 0 {
				return true
			}
		}
	}
	return false
}

// newContent is what a new-file diff creates.
func (a *applier) newContent() ([]byte, error) {
	b := &applier{t: newTarget(nil, nil), f: a.f}
	locs, errs := b.locateAll()
	if err := firstErr(errs); err != nil {
		return nil, err
	}
	return b.build(locs)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// andList joins "1", "2", "3" as "1, 2 and 3".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// maxIndentWidth is the widest indentation unit, in spaces, that the
// indentation pass considers for a diff.
const maxIndentWidth = 8

// reindent maps a hunk's indentation onto the target's at the place the
// indentation pass found it. A line's depth in the diff is its tabs plus
// its spaces counted in units of width; the same line in the target is
// at that depth in units of unit, and spaces left over (alignment, as in
// "\t * comment") stay as they are.
type reindent struct {
	unit  string // the target's unit there: a tab or some spaces
	width int
}

// apply re-indents an added line to the target's indentation.
func (r *reindent) apply(text string) string {
	n := leadingSpace(text)
	if n == len(text) {
		return "" // a blank line takes no indentation
	}
	d, rem := diffDepth(text[:n], r.width)
	return strings.Repeat(r.unit, d) + strings.Repeat(" ", rem) + text[n:]
}

// describe names the target's unit for a warning.
func (r *reindent) describe() string {
	if r.unit == "\t" {
		return "tabs"
	}
	return plural(len(r.unit), "space")
}

// diffDepth is the depth of a diff line's indentation ws in units of
// width spaces (a tab is one unit), and the spaces left over.
func diffDepth(ws string, width int) (depth, rem int) {
	spaces := 0
	for i := 0; i < len(ws); i++ {
		if ws[i] == '\t' {
			depth++
		} else {
			spaces++
		}
	}
	return depth + spaces/width, spaces % width
}

// fileDepth is the depth of a target line's indentation in units of
// unit, and the spaces left over after tabs (alignment); ok is false when
// the indentation is not made of the unit that way.
func fileDepth(l []byte, unit string) (depth, rem int, ok bool) {
	ws := l[:leadingSpace(l)]
	if unit == "\t" {
		for depth < len(ws) && ws[depth] == '\t' {
			depth++
		}
		for _, c := range ws[depth:] {
			if c != ' ' {
				return 0, 0, false
			}
		}
		return depth, len(ws) - depth, true
	}
	for _, c := range ws {
		if c != ' ' {
			return 0, 0, false
		}
	}
	return len(ws) / len(unit), len(ws) % len(unit), true
}

// reindentAt is how the indentation of s's lines maps onto the target's
// at candidate c (found with indentation ignored), or nil when it does
// not map: for some width of the diff's unit, every non-blank old line
// must be at the depth the target's line is at, with the same spaces
// over. Depths must be equal, not only alike: a hunk written one level
// shallower than the file may have been meant for another block, and in
// some languages the depth is the meaning. Of the widths that map, the
// one leaving the fewest added lines with spaces over is taken, then the
// diff's own unit (the greatest common divisor of its space
// indentation), then the widest.
func (a *applier) reindentAt(s *side, c cand) *reindent {
	b, e := c.span(s)
	unit := a.t.indentUnit(b, e)
	lines := a.f.Hunks[s.index].Lines
	own := 0 // the diff's unit
	for _, l := range lines {
		if n := leadingSpace(l.Text); n < len(l.Text) {
			own = gcd(own, strings.Count(l.Text[:n], " "))
		}
	}
	if unit == "" {
		// The target has no indentation to follow: keep the diff's.
		unit = "\t"
		if own > 0 {
			unit = strings.Repeat(" ", min(own, maxIndentWidth))
		}
	}
	var best *reindent
	var bestKey [3]int
	for width := 1; width <= maxIndentWidth; width++ {
		ok := true
		for j, text := range s.old {
			n := leadingSpace(text)
			if n == len(text) {
				continue
			}
			dd, dr := diffDepth(text[:n], width)
			fd, fr, fok := fileDepth(a.t.line(c.at(j)), unit)
			if !fok || dd != fd || dr != fr {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		rems := 0
		for _, l := range lines {
			if n := leadingSpace(l.Text); l.Op != Context && (l.Op == Insert) != s.reverse && n < len(l.Text) {
				if _, dr := diffDepth(l.Text[:n], width); dr > 0 {
					rems++
				}
			}
		}
		key := [3]int{rems, b2i(width != own), -width}
		if best == nil || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestKey = &reindent{unit: unit, width: width}, key
		}
	}
	return best
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func gcd(x, y int) int {
	for y != 0 {
		x, y = y, x%y
	}
	return x
}

// unitWindow is how many lines around a place indentUnit reads to learn
// the target's indentation there.
const unitWindow = 40

// indentUnit is the indentation unit the target uses at lines b to e: a
// tab or some spaces, or "" when no line of the target is indented.
// Tabs or spaces is what most indented lines of the nearest range that
// has any use: lines b to e, then unitWindow lines around them, then the
// whole target (a file indented with tabs may hold a text indented with
// spaces a few lines away). The number of spaces is the greatest common
// divisor of the widths of the space-indented lines around (or of the
// whole target), or when that is 1 (alignment spaces in the mix) the
// commonest step by which one line's indentation exceeds the line
// before.
func (t *target) indentUnit(b, e int) string {
	ranges := [3][2]int{{b, e}, {max(b-unitWindow, 0), min(e+unitWindow, t.n)}, {0, t.n}}
	tabs := false
	found := false
	for _, r := range ranges {
		nt, ns, _ := t.indentStats(r[0], r[1])
		if nt+ns > 0 {
			tabs, found = nt >= ns, true
			break
		}
	}
	switch {
	case !found:
		return ""
	case tabs:
		return "\t"
	}
	for _, r := range ranges[1:] {
		if _, ns, g := t.indentStats(r[0], r[1]); ns > 0 {
			return strings.Repeat(" ", min(g, 2*maxIndentWidth))
		}
	}
	return " " // not reached: the ranges hold a space-indented line
}

// indentStats counts the lines from b to e indented with a tab and with
// spaces, and gives the spaces' unit (see indentUnit).
func (t *target) indentStats(b, e int) (tabs, spaced, unit int) {
	prev := 0
	var steps [maxIndentWidth + 1]int
	for i := b; i < e; i++ {
		l := t.line(i)
		n := leadingSpace(l)
		if n == len(l) {
			continue
		}
		w := 0
		for w < n && l[w] == ' ' {
			w++
		}
		switch {
		case n > 0 && l[0] == '\t':
			tabs++
		case w > 0:
			spaced++
			unit = gcd(unit, w)
		}
		if d := w - prev; d > 0 && d <= maxIndentWidth {
			steps[d]++
		}
		prev = w
	}
	if unit == 1 {
		for d := 2; d <= maxIndentWidth; d++ {
			if steps[d] > steps[unit] {
				unit = d
			}
		}
	}
	return tabs, spaced, unit
}

// indentNote is what the old lines of a diff, against the target lines
// they were placed on, say about the diff's indentation: the widths of
// the runs of spaces it writes for one of the target's tabs, and the runs
// of the target's spaces it writes as one tab.
type indentNote struct {
	spacesPerTab map[int]bool
	tabAsSpaces  map[int]bool
	// tabsAgree and spacesAgree say that an old line indented with tabs
	// (with spaces) is indented exactly as the target's line.
	tabsAgree, spacesAgree bool
}

// learnIndent reads the diff's indentation from every hunk placed forward:
// each indented old line beside the target's line it stands for.
func (a *applier) learnIndent(locs []loc, errs []*Error) indentNote {
	n := indentNote{spacesPerTab: map[int]bool{}, tabAsSpaces: map[int]bool{}}
	for i := range locs {
		if errs[i] != nil || locs[i].reverse {
			continue
		}
		if ind := locs[i].ind; ind != nil && ind.unit == "\t" && ind.width > 1 {
			n.spacesPerTab[ind.width] = true
		}
		j := -1 // the old line l is
		for _, l := range a.f.Hunks[i].Lines {
			if l.Op == Insert {
				continue
			}
			j++
			text := l.Text
			at := locs[i].at(j)
			if at < 0 || at >= a.t.n {
				continue
			}
			dw := text[:leadingSpace(text)]
			fl := a.t.line(at)
			fw := string(fl[:leadingSpace(fl)])
			// Agreement is taken from context lines only: a deleted line
			// may have been copied from the file where the lines written
			// around it were not.
			if l.Op == Context && dw != "" && dw == fw && len(dw) < len(text) {
				if dw[0] == '\t' {
					n.tabsAgree = true
				} else {
					n.spacesAgree = true
				}
			}
			if dw == "" || fw == "" || dw == fw || len(dw) == len(text) || len(fw) == len(fl) {
				continue
			}
			ft, fs := strings.Count(fw, "\t"), strings.Count(fw, " ")
			dt, ds := strings.Count(dw, "\t"), strings.Count(dw, " ")
			switch {
			case dt == 0 && ft > 0 && strings.TrimLeft(fw, "\t") == strings.Repeat(" ", fs) && ds > fs && (ds-fs)%ft == 0:
				n.spacesPerTab[(ds-fs)/ft] = true
			case ds == 0 && fs > 0 && ft == 0 && fs%dt == 0:
				n.tabAsSpaces[fs/dt] = true
			}
		}
	}
	return n
}

// indentAll gives every hunk placed forward by a pass other than the
// indentation pass the same rule as that pass: added lines indented
// against the target's convention at their place (spaces where it indents
// with tabs, tabs where it indents with spaces) are re-indented to it,
// depth for depth, by the mapping the diff's old lines show against the
// target's. A hunk whose foreign indentation has no such mapping (no
// indented old line differs from the target's, or they disagree), or
// whose mapping leaves spaces over, is refused: mixed indentation is
// never written.
func (a *applier) indentAll(locs []loc, errs []*Error) {
	var note *indentNote
	var s side
	for i := range locs {
		if errs[i] != nil || locs[i].reverse {
			continue
		}
		if ind := locs[i].ind; ind != nil {
			// Placed by the indentation pass: its mapping must leave no
			// added line opening with spaces where the file has tabs.
			for _, l := range a.f.Hunks[i].Lines {
				if w := leadingSpace(l.Text); l.Op == Insert && ind.unit == "\t" && w > 0 && w < len(l.Text) && ind.apply(l.Text)[0] == ' ' {
					errs[i] = &Error{Code: CodeAmbiguous, Hunk: i + 1, Path: hunkPath(i), Line: a.f.Hunks[i].Pos, FileLine: locs[i].match.Line,
						Msg: fmt.Sprintf("its added line %q is indented with %d spaces, less than the diff's %s per tab, where the file indents with tabs: write the added lines with the file's indentation",
							textcut.Clip(l.Text, 60, "…"), w, plural(ind.width, "space"))}
					break
				}
			}
			continue
		}
		a.side(&s, i, false, s.old)
		b, e := locs[i].span(&s)
		unit := a.t.indentUnit(b, e)
		if unit == "" {
			continue
		}
		lo, hi := max(b-unitWindow, 0), min(e+unitWindow, a.t.n)
		tabs, spaced, _ := a.t.indentStats(lo, hi)
		foreign := func(ws string) bool {
			if unit == "\t" {
				return ws[0] == ' '
			}
			return strings.Contains(ws, "\t")
		}
		var odd []int // diff lines of added lines indented against the target
		for j, l := range a.f.Hunks[i].Lines {
			if w := leadingSpace(l.Text); l.Op == Insert && w > 0 && w < len(l.Text) && foreign(l.Text[:w]) {
				odd = append(odd, j)
			}
		}
		if len(odd) == 0 {
			continue
		}
		if note == nil {
			nn := a.learnIndent(locs, errs)
			note = &nn
		}
		learnt := note.spacesPerTab
		if unit != "\t" {
			learnt = note.tabAsSpaces
		}
		h := &a.f.Hunks[i]
		first := h.Lines[odd[0]].Text
		fail := func(why string) {
			errs[i] = &Error{Code: CodeAmbiguous, Hunk: i + 1, Path: hunkPath(i), Line: h.Pos, FileLine: b + 1,
				Msg: fmt.Sprintf("its added line %q is indented with %s where the file indents with %s at line %d, and %s: write the added lines with the file's indentation",
					textcut.Clip(first, 60, "…"), map[bool]string{true: "tabs", false: "spaces"}[unit != "\t"], (&reindent{unit: unit}).describe(), b+1, why)}
		}
		if len(learnt) == 0 {
			// Nothing maps the diff's indentation onto the target's. When
			// the diff's old lines are indented as the target's, its
			// added lines are as meant (a raw string, an aligned
			// continuation); so they may be where the target mixes tabs
			// and spaces. Elsewhere they cannot be left mixed.
			if (unit == "\t" && (spaced > 0 || note.tabsAgree)) || (unit != "\t" && (tabs > 0 || note.spacesAgree)) {
				continue
			}
			fail("no indented line of the diff's context shows how its indentation maps onto the file's")
			continue
		}
		if len(learnt) > 1 {
			fail("the diff's context lines map its indentation onto the file's in more than one way")
			continue
		}
		var w int
		for k := range learnt {
			w = k
		}
		r := &reindent{unit: unit, width: w}
		if unit != "\t" {
			// A tab stands for w of the target's spaces; spaces stay.
			r = &reindent{unit: strings.Repeat(" ", w), width: 1 << 30}
		}
		for _, j := range odd {
			text := h.Lines[j].Text
			ws := text[:leadingSpace(text)]
			if unit == "\t" {
				if _, rem := diffDepth(ws, w); rem > 0 {
					first = text
					fail(fmt.Sprintf("its %d leading spaces are not a whole number of the diff's %s per tab", strings.Count(ws, " "), plural(w, "space")))
					break
				}
			} else if strings.TrimLeft(ws, "\t") != "" && strings.TrimRight(ws, " ") != strings.Repeat("\t", strings.Count(ws, "\t")) {
				first = text
				fail("its indentation mixes tabs and spaces")
				break
			}
		}
		if errs[i] != nil {
			continue
		}
		locs[i].ind = r
		a.warnf("hunk %d's added lines were indented against the file's convention; re-indented to %s", i+1, r.describe())
	}
}
