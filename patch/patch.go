// Package patch parses single-file unified diffs leniently and applies them
// strictly: each hunk is located by its content (the header line number is
// only a tie-breaker), through passes that loosen one step at a time, and a
// hunk is placed only where the match is certain.
//
// Parsing recounts hunk sizes from the body, accepts "@@ ... @@" headers
// without numbers, reads an empty line inside a hunk as blank context and
// tolerates a diff without a final newline. Applying keeps the file's own
// context lines, line endings (LF or CRLF) and final-newline state, and
// reports an already-applied diff as [Noop].
package patch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/textcut"
)

// DevNull is the name a diff header gives a file that does not exist on
// that side: the old name of a new file, the new name of a deleted one.
const DevNull = "/dev/null"

// Op is what a hunk line does.
type Op byte

// Hunk line operations, as written in the first column of a diff.
const (
	Context Op = ' '
	Delete  Op = '-'
	Insert  Op = '+'
)

// Line is one line of a hunk body.
type Line struct {
	// Text is the line without its first column and without its line
	// ending (a trailing carriage return is dropped too).
	Text string
	Op   Op
	// NoEOL is set when a "\ No newline at end of file" marker follows.
	NoEOL bool
	// CR is set when the line ended with a carriage return.
	CR bool
}

// Hunk is one "@@" section of a diff.
type Hunk struct {
	// Numbered is false for a header without line numbers ("@@ ... @@").
	Numbered bool
	// OldStart and NewStart are the header's 1-based start lines.
	OldStart, NewStart int
	// OldLines and NewLines are the header's counts as written; they
	// only tell whether a start line is the line before an empty range
	// (a count of 0). Sizes come from the body.
	OldLines, NewLines int
	// Pos is the 1-based line of the header in the diff text.
	Pos int
	// Header is the header line as written.
	Header string
	Lines  []Line
}

// File is a parsed single-file diff.
type File struct {
	// OldName and NewName are the names in the "---" and "+++" headers
	// as written (quotes and timestamps removed); empty when the diff has
	// no such headers, DevNull for a side that does not exist.
	OldName, NewName string
	Hunks            []Hunk
}

// IsNew reports whether the diff creates its file.
func (f *File) IsNew() bool { return f.OldName == DevNull }

// IsDelete reports whether the diff deletes its file.
func (f *File) IsDelete() bool { return f.NewName == DevNull }

// Code is a stable, machine-readable error kind.
type Code string

// Error codes.
const (
	CodeSyntax       Code = "diff_syntax"        // the diff text cannot be read
	CodeBinary       Code = "binary"             // the target or the diff holds a NUL byte or invalid UTF-8
	CodeNotFound     Code = "hunk_not_found"     // no place in the file matches the hunk
	CodeAmbiguous    Code = "hunk_ambiguous"     // more than one place matches and nothing decides
	CodeNeedsContext Code = "hunk_needs_context" // a hunk with neither context nor deleted lines, for a file that has lines
	CodeOverlap      Code = "hunk_overlap"       // two hunks change the same lines
	CodePartial      Code = "partially_applied"  // some hunks are already applied, others not
	CodeTooLarge     Code = "too_large"          // the input is past a bound
)

