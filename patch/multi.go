package patch

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds on a multi-file patch given to Split.
const (
	MaxMultiBytes    = 64 << 20
	MaxMultiSections = 100000
)

// Multi is a multi-file patch split into one section per file. The
// preamble, the sections' texts and the trailer, joined, are the patch
// as given, byte for byte.
type Multi struct {
	// Preamble is the text before the first section: a commit message,
	// mail headers, prose.
	Preamble string
	Sections []Section
	// Trailer is the text after the last section's last hunk that is not
	// part of a diff (a mail signature, prose).
	Trailer string
}

// Section is one file's part of a multi-file patch.
type Section struct {
	// Text is the section as written: its header lines, then its hunks.
	// Text between two sections that belongs to neither (a "diff -r"
	// command line, an "Only in" line) starts the second.
	Text string
	// Line is the 1-based line of the patch where Text starts; HeaderLine
	// that of its first header line ("diff --git", "---", "Binary files").
	Line, HeaderLine int
	// Git is true for a section in git's format (a "diff --git" line).
	Git bool
	// OldName and NewName are the file's names as written in the "---"
	// and "+++" headers (in git's format without them, the "diff --git"
	// line's; for a binary diff, its "Binary files" line's), prefixes
	// such as "a/" kept, quotes and timestamps removed. A side that does
	// not exist is DevNull: "/dev/null", git's new and deleted files, and
	// a side that "diff -N" dates at the Unix epoch with an empty range.
	OldName, NewName string
	// RenameFrom and RenameTo are git's "rename from"/"rename to" names,
	// CopyFrom and CopyTo its "copy from"/"copy to" names (without
	// prefixes, as git writes them).
	RenameFrom, RenameTo string
	CopyFrom, CopyTo     string
	// OldMode and NewMode are git's file modes ("100644"), from its "old
	// mode"/"new mode", "deleted file mode" and "new file mode" lines.
	OldMode, NewMode string
	// NewFile and Deleted say that git's headers create or delete the file.
	NewFile, Deleted bool
	// Binary is set for "Binary files ... differ" and "GIT binary patch".
	Binary bool
	// Hunks is the number of "@@" sections.
	Hunks int
}

// Split splits a multi-file unified diff, in git's format ("diff --git")
// or that of "diff -u" and "diff -ruN", into one section per file. It
// reads only the structure: headers, and how far each hunk goes (by its
// counts while they last, then while lines look like hunk lines); Parse
// reads each section's hunks.
func Split(text string) (*Multi, error) {
	if len(text) > MaxMultiBytes {
		return nil, &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the patch is %d bytes, more than %d", len(text), MaxMultiBytes)}
	}
	s := splitter{text: text, pending: -1}
	if err := s.run(); err != nil {
		return nil, err
	}
	if len(s.secs) == 0 {
		return nil, &Error{Code: CodeSyntax, Line: max(1, s.line), Msg: `no file diffs: a patch needs "---"/"+++" headers or "diff --git" lines`}
	}
	m := &Multi{Preamble: text[:s.starts[0]], Sections: s.secs}
	for i := range s.secs {
		end := len(text)
		if i+1 < len(s.secs) {
			end = s.starts[i+1]
		} else if s.pending >= 0 {
			end = s.pending
		}
		s.secs[i].Text = text[s.starts[i]:end]
		s.finish(&s.secs[i], i)
	}
	m.Trailer = text[len(m.Preamble)+sumLen(s.secs):]
	return m, nil
}

func sumLen(secs []Section) int {
	n := 0
	for _, s := range secs {
		n += len(s.Text)
	}
	return n
}

// splitter is the state of Split.
type splitter struct {
	text   string
	secs   []Section
	starts []int // byte offset of each section
	// extra facts about each section, for finish
	facts []sectionFacts
	line  int // lines read
	// pending is the offset of text after a section's hunks that is not
	// part of a diff (-1 when none), pendingLine its line: the next
	// section starts there.
	pending, pendingLine int
	// hunk state: inside a hunk, and the old and new lines its header
	// counts that are not read yet (-1 for a header without numbers).
	inHunk     bool
	remOld     int
	remNew     int
	binaryBody bool
}

