package gitfiles_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/gitfiles"
	"github.com/ctxkit/ctxkit/internal/testkit/gitfilestest"
)

// TestPromisorRepoRunsItsCommand: the fixture does run its command when
// listed naively, so the tests that it does not are meaningful.
func TestPromisorRepoRunsItsCommand(t *testing.T) {
	dir, marker := gitfilestest.PromisorRepo(t, "app", nil)
	gitfilestest.Naive(t, dir)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the naive listing did not run the remote's command: %v", err)
	}
}

// TestListRunsNothing: List lists a hostile repository's files without
// fetching, so its command never runs.
func TestListRunsNothing(t *testing.T) {
	dir, marker := gitfilestest.PromisorRepo(t, "app", map[string]string{"top.txt": "x\n"})
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere")) // an inherited GIT_* variable is ignored
	files, err := gitfiles.List(context.Background(), dir, gitfiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("listing ran the repository's upload-pack command")
	}
	if matches, _ := filepath.Glob(marker + "*"); len(matches) > 0 {
		t.Fatalf("listing ran a command of the repository: %v", matches)
	}
	if !slices.Contains(files, "in/a.txt") || !slices.Contains(files, "top.txt") {
		t.Fatalf("files: %v", files)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "/") {
			t.Fatalf("a directory entry listed: %v", files)
		}
	}
}

// TestListBounds: output beyond MaxBytes is an error, and not a git
// repository is an error.
func TestListBounds(t *testing.T) {
	dir, _ := gitfilestest.PromisorRepo(t, "app", nil)
	if _, err := gitfiles.List(context.Background(), dir, gitfiles.Options{MaxBytes: 4}); err == nil {
		t.Fatal("no error past MaxBytes")
	}
	if _, err := gitfiles.List(context.Background(), t.TempDir(), gitfiles.Options{Timeout: 5 * time.Second}); err == nil {
		t.Fatal("no error outside a repository")
	}
}