// Error is a failure to parse or apply a diff. Path is the hunk at fault
// in the parsed diff ("hunks[0]" for File.Hunks[0]; "" when the error is
// not about one hunk), Hunk the same hunk counted from 1 (0 for none),
// Line the 1-based line of the diff text at fault, FileLine the 1-based
// line of the target the message points at (the closest region of a hunk
// not found).
type Error struct {
	Code     Code
	Path     string
	Hunk     int
	Line     int
	FileLine int
	// Similarity is the share of the hunk's old lines that match at the
	// closest region, from 0 to 1 (CodeNotFound only).
	Similarity float64
	// Candidates are the 1-based file lines where an ambiguous hunk
	// matches (CodeAmbiguous only).
	Candidates []int
	Msg        string
	// Err is an underlying cause. Parse and Apply read only the texts
	// given, so their errors have none; it is here for errors.Is and
	// errors.As through wrappers of this type.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Hunk > 0 {
		fmt.Fprintf(&b, "hunk %d", e.Hunk)
		if e.Line > 0 {
			fmt.Fprintf(&b, " (diff line %d)", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "diff line %d: ", e.Line)
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// hunkPath is the Path of the error of File.Hunks[i].
func hunkPath(i int) string { return "hunks[" + strconv.Itoa(i) + "]" }

// Parse reads a single-file unified diff. Text before the first header
// (a "diff --git" line, "index" lines, prose) is skipped; a second file's
// headers are an error. The header counts are ignored: sizes are recounted
// from the body.
func Parse(diff string) (*File, error) {
	if i := strings.IndexByte(diff, 0); i >= 0 {
		return nil, &Error{Code: CodeBinary, Line: 1 + strings.Count(diff[:i], "\n"), Msg: "the diff holds a NUL byte"}
	}
	lines := splitLines(diff)
	f := &File{}
	var (
		h         *Hunk // the hunk being read
		headers   bool  // "---"/"+++" seen
		oldN      int   // old-side lines of h so far
		newN      int
		wantO     int // header counts of h, -1 when absent
		wantN     int
		afterHunk bool // text after a hunk that ended on a non-body line
		empties   int  // empty diff lines at the end of h
	)
	endHunk := func() error {
		if h == nil {
			return nil
		}
		err := finishHunk(h, empties, len(f.Hunks))
		h = nil
		return err
	}
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		l := strings.TrimSuffix(raw, "\r")
		n := i + 1
		isFileHeader := strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")
		if h != nil {
			needMore := wantO >= 0 && (oldN < wantO || newN < wantN)
			if isFileHeader && !needMore {
				return nil, &Error{Code: CodeSyntax, Line: n, Msg: "a second file's headers: a diff changes one file"}
			}
			op := byte(' ')
			if l != "" {
				op = l[0]
			}
			switch op {
			case ' ', '-', '+':
				text := ""
				if l != "" {
					text = l[1:]
				}
				h.Lines = append(h.Lines, Line{Text: text, Op: Op(op), CR: len(raw) > len(l)})
				if l == "" {
					empties++
				} else {
					empties = 0
				}
				if op != '+' {
					oldN++
				}
				if op != '-' {
					newN++
				}
				continue
			case '\\':
				if len(h.Lines) == 0 {
					return nil, &Error{Code: CodeSyntax, Line: n, Msg: `a "\" marker with no line before it`}
				}
				h.Lines[len(h.Lines)-1].NoEOL = true
				empties = 0
				continue
			}
			if err := endHunk(); err != nil {
				return nil, err
			}
			if !strings.HasPrefix(l, "@@") {
				afterHunk = true
			}
		}
		switch {
		case strings.HasPrefix(l, "@@"):
			afterHunk = false
			f.Hunks = append(f.Hunks, newHunk(l, n, len(lines)-i-1))
			h = &f.Hunks[len(f.Hunks)-1]
			oldN, newN, empties = 0, 0, 0
			wantO, wantN = -1, -1
			if h.Numbered {
				wantO, wantN = h.OldLines, h.NewLines
			}
		case isFileHeader:
			if headers || len(f.Hunks) > 0 {
				return nil, &Error{Code: CodeSyntax, Line: n, Msg: "a second file's headers: a diff changes one file"}
			}
			headers = true
			f.OldName = headerName(l[4:])
			f.NewName = headerName(strings.TrimSuffix(lines[i+1], "\r")[4:])
			i++
		case strings.HasPrefix(l, "Binary files ") || l == "GIT binary patch":
			return nil, &Error{Code: CodeBinary, Line: n, Msg: "a binary diff: only text diffs can be applied"}
		case strings.HasPrefix(l, "diff --git ") && len(f.Hunks) > 0:
			return nil, &Error{Code: CodeSyntax, Line: n, Msg: "a second file's diff: a diff changes one file"}
		case afterHunk && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "```"):
			return nil, &Error{Code: CodeSyntax, Line: n, Msg: fmt.Sprintf("unexpected text after hunk %d: %q (a hunk line starts with ' ', '+' or '-')", len(f.Hunks), textcut.Clip(l, 60, "…"))}
		}
	}
	if err := endHunk(); err != nil {
		return nil, err
	}
	if len(f.Hunks) == 0 {
		return nil, &Error{Code: CodeSyntax, Line: len(lines), Msg: `no hunks: a diff needs at least one "@@" section`}
	}
	return f, nil
}

