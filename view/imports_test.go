package view_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports guards the seam: view is a leaf library. It may not reach into
// other ctxkit packages, the network, processes or the file system.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	forbidden := []string{"github.com/ctxkit/ctxkit/", "net/http", "os/exec", "database/sql"}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/ctxkit/ctxkit/view" || dep == "github.com/ctxkit/ctxkit/internal/tokencount" || dep == "github.com/ctxkit/ctxkit/internal/lru" || dep == "github.com/ctxkit/ctxkit/internal/canonjson" {
			continue
		}
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("view depends on %s", dep)
			}
		}
	}
}
