package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ManifestFile is where an indexer records, per file, the breadcrumb it
// wrote, relative to the repository's root (beside StatusFile).
const ManifestFile = ".ctxkit/manifest.json"

// maxManifestBytes bounds what ReadManifest reads.
const maxManifestBytes = 64 << 20

// Manifest is what an indexer wrote for a repository: the target it wrote
// to, the repository's name and, by path, each file's breadcrumb. A server
// trusts an index hit only when the manifest of the workspace it reads
// names the same breadcrumb for the same path with the same content hash.
type Manifest struct {
	Target string                   `json:"target"`
	Repo   string                   `json:"repo"`
	Files  map[string]ManifestEntry `json:"files"`
}

// ManifestEntry is one file of a Manifest.
type ManifestEntry struct {
	ID      string `json:"id"`      // the file's breadcrumb
	Version int64  `json:"version"` // the breadcrumb's version the indexer wrote
	SHA256  string `json:"sha256"`  // hex, of the whole file
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
}

// ReadManifest reads ManifestFile under root.
func ReadManifest(root *os.Root) (*Manifest, error) {
	f, err := root.Open(ManifestFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("the repository has no index manifest (run ctxkit index)")
		}
		return nil, fmt.Errorf("index manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("index manifest: %w", err)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("index manifest %s: larger than %d bytes", ManifestFile, maxManifestBytes)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("index manifest %s: %w", ManifestFile, err)
	}
	if m.Files == nil {
		m.Files = map[string]ManifestEntry{}
	}
	return &m, nil
}

// WriteManifest writes m to ManifestFile under root atomically: a
// temporary file renamed into place, so a reader never sees half of one.
func WriteManifest(root *os.Root, m Manifest) error {
	if err := ensureDir(root); err != nil {
		return err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := ManifestFile + ".tmp"
	if err := root.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return root.Rename(tmp, ManifestFile)
}