type sectionFacts struct {
	headers          bool   // "---"/"+++" read
	head             bool   // started by a "diff", "Index:" or "diff --git" line
	oldEpoch         bool   // "---" dated at the Unix epoch
	newEpoch         bool   // "+++" dated at the Unix epoch
	firstOld0        bool   // the first hunk's old range is empty at 0
	firstNew0        bool   // the first hunk's new range is empty at 0
	gitLine          string // the names of the "diff --git" line
	binOld, binNew   string // the names of a "Binary files" line
	binaryNamesKnown bool
}

func (s *splitter) cur() (*Section, *sectionFacts) {
	if len(s.secs) == 0 {
		return nil, nil
	}
	return &s.secs[len(s.secs)-1], &s.facts[len(s.facts)-1]
}

// start begins a section whose first header is the line at off (line n).
func (s *splitter) start(off, n int) (*Section, *sectionFacts, error) {
	if len(s.secs) == MaxMultiSections {
		return nil, nil, &Error{Code: CodeTooLarge, Line: n, Msg: fmt.Sprintf("more than %d files in one patch", MaxMultiSections)}
	}
	at, line := off, n
	if s.pending >= 0 && len(s.secs) > 0 {
		at, line = s.pending, s.pendingLine
	}
	s.pending = -1
	s.inHunk, s.binaryBody = false, false
	s.secs = append(s.secs, Section{Line: line, HeaderLine: n})
	s.starts = append(s.starts, at)
	s.facts = append(s.facts, sectionFacts{})
	sec, f := s.cur()
	return sec, f, nil
}

func (s *splitter) run() error {
	text := s.text
	for off := 0; off < len(text); {
		end := strings.IndexByte(text[off:], '\n')
		next := len(text)
		if end >= 0 {
			next = off + end + 1
		}
		raw := text[off:next]
		l := strings.TrimSuffix(strings.TrimSuffix(raw, "\n"), "\r")
		s.line++
		n := s.line
		nextLine := ""
		if next < len(text) {
			e := strings.IndexByte(text[next:], '\n')
			if e < 0 {
				nextLine = text[next:]
			} else {
				nextLine = text[next : next+e]
			}
		}
		consumed, err := s.step(l, nextLine, off, n)
		if err != nil {
			return err
		}
		off = next
		if consumed == 2 {
			// The "+++" line of a header pair.
			if off < len(text) {
				e := strings.IndexByte(text[off:], '\n')
				if e < 0 {
					off = len(text)
				} else {
					off += e + 1
				}
				s.line++
			}
		}
	}
	return nil
}

// headerPair reports whether l and next are a "---"/"+++" pair.
func headerPair(l, next string) bool {
	return strings.HasPrefix(l, "--- ") && strings.HasPrefix(next, "+++ ")
}

