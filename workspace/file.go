package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
)

// Code says why a file cannot be answered for. The values are stable: they
// reach clients as the error_code of an ERROR envelope.
type Code string

// Codes of file guards.
const (
	CodeFileNotFound   Code = "file_not_found"
	CodeIsDirectory    Code = "is_directory"
	CodeFileUnreadable Code = "file_unreadable"
)

// Error is why a file of a repository cannot be answered for.
type Error struct {
	Code Code
	Path string // the file, slash-separated, relative to the repository's root
	Msg  string
	Err  error // the file system's error, when there is one
}

func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return e.Path + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// CheckFile reports whether the file name under root changed after
// indexedAt, judging a symlink by its target: a stale file must be answered
// from disk, not from the index. A missing file or a directory is a
// *Error.
func CheckFile(root *os.Root, name string, indexedAt time.Time) (stale bool, err error) {
	st, err := root.Stat(name) // follows symlinks, within root
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, &Error{Code: CodeFileNotFound, Path: name, Msg: "no such file in the repository", Err: err}
	case err != nil:
		return false, &Error{Code: CodeFileUnreadable, Path: name, Msg: err.Error(), Err: err}
	case st.IsDir():
		return false, &Error{Code: CodeIsDirectory, Path: name, Msg: "a directory, not a file"}
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
func GuardFile(root *os.Root, name string, st *envelope.IndexStatus, fromIndex func() (string, error), maxBytes int64) envelope.Result[File] {
	var indexedAt time.Time
	if st != nil {
		indexedAt = st.LastIndexedAt
	}
	stale, err := CheckFile(root, name, indexedAt)
	if err != nil {
		var fe *Error
		errors.As(err, &fe)
		return envelope.Error[File](string(fe.Code), fe.Error(), envelope.WithIndexStatus(st))
	}
	if !stale && fromIndex != nil {
		content, err := fromIndex()
		if err == nil {
			return envelope.OK([]File{{Path: name, Content: content}}, envelope.WithIndexStatus(st))
		}
	}
	f, err := root.Open(name)
	if err != nil {
		return envelope.Error[File](string(CodeFileUnreadable), fmt.Sprintf("%s: %v", name, err), envelope.WithIndexStatus(st))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes))
	if err != nil {
		return envelope.Error[File](string(CodeFileUnreadable), fmt.Sprintf("%s: %v", name, err), envelope.WithIndexStatus(st))
	}
	msg := name + " changed after it was indexed: read from disk"
	if !stale {
		msg = name + ": not in the index: read from disk"
	}
	return envelope.Fallback([]File{{Path: name, Content: string(bytes.ToValidUTF8(data, []byte("\uFFFD")))}},
		envelope.WithIndexStatus(st), envelope.WithMessage(msg))
}
