package patch

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
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
	a := &applier{t: newTarget(src), f: f}
	res := &Result{Hunks: make([]HunkResult, len(f.Hunks))}
	if f.IsNew() && len(src) > 0 {
		// A new-file diff is already applied only when the file holds
		// exactly what it creates.
		out, err := a.newContent()
		if err != nil || !bytes.Equal(out, src) {
			e := &Error{Code: CodeNotFound, Hunk: 1, Path: hunkPath(0), Line: f.Hunks[0].Pos, Msg: "the diff creates the file, but it exists with other content"}
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
	fwd, rev, failed := 0, 0, 0
	for i := range locs {
		switch {
		case errs[i] != nil:
			failed++
		case locs[i].reverse:
			rev++
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
	case failed == 0 && fwd == 0:
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
		if e == nil && locs[i].reverse {
			e = &Error{Code: CodePartial, Hunk: i + 1, Path: hunkPath(i), Line: f.Hunks[i].Pos, FileLine: locs[i].match.Line,
				Msg: fmt.Sprintf("already applied (its new lines are at line %d) while other hunks are not: the file is partly changed", locs[i].match.Line)}
			if partial == nil {
				partial = e
			}
		} else if e != nil && first == nil {
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
}

func newTarget(src []byte) target {
	n := bytes.Count(src, []byte{'\n'})
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	starts := make([]int32, 0, n+1)
	for off := 0; off < len(src); {
		starts = append(starts, int32(off))
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	starts = append(starts, int32(len(src)))
	return target{src: src, starts: starts, n: n}
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
	if string(a[:i]) != b[:j] {
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
	if level == levelFields {
		i = leadingSpace(s)
		for k := 0; k < i; k++ {
			h = (h ^ uint64(s[k])) * prime
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if level == levelFields && isSpace(c) {
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
	keys := make([]uint64, t.n)
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
	// region is the 0-based target line where the untrimmed old lines start.
	region      int
	lead, trail int
	match       Match
	// reverse says that the hunk's new lines were found, not its old
	// ones: the hunk is already applied.
	reverse bool
}

// cand is a place where a side's old lines match, without lead and trail
// context lines.
type cand struct{ region, lead, trail int }

// span is the target lines a candidate of s matched.
func (c cand) span(s *side) (int, int) {
	return c.region + c.lead, c.region + len(s.old) - c.trail
}

type applier struct {
	t     target
	f     *File
	work  int // line comparisons made for the current hunk
	warns []string
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
	for j, l := range h.Lines {
		o := op(j)
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

// Search steps, from the strictest to the loosest: the fuzz steps ignore
// one, then two context lines per side.
const (
	stepExact = iota
	stepRstrip
	stepFields
	stepFuzz1
	stepFuzz2
	steps
)

// locate places hunk fwd (rev is the same hunk reversed). At each step,
// from exact to two context lines ignored, it looks for the old lines and
// for the new lines (the hunk already applied), and stops at the first
// step where either is found: a looser match in one direction never wins
// over a stricter one in the other. Found both ways at one step, the hunk
// is ambiguous, unless one match lies inside the other (the lines of an
// insertion's context, found inside the hunk's new lines, are no sign
// that it is not applied). Already applied is believed only from a
// unique match with enough text to be sure of it.
func (a *applier) locate(fwd, rev *side, delta int) (loc, *Error) {
	a.work = 0
	if len(fwd.old) == 0 {
		return a.placeInsertion(fwd, delta)
	}
	hintF, hintR := -1, -1
	if fwd.numbered {
		hintF, hintR = fwd.headerLine()+delta, rev.headerLine()+delta
	}
	for step := range steps {
		fc, err := a.candidates(fwd, step, hintF)
		if err != nil {
			return loc{}, err
		}
		var rc []cand
		if len(rev.old) > 0 { // a hunk without new lines proves nothing applied
			if rc, err = a.candidates(rev, step, hintR); err != nil {
				return loc{}, err
			}
		}
		fc, rc = dropInner(fc, fwd, rc, rev), dropInner(rc, rev, fc, fwd)
		if len(fc) > 0 && len(rc) > 0 {
			fc, rc = a.anchored(fc, fwd, rc, rev)
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
			return a.mk(rev, rc[0], step), nil
		case len(fc) == 0:
			continue
		case len(fc) > 1 && step == stepExact:
			best, tie := nearest(fc, hintF)
			if hintF < 0 || tie {
				return loc{}, a.ambiguous(fwd, fc, "with no line number to choose between them")
			}
			var others []string
			for _, c := range fc {
				if c.region != best.region {
					others = append(others, strconv.Itoa(c.region+1))
				}
			}
			a.warnf("hunk %d also matches at line %s; placed at line %d, nearest its header", fwd.index+1, strings.Join(others, ", "), best.region+1)
			return a.mk(fwd, best, step), nil
		case len(fc) > 1:
			return loc{}, a.ambiguous(fwd, fc, stepWhy(step))
		}
		switch step {
		case stepExact:
		case stepRstrip, stepFields:
			a.warnf("hunk %d matched only with whitespace ignored", fwd.index+1)
		default:
			a.warnf("hunk %d matched with %s ignored", fwd.index+1, plural(step-stepFields, "context line"))
		}
		return a.mk(fwd, fc[0], step), nil
	}
	return loc{}, a.notFound(fwd, hintF)
}

func stepWhy(step int) string {
	switch step {
	case stepExact:
		return "exactly"
	case stepRstrip, stepFields:
		return "when whitespace is ignored"
	}
	return fmt.Sprintf("with %s ignored", plural(step-stepFields, "context line"))
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
	switch {
	case step == stepRstrip || step == stepFields:
		m.Pass = PassWhitespace
	case step >= stepFuzz1:
		m.Pass, m.Fuzz = PassFuzz, step-stepFields
	}
	if s.numbered {
		m.Offset = c.region - s.headerLine()
		if m.Pass == PassExact && m.Offset != 0 {
			m.Pass = PassOffset
		}
	}
	return loc{region: c.region, lead: c.lead, trail: c.trail, match: m, reverse: s.reverse}
}

// candidates is where s's old lines match at step, nearest hint first.
// Passes looser than exact, and every pass of a reversed hunk, need
// enough text to be sure of a match.
func (a *applier) candidates(s *side, step, hint int) ([]cand, *Error) {
	needInfo := step > stepExact || s.reverse
	switch step {
	case stepExact:
		if needInfo && info(s.old) < minInfo {
			return nil, nil
		}
		return a.scan(s, levelExact, 0, 0, hint, nil, maxCands)
	case stepRstrip, stepFields:
		if info(s.old) < minInfo {
			return nil, nil
		}
		return a.scan(s, step-stepRstrip+levelRstrip, 0, 0, hint, nil, 2)
	}
	fuzz := step - stepFields
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
			for lv := levelExact; lv < levels; lv++ {
				var err *Error
				if found, err = a.scan(s, lv, lead, trail, hint, found, 3); err != nil {
					return nil, err
				}
			}
		}
	}
	return found, nil
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
		for i := 0; i < len(l); i++ {
			if !isSpace(l[i]) {
				n++
			}
		}
	}
	return n
}

// scan appends to found the candidates where s's old lines, without lead
// and trail context lines, match at level, nearest hint first (from the
// start when hint is negative), stopping once found holds more than limit
// entries. A region already in found is not added again. The candidates
// come from the target's index: the places of the old line the target
// holds least often, each checked line by line.
func (a *applier) scan(s *side, level, lead, trail, hint int, found []cand, limit int) ([]cand, *Error) {
	old := s.old[lead : len(s.old)-trail]
	t := &a.t
	m := len(old)
	if m == 0 || m > t.n {
		return found, nil
	}
	if s.atEOF && (len(t.src) > 0 && t.src[len(t.src)-1] == '\n') == s.noEOL {
		return found, nil // the target's final newline is not the one the hunk expects
	}
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
	h := max(hint, 0) + lead + anchor
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
		start := p - anchor
		region := start - lead
		if start < 0 || start+m > t.n || (s.atEOF && region+len(s.old) != t.n) {
			continue
		}
		ok := true
		for j := 0; j < m && ok; j++ {
			a.work++
			ok = eqLine(level, t.line(start+j), old[j])
		}
		if a.work > hunkBudget {
			return nil, &Error{Code: CodeTooLarge, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos,
				Msg: fmt.Sprintf("the search gave up after %d line comparisons: the file holds each of the hunk's lines in too many places (its rarest, %q, in %d); add context lines found in fewer places", hunkBudget, clip(old[anchor], 60), cnt)}
		}
		if ok && !slices.ContainsFunc(found, func(c cand) bool { return c.region == region }) {
			found = append(found, cand{region, lead, trail})
			if len(found) > limit {
				break
			}
		}
	}
	return found, nil
}

// nearest is the candidate closest to hint, and whether another is as close.
func nearest(cands []cand, hint int) (best cand, tie bool) {
	best = cands[0]
	d := abs(best.region - hint)
	for _, c := range cands[1:] {
		switch dc := abs(c.region - hint); {
		case dc < d:
			best, d, tie = c, dc, false
		case dc == d:
			tie = true
		}
	}
	return best, tie
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

func (a *applier) ambiguous(s *side, cands []cand, why string) *Error {
	lines := make([]int, len(cands))
	strs := make([]string, len(cands))
	for i, c := range cands {
		lines[i] = c.region + c.lead + 1
		strs[i] = strconv.Itoa(lines[i])
	}
	return &Error{Code: CodeAmbiguous, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos, Candidates: lines,
		Msg: fmt.Sprintf("matches at lines %s %s: add context lines that make it unique", andList(strs), why)}
}

// notFound describes the region of the target most like s's old lines.
func (a *applier) notFound(s *side, hint int) *Error {
	e := &Error{Code: CodeNotFound, Hunk: s.index + 1, Path: hunkPath(s.index), Line: s.pos}
	t := &a.t
	if t.n == 0 {
		e.Msg = fmt.Sprintf("the file is empty or missing, but the hunk expects %s in it", plural(len(s.old), "line"))
		return e
	}
	m := len(s.old)
	best, bestN := 0, -1
	for p := 0; p < t.n && a.work <= hunkBudget; p++ {
		n := 0
		for j := 0; j < m && p+j < t.n; j++ {
			a.work++
			if eqLine(levelFields, t.line(p+j), s.old[j]) {
				n++
			}
		}
		if n > bestN || (n == bestN && hint >= 0 && abs(p-hint) < abs(best-hint)) {
			best, bestN = p, n
		}
	}
	if bestN <= 0 {
		e.Msg = fmt.Sprintf("none of its %s is in the file: the diff does not fit this file", plural(m, "old line"))
		return e
	}
	e.FileLine = best + 1
	e.Similarity = float64(bestN) / float64(m)
	var why string
	for j := 0; j < m; j++ {
		if best+j >= t.n {
			why = fmt.Sprintf("the file ends at line %d, the diff expects %q", t.n, clip(s.old[j], 80))
			break
		}
		if l := t.line(best + j); !eqLine(levelExact, l, s.old[j]) {
			why = fmt.Sprintf("line %d is %q, the diff expects %q", best+j+1, clip(string(l), 80), clip(s.old[j], 80))
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
		for _, ln := range lines {
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
	out := make([]byte, 0, len(t.src)+es.insBytes+2)
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

// newContent is what a new-file diff creates.
func (a *applier) newContent() ([]byte, error) {
	b := &applier{t: newTarget(nil), f: a.f}
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
