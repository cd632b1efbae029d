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
