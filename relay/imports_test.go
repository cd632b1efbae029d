package relay_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports guards the seam: relay builds on chat (and the shared token
// counter, and the JSON splitter chat reads with) alone among ctxkit's
// packages, and reaches for no network, processes or database.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	forbidden := []string{"github.com/ctxkit/ctxkit/", "net/http", "os/exec", "database/sql"}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/ctxkit/ctxkit/relay" || dep == "github.com/ctxkit/ctxkit/chat" || dep == "github.com/ctxkit/ctxkit/internal/tokencount" || dep == "github.com/ctxkit/ctxkit/internal/jsonscan" || dep == "github.com/ctxkit/ctxkit/internal/canonjson" {
			continue
		}
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("relay depends on %s", dep)
			}
		}
	}
}
