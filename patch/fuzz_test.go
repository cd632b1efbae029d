package patch

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParse(f *testing.F) {
	for _, c := range loadMatrix(f) {
		f.Add(c.Diff)
	}
	f.Add("@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n")
	f.Add("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- a\n+++ b\n")
	f.Fuzz(func(t *testing.T, diff string) {
		p, err := Parse(diff)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		if len(p.Hunks) == 0 {
			t.Fatal("parsed a diff without hunks")
		}
		for i, h := range p.Hunks {
			changes := 0
			for _, l := range h.Lines {
				switch l.Op {
				case Context:
				case Delete, Insert:
					changes++
				default:
					t.Fatalf("hunk %d: op %q", i, l.Op)
				}
				if strings.ContainsAny(l.Text, "\n") {
					t.Fatalf("hunk %d: line %q holds a newline", i, l.Text)
				}
			}
			if changes == 0 {
				t.Fatalf("hunk %d changes nothing", i)
			}
		}
	})
}

// FuzzApply applies arbitrary diffs to arbitrary targets: no panic, a
// Noop changes nothing, and what comes out is text.
func FuzzApply(f *testing.F) {
	for _, c := range loadMatrix(f) {
		f.Add(*c.File, c.Diff)
	}
	f.Fuzz(func(t *testing.T, src, diff string) {
		p, err := Parse(diff)
		if err != nil {
			return
		}
		res, err := Apply([]byte(src), p)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		if len(res.Hunks) != len(p.Hunks) {
			t.Fatalf("%d hunk results for %d hunks", len(res.Hunks), len(p.Hunks))
		}
		if res.Status == Noop && string(res.Content) != src {
			t.Fatal("a Noop changed the content")
		}
		if bytes.IndexByte(res.Content, 0) >= 0 || !utf8.Valid(res.Content) {
			t.Fatal("the result is not text")
		}
		// Into a buffer used before (and with the target tables kept
		// from the calls before), the result is the same.
		into, err := ApplyInto(fuzzBuf[:0], []byte(src), p)
		if err != nil || into.Status != res.Status || !bytes.Equal(into.Content, res.Content) {
			t.Fatalf("ApplyInto: %v, %v %q; Apply: %v %q", err, into.Status, into.Content, res.Status, res.Content)
		}
		if res.Status == Applied && cap(into.Content) > cap(fuzzBuf) {
			fuzzBuf = into.Content // a larger buffer for the next inputs
		}
	})
}

// fuzzBuf is the buffer FuzzApply hands ApplyInto, input after input.
var fuzzBuf = make([]byte, 0, 256)

// FuzzApplyExact builds a correct diff for one edit of a target (delete
// del lines at line at, insert ins) and checks that applying it gives the
// edited target exactly.
func FuzzApplyExact(f *testing.F) {
	f.Add(defaultTarget, uint8(9), uint8(1), "\treturn -(b - a)", uint8(3))
	f.Add("a\nb\nc\n", uint8(0), uint8(0), "z", uint8(1))
	f.Add("a\r\nb\r\n", uint8(2), uint8(0), "c", uint8(0))
	f.Add("x\n\n\ny\n", uint8(1), uint8(2), "", uint8(2))
	f.Fuzz(func(t *testing.T, src string, at, del uint8, ins string, ctx uint8) {
		if strings.ContainsAny(src, "\x00\r") || strings.ContainsAny(ins, "\x00\r") || !utf8.ValidString(src) || !utf8.ValidString(ins) {
			return
		}
		if src != "" && !strings.HasSuffix(src, "\n") {
			src += "\n"
		}
		var lines []string
		if src != "" {
			lines = strings.Split(strings.TrimSuffix(src, "\n"), "\n")
		}
		n := len(lines)
		a := min(int(at), n)
		d := min(int(del), n-a)
		var insLines []string
		if ins != "" {
			insLines = strings.Split(ins, "\n")
		}
		if d == 0 && len(insLines) == 0 {
			return
		}
		c := int(ctx % 4)
		from, to := max(a-c, 0), min(a+d+c, n)
		var b strings.Builder
		oldLen, newLen := to-from, to-from-d+len(insLines)
		oldStart, newStart := from+1, from+1
		if oldLen == 0 {
			oldStart = from
		}
		if newLen == 0 {
			newStart = from
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", oldStart, oldLen, newStart, newLen)
		for _, l := range lines[from:a] {
			b.WriteString(" " + l + "\n")
		}
		for _, l := range lines[a : a+d] {
			b.WriteString("-" + l + "\n")
		}
		for _, l := range insLines {
			b.WriteString("+" + l + "\n")
		}
		for _, l := range lines[a+d : to] {
			b.WriteString(" " + l + "\n")
		}
		parts := append(append(append([]string{}, lines[:a]...), insLines...), lines[a+d:]...)
		want := strings.Join(parts, "\n")
		if len(parts) > 0 {
			want += "\n"
		}
		p, err := Parse(b.String())
		if err != nil {
			t.Fatalf("Parse(%q): %v", b.String(), err)
		}
		// The hunk's new side: when the target already holds it, the
		// diff may rightly be read as already applied (Noop), or as both
		// applied and not (ambiguous).
		newSide := append(append(append([]string{}, lines[from:a]...), insLines...), lines[a+d:to]...)
		holdsNew := len(newSide) > 0 && strings.Contains("\n"+src, "\n"+strings.Join(newSide, "\n")+"\n")
		res, err := Apply([]byte(src), p)
		if err != nil {
			var pe *Error
			switch {
			case errors.As(err, &pe) && pe.Code == CodeNeedsContext && oldLen == 0 && n > 0:
				return // nothing in the target confirms where the lines go
			case errors.As(err, &pe) && pe.Code == CodeAmbiguous && holdsNew:
				return
			case errors.As(err, &pe) && pe.Code == CodeAmbiguous && indented(insLines) &&
				strings.HasSuffix(pe.Msg, "write the added lines with the file's indentation"):
				// Added lines indented against the file's convention,
				// with nothing in the diff that maps one onto the other,
				// are refused wherever the hunk is found (no mixed
				// indentation is written).
				return
			}
			t.Fatalf("Apply(%q, %q): %v", src, b.String(), err)
		}
		if oldLen == 0 && n > 0 {
			t.Fatalf("Apply(%q, %q) placed a hunk without old lines by its line number", src, b.String())
		}
		if res.Status == Noop {
			if want != src && !holdsNew {
				t.Fatalf("Noop, but the edit changes %q to %q and the target does not hold its new lines", src, want)
			}
			return
		}
		if string(res.Content) != want {
			t.Fatalf("Apply(%q, %q) = %q, want %q", src, b.String(), res.Content, want)
		}
	})
}

// indented reports whether a line of lines is indented: whitespace, then
// text.
func indented(lines []string) bool {
	for _, l := range lines {
		if w := len(l) - len(strings.TrimLeft(l, " \t")); w > 0 && w < len(l) {
			return true
		}
	}
	return false
}
