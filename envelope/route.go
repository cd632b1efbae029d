package envelope

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// StatusFile is where an indexer writes a repository's IndexStatus,
// relative to the repository's root. The directory also holds a .gitignore
// that keeps it out of the repository.
const StatusFile = ".ctxkit/index.json"

// SchemaVersion is the version of the index layout this ctxkit writes
// (breadcrumbs of schema file.v1).
const SchemaVersion = 1

// Decision is Route's answer.
type Decision struct {
	UseIndex  bool         // the index may answer
	Freshness Freshness    // FRESH only when UseIndex
	Status    *IndexStatus // nil when there is no readable status
	Head      string       // the commit HEAD names, when known
	Reason    string       // why the index is not used
}

// Route decides whether the index of the repository at repoDir may answer:
// only when its status says fresh and the commit it indexed is the one HEAD
// names now. A status of another schema version (an older or newer ctxkit
// wrote it) is not used and its freshness is UNKNOWN: this ctxkit cannot
// tell what such an index holds. It reads repoDir through an os.Root, never
// outside it.
func Route(repoDir string) Decision {
	root, err := os.OpenRoot(repoDir)
	if err != nil {
		return Decision{Freshness: Unknown, Reason: "repository: " + err.Error()}
	}
	defer root.Close()
	return RouteIn(root)
}

// RouteIn is Route for a repository already opened as root.
func RouteIn(root *os.Root) Decision {
	st, err := ReadStatus(root)
	if err != nil {
		return Decision{Freshness: Unknown, Reason: err.Error()}
	}
	d := Decision{Status: st}
	if st.SchemaVersion != SchemaVersion {
		d.Freshness, d.Reason = Unknown, fmt.Sprintf("the index has schema version %d; this ctxkit reads version %d (run ctxkit index again)",
			st.SchemaVersion, SchemaVersion)
		return d
	}
	if st.IndexState != IndexFresh {
		d.Freshness, d.Reason = Stale, fmt.Sprintf("index state is %q", st.IndexState)
		return d
	}
	head, err := Head(root)
	d.Head = head
	switch {
	case err != nil:
		d.Freshness, d.Reason = Unknown, "git HEAD: "+err.Error()
	case st.LastIndexedCommit == "":
		d.Freshness, d.Reason = Unknown, "the index does not record a commit"
	case !strings.EqualFold(head, st.LastIndexedCommit):
		d.Freshness, d.Reason = Stale, fmt.Sprintf("HEAD is %s; the index is of %s", short(head), short(st.LastIndexedCommit))
	default:
		d.UseIndex, d.Freshness = true, Fresh
	}
	return d
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// ReadStatus reads StatusFile under root.
func ReadStatus(root *os.Root) (*IndexStatus, error) {
	f, err := root.Open(StatusFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("the repository has no index status (run ctxkit index)")
		}
		return nil, fmt.Errorf("index status: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("index status: %w", err)
	}
	var st IndexStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("index status %s: %w", StatusFile, err)
	}
	return &st, nil
}

// WriteStatus writes st to StatusFile under root, atomically (a temporary
// file renamed into place), with a .gitignore beside it.
func WriteStatus(root *os.Root, st IndexStatus) error {
	if err := ensureDir(root); err != nil {
		return err
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := StatusFile + ".tmp"
	if err := root.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return root.Rename(tmp, StatusFile)
}

// ensureDir creates the directory of StatusFile and ManifestFile, with a
// .gitignore that keeps it out of the repository.
func ensureDir(root *os.Root) error {
	dir := path.Dir(StatusFile)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ignore := path.Join(dir, ".gitignore")
	if _, err := root.Stat(ignore); errors.Is(err, fs.ErrNotExist) {
		if err := root.WriteFile(ignore, []byte("*\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Head returns the commit the repository's HEAD names, reading .git under
// root without running git: a detached HEAD, or a symbolic ref followed
// through loose refs and packed-refs. A .git file (a linked worktree or a
// submodule) points outside root and is reported as unknown.
func Head(root *os.Root) (string, error) {
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

// Error codes of file guards.
const (
	CodeFileNotFound   = "file_not_found"
	CodeIsDirectory    = "is_directory"
	CodeFileUnreadable = "file_unreadable"
)

// FileError is why a file cannot be answered for.
type FileError struct {
	Code string
	Path string
	Err  error
}

func (e *FileError) Error() string {
	switch e.Code {
	case CodeFileNotFound:
		return e.Path + ": no such file in the repository"
	case CodeIsDirectory:
		return e.Path + ": a directory, not a file"
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// CheckFile reports whether the file name under root changed after
// indexedAt, judging a symlink by its target: a stale file must be answered
// from disk, not from the index. A missing file or a directory is a
// *FileError.
func CheckFile(root *os.Root, name string, indexedAt time.Time) (stale bool, err error) {
	st, err := root.Stat(name) // follows symlinks, within root
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, &FileError{Code: CodeFileNotFound, Path: name, Err: err}
	case err != nil:
		return false, &FileError{Code: CodeFileUnreadable, Path: name, Err: err}
	case st.IsDir():
		return false, &FileError{Code: CodeIsDirectory, Path: name}
	}
	return st.ModTime().After(indexedAt), nil
}

// File is one file's content in a result.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// GuardFile answers for one file of an indexed repository: from the index
// (fromIndex) when the file has not changed since st.LastIndexedAt, an
// OK/FRESH result; read from disk when it has, a FALLBACK/STALE result; an
// ERROR result when it is missing, a directory, or cannot be read.
func GuardFile(root *os.Root, name string, st *IndexStatus, fromIndex func() (string, error), maxBytes int64) Result[File] {
	var indexedAt time.Time
	if st != nil {
		indexedAt = st.LastIndexedAt
	}
	stale, err := CheckFile(root, name, indexedAt)
	if err != nil {
		var fe *FileError
		errors.As(err, &fe)
		return Error[File](fe.Code, fe.Error(), WithIndexStatus(st))
	}
	if !stale && fromIndex != nil {
		content, err := fromIndex()
		if err == nil {
			return OK([]File{{Path: name, Content: content}}, WithIndexStatus(st))
		}
	}
	f, err := root.Open(name)
	if err != nil {
		return Error[File](CodeFileUnreadable, fmt.Sprintf("%s: %v", name, err), WithIndexStatus(st))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes))
	if err != nil {
		return Error[File](CodeFileUnreadable, fmt.Sprintf("%s: %v", name, err), WithIndexStatus(st))
	}
	msg := name + " changed after it was indexed: read from disk"
	if !stale {
		msg = name + ": not in the index: read from disk"
	}
	return Fallback([]File{{Path: name, Content: string(bytes.ToValidUTF8(data, []byte("\uFFFD")))}},
		WithIndexStatus(st), WithMessage(msg))
}
