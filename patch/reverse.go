package patch

import (
	"bytes"
	"fmt"
	"strconv"
)

// Reverse is the diff that undoes f: its inserted and deleted lines
// swapped, its header ranges and file names swapped (so a new file's diff
// becomes a deletion and the other way round). f is not changed.
func Reverse(f *File) *File {
	r := &File{OldName: f.NewName, NewName: f.OldName, Hunks: make([]Hunk, len(f.Hunks))}
	for i, h := range f.Hunks {
		rh := h
		rh.OldStart, rh.NewStart = h.NewStart, h.OldStart
		rh.OldLines, rh.NewLines = h.NewLines, h.OldLines
		if h.Numbered {
			rh.Header = "@@ -" + span(rh.OldStart, rh.OldLines) + " +" + span(rh.NewStart, rh.NewLines) + " @@"
		}
		rh.Lines = make([]Line, len(h.Lines))
		for j, l := range h.Lines {
			switch l.Op {
			case Insert:
				l.Op = Delete
			case Delete:
				l.Op = Insert
			}
			rh.Lines[j] = l
		}
		r.Hunks[i] = rh
	}
	return r
}

func span(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(n)
}

// exactBudget bounds the line comparisons ApplyExact makes for one hunk,
// as hunkBudget does for Apply.
const exactBudget = 1 << 23

// ApplyExact applies f to src with no leniency at all: each hunk's old
// lines must stand in src exactly as written (only the line ending, LF or
// CRLF, may differ), in the diff's order, without overlapping. Among the
// places where a hunk's old lines stand, the one nearest its header's line
// is taken; a hunk without old lines (a pure insertion) goes exactly where
// its header says. A new-file diff needs src empty, and a deletion leaves
// nothing. Inserted lines take the target's line ending; the last line
// keeps the target's final-newline state unless a "\ No newline" marker
// says otherwise.
//
// It is the check of an exact result, not a way to place model-written
// hunks (that is Apply): ctxkit uses it with Reverse to recover the
// content a diff was applied to, and trusts the outcome only once it has
// compared its checksum.
func ApplyExact(src []byte, f *File) ([]byte, error) {
	if len(src) > MaxTarget {
		return nil, &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the target is %d bytes, more than %d", len(src), MaxTarget)}
	}
	if f.IsNew() && len(src) > 0 {
		return nil, &Error{Code: CodeNotFound, Msg: "the diff creates the file, but the target is not empty"}
	}
	t := newTarget(src, nil)
	eol := "\n"
	if e, _ := t.eol(); e != "" {
		eol = e
	}
	var out bytes.Buffer
	out.Grow(len(src))
	next := 0 // the first line of src not yet copied
	for hi := range f.Hunks {
		h := &f.Hunks[hi]
		var old []Line
		for _, l := range h.Lines {
			if l.Op != Insert {
				old = append(old, l)
			}
		}
		at, err := exactPlace(&t, h, old, next)
		if err != nil {
			err.Hunk, err.Path, err.Line = hi+1, hunkPath(hi), h.Pos
			return nil, err
		}
		out.Write(src[t.starts[next]:t.starts[at]])
		end := at + len(old)
		// The file's last line, when the hunk ends there without a
		// marker, keeps its missing newline.
		keepNoEOL := end == t.n && end > at && len(src) > 0 && src[len(src)-1] != '\n'
		var news []Line
		for _, l := range h.Lines {
			if l.Op != Delete {
				news = append(news, l)
			}
		}
		for j, l := range news {
			out.WriteString(l.Text)
			last := j == len(news)-1
			switch {
			case l.NoEOL:
			case last && keepNoEOL && !anyNoEOL(h.Lines):
			case l.CR:
				out.WriteString("\r\n")
			default:
				out.WriteString(eol)
			}
		}
		next = end
	}
	out.Write(src[t.starts[next]:])
	if f.IsDelete() && out.Len() > 0 {
		return nil, &Error{Code: CodeNotFound, Msg: fmt.Sprintf("the diff deletes the file, but %d bytes of it are not in the diff", out.Len())}
	}
	return out.Bytes(), nil
}

func anyNoEOL(ls []Line) bool {
	for _, l := range ls {
		if l.NoEOL {
			return true
		}
	}
	return false
}

// exactPlace is the line of t where old, the old lines of h, stand
// exactly, at or after line from: the nearest to the header's line.
func exactPlace(t *target, h *Hunk, old []Line, from int) (int, *Error) {
	hint := from
	if h.Numbered {
		hint = h.OldStart - 1
		if h.OldLines == 0 {
			// "-5,0" is an empty range after line 5.
			hint = h.OldStart
		}
	}
	if len(old) == 0 {
		if !h.Numbered || hint < from || hint > t.n {
			return 0, &Error{Code: CodeNotFound, Msg: "an insertion without context goes only where its header says, and that line is not in the file"}
		}
		return hint, nil
	}
	last := t.n - len(old) // the last line a match may start at
	if last < from {
		return 0, &Error{Code: CodeNotFound, Msg: "its old lines are not in the file"}
	}
	hint = min(max(hint, from), last)
	budget := exactBudget
	for d := 0; hint-d >= from || hint+d <= last; d++ {
		places := [2]int{hint - d, hint + d}
		n := 2
		if d == 0 {
			n = 1
		}
		for _, at := range places[:n] {
			if at < from || at > last {
				continue
			}
			ok, cost := exactAt(t, old, at)
			if ok {
				return at, nil
			}
			if budget -= cost; budget <= 0 {
				return 0, &Error{Code: CodeTooLarge, Msg: "too many near copies of its old lines to search"}
			}
		}
	}
	return 0, &Error{Code: CodeNotFound, Msg: "its old lines are not in the file"}
}

// exactAt reports whether old stands at line at of t, and the number of
// lines compared.
func exactAt(t *target, old []Line, at int) (bool, int) {
	for i, l := range old {
		n := at + i
		if string(t.line(n)) != l.Text {
			return false, i + 1
		}
		if l.NoEOL && n != t.n-1 {
			return false, i + 1
		}
		if l.NoEOL && len(t.src) > 0 && t.src[len(t.src)-1] == '\n' {
			return false, i + 1
		}
	}
	return true, len(old)
}
