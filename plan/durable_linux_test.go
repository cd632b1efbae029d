package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestApplyBatchedSync: a plan of at least syncfsMin files is made
// durable with a syncfs of its file system before and after the renames
// (through one directory per file system, opened before anything was
// written), one of fewer files with an fsync of each; both leave the
// planned tree, and a failing sync rolls everything back.
func TestApplyBatchedSync(t *testing.T) {
	if !syncfsReportsErrors() {
		t.Skip("this kernel's syncfs does not report writeback errors")
	}
	for _, n := range []int{1, syncfsMin} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			files, p := manyFilePlan(n)
			// 2n diffs, 2n files to sync.
			wantBatch := 2*n >= syncfsMin
			dir, root := tree(t, files)
			var steps []string
			opts := Options{Strategy: Write{}, hook: func(step, name string) error {
				if step == "syncfs" || step == "fsync" {
					steps = append(steps, step)
				}
				return nil
			}}
			rep, err := Apply(context.Background(), root, p, opts)
			if err != nil || !rep.Written {
				t.Fatalf("Apply: %v", err)
			}
			if got := slices.Contains(steps, "syncfs"); got != wantBatch || wantBatch && len(steps) != 2 || !wantBatch && len(steps) != 2*n {
				t.Fatalf("syncs %v with %d files", steps, 2*n)
			}
			for i := range n {
				name := fmt.Sprintf("a/%d/f%d.txt", i%3, i)
				if got, want := read(t, dir, name), fmt.Sprintf("line %d changed\nkeep\n", i); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			for _, name := range walk(t, dir) {
				if strings.Contains(name, ".ctxkit-") {
					t.Errorf("temporary file left: %s", name)
				}
			}

			// A sync that fails (the first one) leaves the tree as it was.
			dir, root = tree(t, files)
			before := walk(t, dir)
			injected := errors.New("I/O error")
			opts.hook = func(step, name string) error {
				if step == "syncfs" || step == "fsync" {
					return injected
				}
				return nil
			}
			rep, err = Apply(context.Background(), root, p, opts)
			if !errors.Is(err, injected) || rep.Written || rep.RollbackIncomplete {
				t.Fatalf("failing sync: %v", err)
			}
			if got := walk(t, dir); !slices.Equal(got, before) {
				t.Fatalf("tree after a failed sync:\n%v\nwant\n%v", got, before)
			}
			for name, content := range files {
				if read(t, dir, name) != content {
					t.Errorf("%s changed", name)
				}
			}
		})
	}
}
