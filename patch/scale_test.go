package patch

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// manyHunks is a target of n distinct lines and a diff changing every
// step-th line, each hunk with three context lines per side, and the
// content the diff gives.
func manyHunks(n, step int) (src []byte, diff string, want string) {
	line := func(i int) string { return fmt.Sprintf("\tresult%d := compute(%d, \"arg\")", i, i*7) }
	var b, w, d strings.Builder
	d.WriteString("--- a/big.go\n+++ b/big.go\n")
	for i := range n {
		b.WriteString(line(i) + "\n")
		if i%step == step/2 && i >= 3 && i+3 < n {
			w.WriteString(line(i) + " // changed\n")
			fmt.Fprintf(&d, "@@ -%d,7 +%d,7 @@\n", i-2, i-2)
			for j := i - 3; j < i; j++ {
				d.WriteString(" " + line(j) + "\n")
			}
			d.WriteString("-" + line(i) + "\n+" + line(i) + " // changed\n")
			for j := i + 1; j <= i+3; j++ {
				d.WriteString(" " + line(j) + "\n")
			}
		} else {
			w.WriteString(line(i) + "\n")
		}
	}
	return []byte(b.String()), d.String(), w.String()
}

// TestManyHunks: a long target with many hunks applies, each hunk's search
// bounded on its own, and the diff applied again is a Noop.
func TestManyHunks(t *testing.T) {
	for _, c := range []struct{ lines, hunks int }{{100000, 1000}, {20000, 5000}} {
		src, diff, want := manyHunks(c.lines, c.lines/c.hunks)
		f, err := Parse(diff)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Hunks) < c.hunks-2 {
			t.Fatalf("%d hunks, want %d", len(f.Hunks), c.hunks)
		}
		res, err := Apply(src, f)
		if err != nil {
			t.Fatalf("%d lines, %d hunks: %v", c.lines, len(f.Hunks), err)
		}
		if string(res.Content) != want {
			t.Fatalf("%d lines, %d hunks: wrong content", c.lines, len(f.Hunks))
		}
		again, err := Apply(res.Content, f)
		if err != nil || again.Status != Noop {
			t.Fatalf("%d lines, %d hunks, applied again: %v %v", c.lines, len(f.Hunks), err, again)
		}
	}
}

// TestSearchBudget: a hunk whose every line the target repeats thousands
// of times, with no place where they all match, gives up with too_large
// and says why.
func TestSearchBudget(t *testing.T) {
	var b strings.Builder
	for i := range 200000 {
		if i%40 != 39 {
			b.WriteString("\tx := 1\n")
		} else {
			b.WriteString("\ty := 2\n")
		}
	}
	b.WriteString("unique first line\nunique second line\n")
	var d strings.Builder
	d.WriteString("@@ -1,40 +1,40 @@\n")
	for range 40 {
		d.WriteString(" \tx := 1\n")
	}
	d.WriteString("-\tx := 1\n+\tz := 3\n")
	f, err := Parse(d.String())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply([]byte(b.String()), f)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != CodeTooLarge || !strings.Contains(pe.Msg, "in too many places") {
		t.Fatalf("got %v, want too_large", err)
	}
}
