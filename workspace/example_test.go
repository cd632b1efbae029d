package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/workspace"
)

// Route trusts a repository's index only while the commit it indexed is
// the one HEAD names: after a new commit, a search must read the files on
// disk instead.
func ExampleRoute() {
	dir, err := os.MkdirTemp("", "repo")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	const indexed = "0123456789abcdef0123456789abcdef01234567"
	head := func(commit string) { os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte(commit+"\n"), 0o644) }
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	head(indexed)

	root, err := os.OpenRoot(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer root.Close()
	// What 'ctxkit index' writes when it is done.
	err = workspace.WriteStatus(root, envelope.IndexStatus{Repo: "shop", IndexState: envelope.IndexFresh,
		LastIndexedAt: time.Now(), LastIndexedCommit: indexed, SchemaVersion: workspace.SchemaVersion})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := workspace.Route(dir)
	fmt.Println(d.UseIndex, d.Freshness)

	head("fedcba9876543210fedcba9876543210fedcba98") // a new commit
	d = workspace.Route(dir)
	fmt.Println(d.UseIndex, d.Freshness, d.Reason)
	// Output:
	// true FRESH
	// false STALE HEAD is fedcba987654; the index is of 0123456789ab
}

// Withheld names the files a walk of a directory that is not a git
// repository leaves out: dot-files and names that usually hold secrets.
func ExampleWithheld() {
	for _, name := range []string{"main.go", ".env", "config/.npmrc", "certs/server.pem", "docs/key.md"} {
		fmt.Println(name, workspace.Withheld(name))
	}
	// Output:
	// main.go false
	// .env true
	// config/.npmrc true
	// certs/server.pem true
	// docs/key.md false
}
