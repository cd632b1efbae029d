package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkDryRunMany is the work of `ctxkit apply --dry-run` on the
// start-up benchmark's plan (cmd/ctxkit BenchmarkStartup) inside one
// process: parsing the plan of 100 one-hunk diffs, reading and hashing
// the files, placing and applying each hunk. Its allocations are what
// the whole process pays in fresh heap pages after start-up.
func BenchmarkDryRunMany(b *testing.B) {
	dir := b.TempDir()
	p := &Plan{}
	for i := range 100 {
		name := fmt.Sprintf("pkg%02d/file%03d.go", i%10, i)
		var before strings.Builder
		fmt.Fprintf(&before, "package pkg%02d\n\n", i%10)
		for j := range 120 {
			fmt.Fprintf(&before, "func f%d_%d(x int) int {\n\treturn x + %d\n}\n\n", i, j, j)
		}
		lines := strings.SplitAfter(before.String(), "\n")
		const at = 2 + 4*50 + 1
		var d strings.Builder
		fmt.Fprintf(&d, "--- a/%s\n+++ b/%s\n@@ -%d,7 +%d,7 @@\n", name, name, at-2, at-2)
		for k := at - 3; k <= at+3; k++ {
			if k == at {
				d.WriteString("-" + lines[k] + "+" + strings.Replace(lines[k], "return x +", "return x -", 1))
				continue
			}
			d.WriteString(" " + lines[k])
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(before.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		p.Diffs = append(p.Diffs, Diff{Path: name, Checksum: Checksum([]byte(before.String())), UnifiedDiff: d.String()})
	}
	raw, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	b.ReportAllocs()
	for b.Loop() {
		q, err := Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Apply(context.Background(), root, q, Options{Strategy: DryRun{}})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Diffs[99].Status != StatusApplied {
			b.Fatalf("diff 99: %+v", rep.Diffs[99])
		}
	}
}