// step reads line l (n, at offset off; next is the line after it) and
// returns how many lines it took (1, or 2 for a header pair).
func (s *splitter) step(l, next string, off, n int) (int, error) {
	sec, f := s.cur()
	if s.binaryBody {
		if !strings.HasPrefix(l, "diff --git ") {
			return 1, nil
		}
		s.binaryBody = false
	}
	if s.inHunk {
		counting := s.remOld > 0 || s.remNew > 0
		body := l == "" || l[0] == ' ' || l[0] == '-' || l[0] == '+'
		switch {
		case counting && body:
			s.count(l)
			return 1, nil
		case strings.HasPrefix(l, `\`):
			return 1, nil
		case s.remOld == 0 && s.remNew == 0 && l == "-- ":
			// A mail signature after a hunk whose counts are complete
			// (git format-patch): not a deleted line.
			s.inHunk = false
			s.pending, s.pendingLine = off, n
			return 1, nil
		case headerPair(l, next):
			s.inHunk = false
		case body:
			// Counts past: models miscount; keep reading hunk lines.
			return 1, nil
		case strings.HasPrefix(l, "@@"):
		default:
			s.inHunk = false
		}
	}
	switch {
	case strings.HasPrefix(l, "diff --git "):
		sec, f, err := s.start(off, n)
		if err != nil {
			return 0, err
		}
		sec.Git, f.head, f.gitLine = true, true, l[len("diff --git "):]
		return 1, nil
	case headerPair(l, next):
		if sec == nil || f.headers || sec.Hunks > 0 || sec.Binary || !f.head || s.pending >= 0 {
			var err error
			if sec, f, err = s.start(off, n); err != nil {
				return 0, err
			}
		}
		f.headers = true
		sec.OldName, f.oldEpoch = nameAndEpoch(l[4:])
		sec.NewName, f.newEpoch = nameAndEpoch(strings.TrimSuffix(next, "\r")[4:])
		return 2, nil
	case strings.HasPrefix(l, "@@"):
		if sec == nil || s.pending >= 0 || sec.Binary || !(f.headers || sec.Git) {
			return 0, &Error{Code: CodeSyntax, Line: n, Msg: `a hunk with no file headers before it: each file's hunks follow its "---"/"+++" lines`}
		}
		o1, ol, n1, nl, ok := parseRange(l)
		s.inHunk, s.remOld, s.remNew = true, -1, -1
		if ok {
			s.remOld, s.remNew = ol, nl
		}
		if sec.Hunks == 0 {
			f.firstOld0 = ok && o1 == 0 && ol == 0
			f.firstNew0 = ok && n1 == 0 && nl == 0
		}
		sec.Hunks++
		return 1, nil
	case strings.HasPrefix(l, "Binary files ") && strings.HasSuffix(l, " differ"):
		if sec == nil || !(sec.Git || f.head) || f.headers || sec.Hunks > 0 || sec.Binary || s.pending >= 0 {
			var err error
			if sec, f, err = s.start(off, n); err != nil {
				return 0, err
			}
		}
		sec.Binary = true
		names := strings.TrimSuffix(strings.TrimPrefix(l, "Binary files "), " differ")
		if a, b, ok := strings.Cut(names, " and "); ok {
			f.binOld, f.binNew, f.binaryNamesKnown = headerName(a), headerName(b), true
		}
		return 1, nil
	case (strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "Index: ")) && (sec == nil || sec.Hunks > 0 || f.headers || sec.Binary || sec.Git || s.pending >= 0):
		_, f, err := s.start(off, n)
		if err != nil {
			return 0, err
		}
		f.head = true
		return 1, nil
	}
	if sec == nil {
		return 1, nil // the preamble
	}
	if sec.Git && !f.headers && sec.Hunks == 0 && !sec.Binary && s.pending < 0 && s.gitHeader(sec, l) {
		return 1, nil
	}
	if sec.Hunks > 0 || f.headers || sec.Binary {
		// Text after a section's diff: it ends the section.
		if s.pending < 0 {
			s.pending, s.pendingLine = off, n
		}
	}
	return 1, nil
}

// count takes hunk line l off the counts still expected.
func (s *splitter) count(l string) {
	op := byte(' ')
	if l != "" {
		op = l[0]
	}
	if op != '+' && s.remOld > 0 {
		s.remOld--
	}
	if op != '-' && s.remNew > 0 {
		s.remNew--
	}
}

// gitHeader reads one of git's extended header lines into sec, reporting
// whether l is one.
func (s *splitter) gitHeader(sec *Section, l string) bool {
	key, val, ok := cutAny(l, "old mode ", "new mode ", "deleted file mode ", "new file mode ",
		"rename from ", "rename to ", "copy from ", "copy to ", "similarity index ", "dissimilarity index ", "index ")
	switch {
	case l == "GIT binary patch":
		sec.Binary, s.binaryBody = true, true
		return true
	case !ok:
		return false
	}
	switch key {
	case "old mode ":
		sec.OldMode = val
	case "new mode ":
		sec.NewMode = val
	case "deleted file mode ":
		sec.Deleted, sec.OldMode = true, val
	case "new file mode ":
		sec.NewFile, sec.NewMode = true, val
	case "rename from ":
		sec.RenameFrom = headerName(val)
	case "rename to ":
		sec.RenameTo = headerName(val)
	case "copy from ":
		sec.CopyFrom = headerName(val)
	case "copy to ":
		sec.CopyTo = headerName(val)
	}
	return true
}

