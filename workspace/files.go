package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/gitfiles"
)

// listFiles lists the repository's files: git ls-files when dir has a
// .git, else a walk of the tree (walked true) that leaves out what
// Withheld names. A .git that git cannot list is an error: a
// walk would take in ignored files (.env and the like).
func listFiles(ctx context.Context, dir string) (files []string, walked bool, err error) {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil || !errors.Is(err, fs.ErrNotExist) {
		listed, err := gitfiles.List(ctx, dir, gitfiles.Options{})
		if err != nil {
			return nil, false, fmt.Errorf("--repo has a .git but git cannot list its files (%w); fix the repository, or index a directory without .git", err)
		}
		for _, f := range listed {
			if !strings.HasPrefix(f, ".ctxkit/") {
				files = append(files, f)
			}
		}
		return files, false, nil
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if Withheld(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, rel)
		}
		return nil
	})
	return files, true, err
}

// readFileContext reads a file: its sha256 over all of it, its content cut
// at max bytes (on a character boundary), and whether it is text.
func readFileContext(root *os.Root, p string, max int64) (FileContext, bool, error) {
	f, err := root.Open(p)
	if err != nil {
		return FileContext{}, false, err
	}
	defer f.Close()
	h := sha256.New()
	var head bytes.Buffer
	n, err := io.Copy(h, io.TeeReader(f, &limitWriter{w: &head, n: max + 4}))
	if err != nil {
		return FileContext{}, false, err
	}
	data := head.Bytes()
	if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return FileContext{}, false, nil
	}
	truncated := int64(len(data)) > max
	if truncated {
		cut := int(max)
		for cut > 0 && !utf8.RuneStart(data[cut]) {
			cut--
		}
		data = data[:cut]
	}
	if !utf8.Valid(data) {
		return FileContext{}, false, nil
	}
	return FileContext{Path: p, Language: language(p), Size: n, SHA256: hex.EncodeToString(h.Sum(nil)),
		Content: string(data), Truncated: truncated}, true, nil
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w *bytes.Buffer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - int64(l.w.Len()); room > 0 {
		l.w.Write(p[:min(int64(len(p)), room)])
	}
	return len(p), nil
}

var languages = map[string]string{
	".go": "go", ".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "typescript",
	".jsx": "javascript", ".java": "java", ".kt": "kotlin", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
	".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift", ".scala": "scala", ".sh": "shell",
	".bash": "shell", ".sql": "sql", ".md": "markdown", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
	".html": "html", ".css": "css", ".proto": "protobuf", ".txt": "text", ".txtar": "txtar", ".xml": "xml",
}

func language(p string) string {
	if base := path.Base(p); base == "Makefile" || base == "Dockerfile" {
		return strings.ToLower(base)
	}
	return languages[strings.ToLower(path.Ext(p))]
}
