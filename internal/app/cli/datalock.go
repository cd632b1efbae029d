package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// claimSQLite prepares serving the SQLite database at path: it takes the
// data directory's lock, held until release (two servers on one SQLite
// file would each wake only their own event streams, splitting the
// stream), and refuses an empty database file beside an existing signing
// key, which is almost always data lost by accident rather than a fresh
// start.
func claimSQLite(path, keyFile string) (release func(), err error) {
	dir := filepath.Dir(path)
	// The lock sits beside the file itself, whatever name reaches it: a
	// link to the database (or to its directory) names the same database.
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	} else if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = filepath.Join(r, filepath.Base(path))
	}
	lock := real + ".lock"
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: lock: %w", dir, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("data directory %s: lock %s: %w", dir, lock, err)
		}
		holder := "unknown: it is just starting"
		if b, err := os.ReadFile(lock); err == nil && strings.TrimSpace(string(b)) != "" {
			holder = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("the data directory %s is in use by another ctxkit serve (pid %s; lock %s): two servers on one SQLite database "+
			"would split its event stream. Stop the other one, or run replicas on PostgreSQL (--db postgres://...)", dir, holder, lock)
	}
	release = func() { f.Truncate(0); f.Close() }
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("data directory %s: lock %s: %w", dir, lock, err)
	}
	if st, err := os.Stat(path); err == nil && st.Size() == 0 {
		if _, err := os.Stat(keyFile); err == nil {
			release()
			return nil, fmt.Errorf("the database %s is empty (0 bytes) while the signing key %s exists: its data was most likely lost or truncated "+
				"(ctxkit never leaves it empty). Restore it from a backup; to start afresh on purpose, remove both files", path, keyFile)
		}
	}
	return release, nil
}
