package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/plan"
)

// A plan parsed strictly, tried with a dry run, then written: each diff's
// checksum is checked against the file before anything is written.
func ExampleApply() {
	dir, err := os.MkdirTemp("", "plan-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	before := []byte("greeting = hello\n")
	if err := os.WriteFile(filepath.Join(dir, "app.conf"), before, 0o644); err != nil {
		fmt.Println(err)
		return
	}
	doc, _ := json.Marshal(map[string]any{"diffs": []map[string]string{{
		"path":         "app.conf",
		"checksum":     plan.Checksum(before),
		"unified_diff": "--- a/app.conf\n+++ b/app.conf\n@@ -1 +1 @@\n-greeting = hello\n+greeting = hello, world\n",
	}}})
	p, err := plan.Parse(doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer root.Close()
	for _, s := range []plan.Strategy{plan.DryRun{}, plan.Write{}} {
		rep, err := plan.Apply(context.Background(), root, p, plan.Options{Strategy: s})
		if err != nil {
			fmt.Println(err)
			return
		}
		d := rep.Diffs[0]
		fmt.Println(rep.Strategy, d.Path, d.Status, d.Hunks[0].Match, rep.Written)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "app.conf"))
	fmt.Print(string(after))
	// Output:
	// dry-run app.conf applied exact false
	// write app.conf applied exact true
	// greeting = hello, world
}

// A plan that reaches outside its root is refused with a typed error: its
// code, its place in the plan (Path) and the file it names (File).
func ExampleError() {
	_, err := plan.Parse([]byte(`{"diffs":[{"path":"../etc/passwd","checksum":"` +
		plan.Checksum(nil) + `","unified_diff":"@@ -1 +1 @@\n-a\n+b\n"}]}`))
	var e *plan.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Path, e.File)
		fmt.Println(err)
	}
	// Output:
	// path_rejected diffs[0].path ../etc/passwd
	// diffs[0].path (../etc/passwd): must stay inside the root (no "..")
}
