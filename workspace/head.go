package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// readHead returns the commit the repository's HEAD names, reading .git under
// root without running git: a detached HEAD, or a symbolic ref followed
// through loose refs and packed-refs. A .git file (a linked worktree or a
// submodule) points outside root and is reported as unknown.
func readHead(root *os.Root) (string, error) {
	st, err := root.Stat(".git")
	if err != nil {
		return "", errors.New("not a git repository")
	}
	if !st.IsDir() {
		return "", errors.New(".git is a file (a linked worktree or submodule), whose git directory is outside the repository")
	}
	ref := "HEAD"
	for range 10 { // a chain of symbolic refs, bounded
		data, err := readSmall(root, path.Join(".git", ref))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err == nil {
			line := strings.TrimSpace(string(data))
			if target, ok := strings.CutPrefix(line, "ref:"); ok {
				next := strings.TrimSpace(target)
				if !validRef(next) {
					return "", fmt.Errorf("%s names %q, not a ref", ref, next)
				}
				ref = next
				continue
			}
			if isCommit(line) {
				return strings.ToLower(line), nil
			}
			return "", fmt.Errorf("%s holds %q, not a commit", ref, short(line))
		}
		if ref == "HEAD" {
			return "", errors.New("no .git/HEAD")
		}
		return packedRef(root, ref)
	}
	return "", errors.New("symbolic refs nest too deeply")
}

func packedRef(root *os.Root, ref string) (string, error) {
	f, err := root.Open(".git/packed-refs")
	if err != nil {
		return "", fmt.Errorf("%s: no such ref (an unborn branch?)", ref)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		sha, name, ok := strings.Cut(line, " ")
		if ok && name == ref && isCommit(sha) {
			return strings.ToLower(sha), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no such ref (an unborn branch?)", ref)
}

func readSmall(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

func validRef(r string) bool {
	return strings.HasPrefix(r, "refs/") && !strings.Contains(r, "..") && !strings.ContainsAny(r, "\\\x00") &&
		path.Clean(r) == r
}

// isCommit reports whether s is a SHA-1 or SHA-256 object name.
func isCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
