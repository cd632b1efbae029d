package plan

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSyncBatch: below the threshold nothing is done; from it, the files
// are synced with one syncfs and all but one per file system closed.
func TestSyncBatch(t *testing.T) {
	if !syncfsReportsErrors() {
		t.Skip("this kernel's syncfs does not report writeback errors")
	}
	dir := t.TempDir()
	var files []staged
	for i := range 5 {
		f, err := os.Create(filepath.Join(dir, string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, staged{f: f, name: f.Name()})
	}
	if ok, err := syncBatch(files, 6); ok || err != nil {
		t.Fatalf("below the threshold: %v, %v", ok, err)
	}
	for _, s := range files {
		if s.f == nil {
			t.Fatal("a file was closed below the threshold")
		}
	}
	if ok, err := syncBatch(files, 5); !ok || err != nil {
		t.Fatalf("at the threshold: %v, %v", ok, err)
	}
	open := 0
	for _, s := range files {
		if s.f != nil {
			open++
		}
	}
	if open != 1 {
		t.Fatalf("%d files left open, want 1 (one file system)", open)
	}
	if ok, err := syncBatch(files, 1); !ok || err != nil {
		t.Fatalf("again: %v, %v", ok, err)
	}
}
