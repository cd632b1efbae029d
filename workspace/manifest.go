package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
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
	Target   string                   `json:"target"`
	Repo     string                   `json:"repo"`
	Instance string                   `json:"instance,omitempty"` // the index's instance id (InstanceFile)
	Source   string                   `json:"source,omitempty"`   // SourceWalk when the files came from a walk of the tree
	Files    map[string]ManifestEntry `json:"files"`
}

// SourceWalk is Manifest.Source when the indexer listed the files by
// walking a directory that is not a git repository, rather than from git.
const SourceWalk = "walk"

// InstanceFile holds, relative to the repository's root, the random id of
// the repository's index: what tells its breadcrumbs from those of any
// other repository (of the same name or not).
const InstanceFile = ".ctxkit/instance"

// instanceID returns the id InstanceFile holds under root, creating the
// file with a new random id when there is none.
func instanceID(root *os.Root) (string, error) {
	data, err := root.ReadFile(InstanceFile)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(data))
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			return "", fmt.Errorf("%s: not an index instance id (32 hex digits); remove the file to start a new index", InstanceFile)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: %w", InstanceFile, err)
	}
	if err := ensureDir(root); err != nil {
		return "", err
	}
	var raw [16]byte
	rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	f, err := root.OpenFile(InstanceFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // another run created it first
			return instanceID(root)
		}
		return "", fmt.Errorf("%s: %w", InstanceFile, err)
	}
	if _, err := f.WriteString(id + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("%s: %w", InstanceFile, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("%s: %w", InstanceFile, err)
	}
	return id, nil
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
	data, err := readIndexFile(root, ManifestFile, "index manifest", maxManifestBytes+1)
	if err != nil {
		return nil, err
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
	return writeIndexFile(root, ManifestFile, data)
}

// secretNames are file names (path.Match patterns) that usually hold
// credentials: a walk of a tree leaves them out.
var secretNames = []string{"*.key", "*.pem", "id_rsa*", "id_ed25519*", "*.p12", ".env*", ".netrc", ".npmrc", ".pypirc"}

// Withheld reports whether a walk of a tree, or a disk scan of the files a
// walk listed, leaves out the file at the slash-separated relative path
// name: one with a dot-file or dot-directory component, or a name that
// usually holds credentials (*.key, *.pem, id_rsa*, id_ed25519*, *.p12,
// .env*, .netrc, .npmrc, .pypirc), compared case-insensitively.
func Withheld(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	base := strings.ToLower(path.Base(name))
	for _, pat := range secretNames {
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
	}
	return false
}
