package patch

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxTarget is the largest target Apply takes, in bytes.
const MaxTarget = 1 << 30

// maxFuzz is how many context lines a pass may ignore on each side.
const maxFuzz = 2

// minInfo is the fewest non-whitespace bytes a hunk's old lines need to be
// placed by a pass looser than exact.
const minInfo = 10

// workBudget bounds the line comparisons one Apply may make, so that a
// pathological target (thousands of identical lines) cannot stall it.
const workBudget = 1 << 26

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
				return nil, &Error{Code: CodeBinary, Hunk: i + 1, Line: f.Hunks[i].Pos, Msg: "the hunk holds invalid UTF-8"}
			}
		}
	}
	a := &applier{t: newTarget(src), f: f}
	res := &Result{Hunks: make([]HunkResult, len(f.Hunks))}
	locs, errs := a.locateAll(false)
	if firstErr(errs) == nil {
		out, err := a.build(locs)
		if err != nil {
			return nil, err
		}
		for i, l := range locs {
			res.Hunks[i].Match = l.match
		}
		res.Content, res.Status, res.Warnings = out, Applied, a.warns
		return res, nil
	}
	// Some hunk does not apply: is the diff already applied?
	fwdWarns := a.warns
	a.warns = nil
	rlocs, rerrs := a.locateAll(true)
	if f.IsNew() && len(src) > 0 {
		if out, err := a.newContent(); err == nil && bytes.Equal(out, src) {
			rerrs = make([]*Error, len(f.Hunks))
		} else {
			rerrs[0] = &Error{Code: CodeNotFound, Hunk: 1, Line: f.Hunks[0].Pos, Msg: "the diff creates the file, but it exists with other content"}
		}
	}
	allReversed, allFailed := true, true
	for i := range errs {
		if rerrs[i] != nil {
			allReversed = false
		}
		if errs[i] == nil {
			allFailed = false
		}
	}
	if allReversed && allFailed {
		for i, l := range rlocs {
			res.Hunks[i].Match = l.match
		}
		res.Content, res.Status = src, Noop
		res.Warnings = append(a.warns, "the diff is already applied: nothing to change")
		return res, nil
	}
	var first *Error
	for i := range errs {
		e := errs[i]
		if e != nil && rerrs[i] == nil {
			e = &Error{Code: CodePartial, Hunk: i + 1, Line: f.Hunks[i].Pos, FileLine: rlocs[i].match.Line,
				Msg: fmt.Sprintf("already applied (its new lines are at line %d) while other hunks are not: the file is partly changed", rlocs[i].match.Line)}
		}
		if e != nil {
			res.Hunks[i].Err = e
			if first == nil {
				first = e
			}
		} else {
			res.Hunks[i].Match = locs[i].match
		}
	}
	res.Warnings = fwdWarns
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
	levelFields // runs of whitespace collapsed, leading and trailing ignored
	levels
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' }

func eqLine(level int, a []byte, b string) bool {
	switch level {
	case levelExact:
		return string(a) == b
	case levelRstrip:
		return string(bytes.TrimRight(a, " \t\r\f\v")) == strings.TrimRight(b, " \t\r\f\v")
	}
	i, j := 0, 0
	for {
		for i < len(a) && isSpace(a[i]) {
			i++
		}
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		for i < len(a) && j < len(b) && !isSpace(a[i]) && !isSpace(b[j]) {
			if a[i] != b[j] {
				return false
			}
			i++
			j++
		}
		if (i < len(a) && !isSpace(a[i])) || (j < len(b) && !isSpace(b[j])) {
			return false
		}
	}
}

// side is a hunk seen from one direction: forward, or reversed to test
// whether it is already applied.
type side struct {
	index int // 0-based hunk index
	lines []Line
	old   []string // the old-side lines (context and deleted)
	// lead and trail are the context lines before the first change and
	// after the last one; keepLead and keepTrail say that one of them must
	// stay because an insertion is next to it.
	lead, trail         int
	keepLead, keepTrail bool
	numbered            bool
	start               int // header line for this side (1-based; 0 when none)
	count               int // header count for this side
	pos                 int // diff line of the header
}

