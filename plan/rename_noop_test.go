package plan

import (
	"context"
	"strings"
	"testing"
)

// TestPureRenameNotTakenForApplied: a rename without changes (git's
// "similarity index 100%") whose source is gone is reported a no-op
// whose warning says the target "holds the diff's result", whatever the
// target holds: nothing was compared. A file of other content must not
// be taken for the renamed one (refuse, or say that it could not be
// checked, and not noop).
func TestPureRenameNotTakenForApplied(t *testing.T) {
	dir, root := tree(t, map[string]string{"new.go": "package unrelated\n"})
	p := "diff --git a/old.go b/new.go\nsimilarity index 100%\nrename from old.go\nrename to new.go\n"
	rep, err := ApplyPatch(context.Background(), root, []byte(p), StripDetect, Options{Strategy: Write{}})
	if err == nil && rep.Diffs[0].Status == StatusNoop && strings.Contains(strings.Join(rep.Diffs[0].Warnings, " "), "holds the diff's result") {
		t.Fatalf("reported %s %q for a target nothing was compared with", rep.Diffs[0].Status, rep.Diffs[0].Warnings)
	}
	if read(t, dir, "new.go") != "package unrelated\n" {
		t.Fatal("new.go was changed")
	}
}