func cutAny(l string, prefixes ...string) (key, val string, ok bool) {
	for _, p := range prefixes {
		if strings.HasPrefix(l, p) {
			return p, strings.TrimSpace(l[len(p):]), true
		}
	}
	return "", "", false
}

// finish fills in sec's names once it is read.
func (s *splitter) finish(sec *Section, i int) {
	f := &s.facts[i]
	if !f.headers {
		switch {
		case sec.Binary && f.binaryNamesKnown:
			sec.OldName, sec.NewName = f.binOld, f.binNew
		case sec.Git:
			sec.OldName, sec.NewName = gitNames(f.gitLine)
		}
	}
	if sec.Git {
		if sec.NewFile {
			sec.OldName = DevNull
		}
		if sec.Deleted {
			sec.NewName = DevNull
		}
		return
	}
	// "diff -N" writes a missing side as a real name dated at the epoch,
	// with an empty range.
	if f.oldEpoch && f.firstOld0 {
		sec.OldName = DevNull
	}
	if f.newEpoch && f.firstNew0 {
		sec.NewName = DevNull
	}
	if sec.Binary && (sec.OldName == "" || sec.NewName == "") && f.binaryNamesKnown {
		sec.OldName, sec.NewName = f.binOld, f.binNew
	}
}

// nameAndEpoch is a "---"/"+++" header's name, and whether its timestamp
// is the Unix epoch ("diff -N" dates a missing file so).
func nameAndEpoch(s string) (string, bool) {
	name := headerName(s)
	_, stamp, ok := strings.Cut(s, "\t")
	if !ok {
		return name, false
	}
	stamp = strings.TrimSpace(stamp)
	epoch := strings.HasPrefix(stamp, "1970-01-01 ") || strings.HasPrefix(stamp, "1969-12-31 ") ||
		strings.HasSuffix(stamp, " 1970") && strings.Contains(stamp, "Jan  1 ") ||
		strings.HasSuffix(stamp, " 1969") && strings.Contains(stamp, "Dec 31 ")
	return name, epoch
}

// gitNames reads the two names of a "diff --git" line (after "diff
// --git "): quoted names, names without spaces, or two equal names but
// for their first component, as git writes them; "" for a name it cannot
// tell.
func gitNames(rest string) (string, string) {
	rest = strings.TrimSpace(rest)
	switch {
	case strings.HasPrefix(rest, `"`):
		end := closingQuote(rest)
		if end < 0 {
			return "", ""
		}
		a, err := strconv.Unquote(rest[:end+1])
		if err != nil {
			return "", ""
		}
		return a, gitSecond(strings.TrimSpace(rest[end+1:]))
	case strings.HasSuffix(rest, `"`):
		i := strings.LastIndex(rest, ` "`)
		if i < 0 {
			return "", ""
		}
		return rest[:i], gitSecond(rest[i+1:])
	case strings.Count(rest, " ") == 1:
		a, b, _ := strings.Cut(rest, " ")
		return a, b
	}
	// Names with spaces: the split where both halves name the same file.
	if len(rest)%2 == 1 {
		mid := len(rest) / 2
		a, b := rest[:mid], rest[mid+1:]
		if rest[mid] == ' ' && dropFirst(a) == dropFirst(b) {
			return a, b
		}
	}
	return "", ""
}

func gitSecond(s string) string {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return ""
		}
		return u
	}
	return s
}

func dropFirst(s string) string {
	if _, rest, ok := strings.Cut(s, "/"); ok {
		return rest
	}
	return s
}