// loc is a placed hunk.
type loc struct {
	// region is the 0-based target line where the untrimmed old lines start.
	region      int
	lead, trail int
	match       Match
}

type applier struct {
	t     target
	f     *File
	work  int
	warns []string
}

func (a *applier) side(i int, reverse bool) *side {
	h := &a.f.Hunks[i]
	s := &side{index: i, numbered: h.Numbered, start: h.OldStart, count: h.OldLines, pos: h.Pos, lines: h.Lines}
	if reverse {
		s.start, s.count = h.NewStart, h.NewLines
		s.lines = make([]Line, len(h.Lines))
		for j, l := range h.Lines {
			switch l.Op {
			case Delete:
				l.Op = Insert
			case Insert:
				l.Op = Delete
			}
			s.lines[j] = l
		}
	}
	s.old = make([]string, 0, len(s.lines))
	changed := false
	for j, l := range s.lines {
		if l.Op == Insert && (j == 0 || s.lines[j-1].Op == Context) && !changed {
			s.keepLead = true
		}
		if l.Op == Insert && (j == len(s.lines)-1 || s.lines[j+1].Op == Context) {
			s.keepTrail = true
		} else if l.Op == Delete {
			s.keepTrail = false
		}
		if l.Op != Insert {
			s.old = append(s.old, l.Text)
		}
		if l.Op == Context {
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
	return s
}

// locateAll places every hunk, in header order, so that the offset found
// for one hunk refines the hint for the next.
func (a *applier) locateAll(reverse bool) ([]loc, []*Error) {
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
	for _, i := range order {
		s := a.side(i, reverse)
		l, err := a.locate(s, delta)
		if err != nil {
			errs[i] = err
			continue
		}
		locs[i] = l
		if s.numbered {
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

func (a *applier) locate(s *side, delta int) (loc, *Error) {
	hunk := s.index + 1
	if len(s.old) == 0 {
		return a.placeInsertion(s, delta)
	}
	hint := -1
	if s.numbered {
		hint = s.headerLine() + delta
	}
	mk := func(region, lead, trail int, pass Pass, fuzz int) loc {
		m := Match{Pass: pass, Fuzz: fuzz, Line: region + lead + 1}
		if s.numbered {
			m.Offset = region - s.headerLine()
			if pass == PassExact && m.Offset != 0 {
				m.Pass = PassOffset
			}
		}
		return loc{region: region, lead: lead, trail: trail, match: m}
	}
	// Exact: the nearest match to the hint wins.
	cands, err := a.scan(s, levelExact, 0, 0, nil, 0)
	if err != nil {
		return loc{}, err
	}
	switch {
	case len(cands) == 1:
		return mk(cands[0], 0, 0, PassExact, 0), nil
	case len(cands) > 1:
		best, tie := nearest(cands, hint)
		if hint < 0 || tie {
			return loc{}, a.ambiguous(s, cands, "with no line number to choose between them")
		}
		var others []string
		for _, c := range cands {
			if c != best {
				others = append(others, strconv.Itoa(c+1))
			}
		}
		a.warnf("hunk %d also matches at line %s; placed at line %d, nearest its header", hunk, strings.Join(others, ", "), best+1)
		return mk(best, 0, 0, PassExact, 0), nil
	}
	// Looser passes need a unique match and enough text to be sure of it.
	if info(s.old) >= minInfo {
		for lv := levelRstrip; lv < levels; lv++ {
			cands, err := a.scan(s, lv, 0, 0, nil, 2)
			if err != nil {
				return loc{}, err
			}
			if len(cands) > 1 {
				return loc{}, a.ambiguous(s, cands, "when whitespace is ignored")
			}
			if len(cands) == 1 {
				a.warnf("hunk %d matched only with whitespace ignored", hunk)
				return mk(cands[0], 0, 0, PassWhitespace, 0), nil
			}
		}
	}
	for fuzz := 1; fuzz <= maxFuzz; fuzz++ {
		var found []int // regions
		var how [][2]int
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
					before := len(found)
					found, err = a.scan(s, lv, lead, trail, found, 3)
					if err != nil {
						return loc{}, err
					}
					for range len(found) - before {
						how = append(how, [2]int{lead, trail})
					}
				}
			}
		}
		switch {
		case len(found) == 1:
			a.warnf("hunk %d matched with %s ignored", hunk, plural(fuzz, "context line"))
			return mk(found[0], how[0][0], how[0][1], PassFuzz, fuzz), nil
		case len(found) > 1:
			return loc{}, a.ambiguous(s, found, fmt.Sprintf("with %s ignored", plural(fuzz, "context line")))
		}
	}
	return loc{}, a.notFound(s, hint)
}

// placeInsertion places a hunk without old lines: only its header's line
// number can say where it goes.
func (a *applier) placeInsertion(s *side, delta int) (loc, *Error) {
	at := 0
	switch {
	case a.t.n == 0:
	case a.f.IsNew():
		return loc{}, &Error{Code: CodeNotFound, Hunk: s.index + 1, Line: s.pos, Msg: fmt.Sprintf("the diff creates the file, but it exists with %s", plural(a.t.n, "line"))}
	case !s.numbered:
		return loc{}, &Error{Code: CodeAmbiguous, Hunk: s.index + 1, Line: s.pos, Msg: "the hunk has no context lines and its header no line numbers: nothing says where it goes"}
	default:
		at = s.headerLine() + delta
		if at < 0 || at > a.t.n {
			return loc{}, &Error{Code: CodeNotFound, Hunk: s.index + 1, Line: s.pos, Msg: fmt.Sprintf("the hunk has no context lines and its line %d is past the end of the file (%d lines)", at, a.t.n)}
		}
	}
	m := Match{Pass: PassExact, Line: at + 1}
	if s.numbered {
		m.Offset = at - s.headerLine()
		if m.Offset != 0 {
			m.Pass = PassOffset
		}
	}
	return loc{region: at, match: m}, nil
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

// scan appends to found the regions where s's old lines, without lead and
// trail context lines, match at level, stopping once found holds more
// than limit entries (limit 0: no limit). A region already in found is
// not added again.
func (a *applier) scan(s *side, level, lead, trail int, found []int, limit int) ([]int, *Error) {
	old := s.old[lead : len(s.old)-trail]
	t := &a.t
	m := len(old)
	for p := 0; p+m <= t.n; p++ {
		a.work++
		if !eqLine(level, t.line(p), old[0]) {
			continue
		}
		ok := true
		for j := 1; j < m; j++ {
			a.work++
			if !eqLine(level, t.line(p+j), old[j]) {
				ok = false
				break
			}
		}
		if a.work > workBudget {
			return nil, &Error{Code: CodeTooLarge, Hunk: s.index + 1, Line: s.pos, Msg: "the search took too many comparisons: the target repeats the hunk's lines too often"}
		}
		if ok && !slices.Contains(found, p-lead) {
			found = append(found, p-lead)
			if limit > 0 && len(found) > limit {
				break
			}
		}
	}
	return found, nil
}

// nearest is the candidate closest to hint, and whether another is as close.
func nearest(cands []int, hint int) (best int, tie bool) {
	best = cands[0]
	d := abs(best - hint)
	for _, c := range cands[1:] {
		switch dc := abs(c - hint); {
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

func (a *applier) ambiguous(s *side, regions []int, why string) *Error {
	lines := make([]int, len(regions))
	strs := make([]string, len(regions))
	for i, r := range regions {
		lines[i] = r + 1
		strs[i] = strconv.Itoa(r + 1)
	}
	return &Error{Code: CodeAmbiguous, Hunk: s.index + 1, Line: s.pos, Candidates: lines,
		Msg: fmt.Sprintf("matches at lines %s %s: add context lines that make it unique", andList(strs), why)}
}

// notFound describes the region of the target most like s's old lines.
func (a *applier) notFound(s *side, hint int) *Error {
	e := &Error{Code: CodeNotFound, Hunk: s.index + 1, Line: s.pos}
	t := &a.t
	if t.n == 0 {
		e.Msg = fmt.Sprintf("the file is empty or missing, but the hunk expects %s in it", plural(len(s.old), "line"))
		return e
	}
	m := len(s.old)
	best, bestN := 0, -1
	for p := 0; p < t.n && a.work <= workBudget; p++ {
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

// build applies the placed hunks to the target.
func (a *applier) build(locs []loc) ([]byte, error) {
	t := &a.t
	var (
		edits   []edit
		regions [][3]int // start, end, hunk
		newNo   bool     // a "\ No newline" marker on the new side at the end of the file
		oldNo   bool
	)
	insBytes := 0
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
					edits = append(edits, edit{at: cur, hunk: i})
					e = &edits[len(edits)-1]
				}
				if ln.Op == Delete {
					e.del++
					cur++
				} else {
					e.ins = append(e.ins, ln)
					insBytes += len(ln.Text) + 2
				}
			}
		}
		regions = append(regions, [3]int{start, cur, i})
		if cur == t.n {
			for _, ln := range lines {
				switch {
				case ln.NoEOL && ln.Op == Insert:
					newNo = true
				case ln.NoEOL && ln.Op == Delete:
					oldNo = true
				}
			}
		}
	}
	slices.SortStableFunc(edits, func(x, y edit) int { return cmp.Compare(x.at, y.at) })
	for i := 1; i < len(edits); i++ {
		p, c := edits[i-1], edits[i]
		if p.at+p.del > c.at || (p.at == c.at && p.del == 0 && c.del == 0 && p.hunk != c.hunk) {
			return nil, a.overlap(c.hunk, p.hunk, c.at)
		}
	}
	// A hunk's context must not be changed by another hunk.
	for _, r := range regions {
		k, _ := slices.BinarySearchFunc(edits, r[0], func(e edit, v int) int { return cmp.Compare(e.at+max(e.del, 1), v+1) })
		for ; k < len(edits) && edits[k].at < r[1]; k++ {
			e := edits[k]
			if e.hunk == r[2] {
				continue
			}
			if (e.del > 0 && e.at+e.del > r[0]) || (e.del == 0 && e.at > r[0]) {
				return nil, a.overlap(max(e.hunk, r[2]), min(e.hunk, r[2]), e.at)
			}
		}
	}
	// Inserted lines take the target's line ending, unless the target
	// has none or mixes them and the diff mixes them too: then each line
	// keeps the ending it has in the diff.
	eol, mixed := t.eol()
	perLine := eol == "" || (mixed && a.diffMixesEOL())
	if eol == "" {
		eol = "\n"
	}
	out := make([]byte, 0, len(t.src)+insBytes+2)
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
	for _, e := range edits {
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
	case newNo:
		finalNL = false
	case oldNo:
		finalNL = true
	}
	if !finalNL && len(out) > 0 {
		out = out[:len(out)-1]
		if len(out) > 0 && out[len(out)-1] == '\r' {
			out = out[:len(out)-1]
		}
	}
	return out, nil
}

func (a *applier) overlap(h1, h2, at int) *Error {
	return &Error{Code: CodeOverlap, Hunk: h1 + 1, Line: a.f.Hunks[h1].Pos, FileLine: at + 1,
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
	locs, errs := b.locateAll(false)
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
