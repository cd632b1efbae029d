package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/ctxkit/ctxkit/envelope"
)

// StatusFile is where an indexer writes a repository's IndexStatus,
// relative to the repository's root. The directory also holds a .gitignore
// that keeps it out of the repository.
const StatusFile = ".ctxkit/index.json"

// SchemaVersion is the version of the index layout this ctxkit writes
// (breadcrumbs of schema file.v1).
const SchemaVersion = 1

// ReadStatus reads StatusFile under root.
func ReadStatus(root *os.Root) (*envelope.IndexStatus, error) {
	data, err := readIndexFile(root, StatusFile, "index status", 1<<20)
	if err != nil {
		return nil, err
	}
	var st envelope.IndexStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("index status %s: %w", StatusFile, err)
	}
	return &st, nil
}

// WriteStatus writes st to StatusFile under root, atomically (a temporary
// file renamed into place), with a .gitignore beside it.
func WriteStatus(root *os.Root, st envelope.IndexStatus) error {
	if err := ensureDir(root); err != nil {
		return err
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeIndexFile(root, StatusFile, append(data, '\n'))
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

// readIndexFile reads at most n bytes of name (StatusFile or
// ManifestFile) under root; what names the file in the errors, and a
// missing one says how to make it.
func readIndexFile(root *os.Root, name, what string, n int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("the repository has no " + what + " (run ctxkit index)")
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return data, nil
}

// writeIndexFile writes data to name under root atomically: a temporary
// file renamed into place, so a reader never sees half of one.
func writeIndexFile(root *os.Root, name string, data []byte) error {
	tmp := name + ".tmp"
	if err := root.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}
