package layers

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestPackageMap holds the README's package map to the tree: every package
// of the module has a row, and every row names a path that exists.
func TestPackageMap(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Package map\n")
	if !ok {
		t.Fatal("README.md has no \"## Package map\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	listed := map[string]bool{}
	cell := regexp.MustCompile("`([^`]+)`")
	for line := range strings.Lines(section) {
		first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		if !ok || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			p := strings.TrimSuffix(m[1], "/")
			listed[p] = true
			if _, err := os.Stat("../../" + p); err != nil {
				t.Errorf("README package map names %s, which does not exist", p)
			}
		}
	}
	for _, p := range list(t) {
		if !listed[p.path] {
			t.Errorf("README package map has no row for %s", p.path)
		}
	}
}
