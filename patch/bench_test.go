package patch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// bigTarget is a source-like file of n lines, all distinct, and a diff
// changing it in a few places that applies exactly.
func bigTarget(n int) (src []byte, diff string) {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\tresult%d := compute(%d, \"arg\")\n", i, i*7)
	}
	src = []byte(b.String())
	var d strings.Builder
	d.WriteString("--- a/big.go\n+++ b/big.go\n")
	for _, at := range []int{10, n / 3, n / 2, n - 5} {
		fmt.Fprintf(&d, "@@ -%d,7 +%d,7 @@\n", at-2, at-2)
		for i := at - 3; i < at; i++ {
			fmt.Fprintf(&d, " \tresult%d := compute(%d, \"arg\")\n", i, i*7)
		}
		fmt.Fprintf(&d, "-\tresult%d := compute(%d, \"arg\")\n", at, at*7)
		fmt.Fprintf(&d, "+\tresult%d := compute(%d, \"changed\")\n", at, at*7)
		for i := at + 1; i < at+4; i++ {
			fmt.Fprintf(&d, " \tresult%d := compute(%d, \"arg\")\n", i, i*7)
		}
	}
	return src, d.String()
}

// applyBytes is the bytes Parse and Apply allocate per run on the exact
// path, measured over runs.
func applyBytes(t testing.TB, src []byte, diff string, runs int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f, err := Parse(diff)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Apply(src, f)
		if err != nil || res.Hunks[0].Match.Pass != PassExact {
			t.Fatalf("Apply: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)
}

// TestExactPathAllocation pins the allocation bound of the exact path: no
// more than twice the file's size per diff (the line index and the new
// content).
func TestExactPathAllocation(t *testing.T) {
	for _, n := range []int{200, 5000, 50000} {
		src, diff := bigTarget(n)
		perRun := applyBytes(t, src, diff, 10)
		if ratio := perRun / float64(len(src)); ratio > 2 {
			t.Errorf("%d lines (%d bytes): %.0f bytes allocated per diff, %.2f per file byte; the bound is 2", n, len(src), perRun, ratio)
		} else {
			t.Logf("%d lines (%d bytes): %.2f bytes allocated per file byte", n, len(src), ratio)
		}
	}
}

// BenchmarkApplyExact applies a four-hunk diff to a 20 000-line file on
// the exact path; alloc-bytes/file-byte is the allocation per byte of the
// target.
func BenchmarkApplyExact(b *testing.B) {
	src, diff := bigTarget(20000)
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runs := 0
	for b.Loop() {
		f, err := Parse(diff)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Apply(src, f); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(runs)/float64(len(src)), "alloc-bytes/file-byte")
}

// BenchmarkApplyFuzz is the loosest path: every hunk needs context
// trimmed, so every pass runs first.
func BenchmarkApplyFuzz(b *testing.B) {
	src, diff := bigTarget(20000)
	diff = strings.ReplaceAll(diff, " @@\n \tresult", " @@\n \tstale")
	f, err := Parse(diff)
	if err != nil {
		b.Fatal(err)
	}
	if res, err := Apply(src, f); err != nil || res.Hunks[0].Match.Pass != PassFuzz {
		b.Fatalf("Apply: %v %+v", err, res)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Apply(src, f); err != nil {
			b.Fatal(err)
		}
	}
}
