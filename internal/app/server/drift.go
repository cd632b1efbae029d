package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/workspace"
)

// Drift: an index is FRESH only when HEAD is the commit it indexed AND
// every tracked file is what it indexed. Agents edit without committing,
// so a word added to a tracked file, a file staged but not committed, or
// a tracked file deleted must make the answer STALE, with those files
// read from disk. Finding them costs a stat per tracked file; a file is
// hashed only when its size or modification time is not the one the
// manifest recorded (or is too close to the indexing time to tell, as git
// treats "racily clean" entries).

// driftMaxNamed bounds the files an answer's message names.
const driftMaxNamed = 20

// workspaceMaxTextCache bounds the cache of what tracked files that are
// not in the manifest are (text, or skipped by the indexer as binaries are).
const workspaceMaxTextCache = 10_000

// drifted is one tracked file whose content is not what the index holds.
type drifted struct {
	path string
	why  string // "" (changed), "new" (tracked, not indexed), "gone" or "not checked" (out of time or budget)
}

func (d drifted) String() string {
	if d.why == "" {
		return d.path
	}
	return d.path + " (" + d.why + ")"
}

// textKey names a version of a file by its stat data.
type textKey struct {
	dir, path   string
	size, mtime int64
}

// drift lists the tracked files of the workspace at dir whose content is
// not what the index recorded in man: changed, new in git's index, or
// gone. tracked is the list git gives (nil when dir is not a git
// repository git can list: then the manifest's own paths are the tracked
// ones, and only changed or gone files can be found). It stops when ctx
// ends or the hashing budget is spent, counting the files it could not
// check as "not checked" (they are read from disk, which is always
// right). It returns the budget left.
func (ws *workspaceSearcher) drift(ctx context.Context, root *os.Root, dir string, man *workspace.Manifest, tracked []string, indexedAt time.Time, budget int64) ([]drifted, int64) {
	var out []drifted
	isTracked := map[string]bool{}
	if tracked == nil {
		for p := range man.Files {
			if !workspace.Withheld(p) {
				tracked = append(tracked, p)
			}
		}
		sort.Strings(tracked)
	}
	dirs := map[string]bool{}
	for i, p := range tracked {
		if i == workspaceMaxFiles {
			break
		}
		if !trackedPath(p) {
			continue
		}
		isTracked[p] = true
		entry, indexed := man.Files[p]
		lst, err := root.Lstat(p)
		switch {
		case err != nil || !lst.Mode().IsRegular():
			if indexed {
				out = append(out, drifted{p, "gone"})
			}
			continue
		case !indexed:
			if lst.Size() > workspaceMaxFileBytes {
				continue // a disk scan does not read it either
			}
			text, known := ws.knownText(dir, p, lst)
			if !known {
				if ctx.Err() != nil || lst.Size() > budget {
					out = append(out, drifted{p, "not checked"})
					continue
				}
				budget -= lst.Size()
				text = ws.isText(root, dir, p, lst, dirs)
			}
			if text {
				out = append(out, drifted{p, "new"})
			}
			continue
		}
		mtime := lst.ModTime()
		if lst.Size() == entry.Size && mtime.UnixNano() == entry.ModTime && mtime.Before(indexedAt.Add(-2*time.Second)) {
			continue
		}
		if lst.Size() != entry.Size {
			out = append(out, drifted{p, ""})
			continue
		}
		if ctx.Err() != nil || lst.Size() > budget {
			out = append(out, drifted{p, "not checked"})
			continue
		}
		budget -= lst.Size()
		if sum, err := hashTracked(root, p, dirs); err != nil || sum != entry.SHA256 {
			out = append(out, drifted{p, ""})
		}
	}
	if len(isTracked) > 0 {
		for p := range man.Files {
			if !isTracked[p] && trackedPath(p) && !workspace.Withheld(p) {
				out = append(out, drifted{p, "gone"}) // no longer tracked by git
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, budget
}

// hashTracked is the hex SHA-256 of a file openTracked allows, of at most
// workspaceMaxVerifyBytes.
func hashTracked(root *os.Root, name string, dirs map[string]bool) (string, error) {
	f, info, err := openTracked(root, name, dirs)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if info.Size() > workspaceMaxVerifyBytes {
		return "", fmt.Errorf("%s: larger than %d bytes", name, workspaceMaxVerifyBytes)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, workspaceMaxVerifyBytes)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// knownText is what isText found for this version of the file (by its
// stat data), if it looked before.
func (ws *workspaceSearcher) knownText(dir, p string, lst fs.FileInfo) (text, known bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	text, known = ws.texts[textKey{dir, p, lst.Size(), lst.ModTime().UnixNano()}]
	return text, known
}

// isText reports whether the tracked file p, not in the manifest, is one
// a disk scan reads (text), and remembers the answer by the file's stat
// data, so that a repository's files are not read on every search.
func (ws *workspaceSearcher) isText(root *os.Root, dir, p string, lst fs.FileInfo, dirs map[string]bool) bool {
	_, err := readTracked(root, p, dirs)
	ws.mu.Lock()
	if len(ws.texts) >= workspaceMaxTextCache {
		clear(ws.texts)
	}
	ws.texts[textKey{dir, p, lst.Size(), lst.ModTime().UnixNano()}] = err == nil
	ws.mu.Unlock()
	return err == nil
}

// trackedList is git's list of dir's tracked files, cached while git's
// own index file keeps its size and modification time (git ls-files reads
// nothing else). nil when dir is not a git repository git can list.
func (ws *workspaceSearcher) trackedList(ctx context.Context, root *os.Root, dir string) []string {
	st, err := root.Stat(".git/index")
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	size, mtime := st.Size(), st.ModTime().UnixNano()
	ws.mu.Lock()
	c, ok := ws.tracked[dir]
	ws.mu.Unlock()
	// A listing made within the index file's modification second is not
	// kept: git may rewrite the file within the same timestamp.
	if ok && c.size == size && c.mtime == mtime && c.listedAt.After(st.ModTime().Add(time.Second)) {
		return c.files
	}
	listedAt := time.Now()
	files, err := gitFiles(ctx, dir)
	if err != nil {
		return nil
	}
	if files == nil {
		files = []string{}
	}
	ws.mu.Lock()
	ws.tracked[dir] = cachedList{size: size, mtime: mtime, listedAt: listedAt, files: files}
	ws.mu.Unlock()
	return files
}

type cachedList struct {
	size, mtime int64
	listedAt    time.Time
	files       []string
}

// driftNote says which files differ from the index, naming at most
// driftMaxNamed of them.
func driftNote(d []drifted) string {
	names := make([]string, 0, min(len(d), driftMaxNamed))
	for _, x := range d[:min(len(d), driftMaxNamed)] {
		names = append(names, x.String())
	}
	more := ""
	if len(d) > driftMaxNamed {
		more = fmt.Sprintf(" and %d more", len(d)-driftMaxNamed)
	}
	what := "tracked files differ"
	if len(d) == 1 {
		what = "tracked file differs"
	}
	for _, x := range d {
		if x.why == "not checked" {
			what += " or could not be checked"
			break
		}
	}
	return fmt.Sprintf("%d %s from the index (uncommitted changes), read from disk: %s%s", len(d), what, strings.Join(names, ", "), more)
}
