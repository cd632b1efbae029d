// Package gitfilestest builds git repositories for tests of code that
// lists a directory's tracked files.
package gitfilestest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Git runs git with args in dir (no shell), failing t on error. It skips t
// when git is not installed.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("git %v: %v %s", args, err, msg)
	}
	return string(out)
}

// PromisorRepo builds, under a temporary directory, a repository named
// name whose own config would run a command if git fetched anything: a
// sparse index whose directory "out" has lost its tree, and a promisor
// remote whose upload-pack command creates the file marker before
// running git-upload-pack. Listing the index the naive way
// (git ls-files --cached, which expands the sparse directory) fetches the
// missing tree and so creates marker. files are committed besides
// in/a.txt and out/b.txt.
func PromisorRepo(t testing.TB, name string, files map[string]string) (dir, marker string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, name)
	marker = filepath.Join(base, "pwned")
	for _, d := range []string{dir, filepath.Join(base, "remote")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		Git(t, d, "init", "-q")
	}
	all := map[string]string{"in/a.txt": "needle inside\n", "out/b.txt": "needle outside\n"}
	for p, c := range files {
		all[p] = c
	}
	for p, c := range all {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "-m", "init")
	tree := Git(t, dir, "rev-parse", "HEAD:out")
	tree = tree[:len(tree)-1]
	Git(t, dir, "sparse-checkout", "init", "--cone", "--sparse-index")
	Git(t, dir, "sparse-checkout", "set", "in")
	if err := os.Remove(filepath.Join(dir, ".git", "objects", tree[:2], tree[2:])); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "config", "remote.origin.url", filepath.Join(base, "remote"))
	Git(t, dir, "config", "remote.origin.promisor", "true")
	Git(t, dir, "config", "extensions.partialClone", "origin")
	Git(t, dir, "config", "remote.origin.uploadpack", "touch "+marker+"; git-upload-pack")
	Git(t, dir, "config", "core.fsmonitor", "touch "+marker+".fsmonitor")
	Git(t, dir, "config", "core.hooksPath", filepath.Join(base, "hooks"))
	return dir, marker
}

// Naive lists dir's files as git ls-files --cached would with no
// hardening beyond core.fsmonitor=false: it proves that PromisorRepo's
// repository runs its command (so a test that it does not is meaningful).
func Naive(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command("git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--cached")
	cmd.Dir = dir
	cmd.Run()
}