// newHunk is the hunk whose header is line n of a diff, followed by
// rest lines.
func newHunk(header string, n, rest int) Hunk {
	h := Hunk{Pos: n, Header: header}
	if o1, ol, n1, nl, ok := parseRange(header); ok {
		h.Numbered, h.OldStart, h.NewStart, h.OldLines, h.NewLines = true, o1, n1, ol, nl
		// The counts are a hint for the capacity only.
		h.Lines = make([]Line, 0, min(ol+nl, rest))
	}
	return h
}

// finishHunk checks h, the n-th hunk of a diff (from 1), once its last line
// is read, after dropping the empties empty lines at its end: they are
// the blank lines between sections of text, not blank context.
func finishHunk(h *Hunk, empties, n int) error {
	for ; empties > 0 && !h.Lines[len(h.Lines)-1].NoEOL; empties-- {
		h.Lines = h.Lines[:len(h.Lines)-1]
	}
	for _, l := range h.Lines {
		if l.Op != Context {
			return nil
		}
	}
	if len(h.Lines) == 0 {
		return &Error{Code: CodeSyntax, Hunk: n, Path: hunkPath(n - 1), Line: h.Pos, Msg: "the hunk is empty"}
	}
	return &Error{Code: CodeSyntax, Hunk: n, Path: hunkPath(n - 1), Line: h.Pos, Msg: "the hunk has no + or - lines"}
}

// splitLines splits s at newlines; a final newline does not start another
// line.
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// headerName is a "---"/"+++" name without its timestamp and quotes.
func headerName(s string) string {
	if strings.HasPrefix(s, `"`) {
		if end := closingQuote(s); end > 0 {
			if u, err := strconv.Unquote(s[:end+1]); err == nil {
				return u
			}
		}
	}
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// parseRange reads "@@ -a[,b] +c[,d] @@"; a missing count is 1.
func parseRange(l string) (oldStart, oldLines, newStart, newLines int, ok bool) {
	rest := strings.TrimLeft(l, "@")
	rest = strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(rest, "-") {
		return 0, 0, 0, 0, false
	}
	oldStart, oldLines, rest, ok = parseSpan(rest[1:])
	if !ok {
		return 0, 0, 0, 0, false
	}
	rest = strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(rest, "+") {
		return 0, 0, 0, 0, false
	}
	newStart, newLines, rest, ok = parseSpan(rest[1:])
	if !ok || !strings.HasPrefix(strings.TrimLeft(rest, " "), "@@") {
		return 0, 0, 0, 0, false
	}
	return oldStart, oldLines, newStart, newLines, true
}

func parseSpan(s string) (start, count int, rest string, ok bool) {
	start, s, ok = parseNum(s)
	if !ok {
		return 0, 0, "", false
	}
	count = 1
	if strings.HasPrefix(s, ",") {
		if count, s, ok = parseNum(s[1:]); !ok {
			return 0, 0, "", false
		}
	}
	return start, count, s, true
}

func parseNum(s string) (int, string, bool) {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	n, err := strconv.Atoi(s[:i])
	return n, s[i:], err == nil
}
