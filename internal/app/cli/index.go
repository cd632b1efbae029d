package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/workspace"
)

func init() {
	register(&command{
		name:    "index",
		summary: "index a repository's text files as breadcrumbs for workspace search",
		usage: `Usage: ctxkit index --repo DIR [--name NAME] [--server URL --token T] [--data DIR | --db URL] [--owner O] [--max-bytes N]
                    [--state DIR] [--json]

Stores each tracked text file of the repository at DIR (git ls-files; every
file under DIR when it is not a git repository) as a breadcrumb of schema
file.v1 tagged repo:NAME, whose context holds the path, language, size,
sha256 and content (cut at --max-bytes). Binary files are skipped and
counted. A second run writes only the files that changed and removes the
breadcrumbs of files that are gone (which needs the curator role).

It writes DIR/.ctxkit/index.json, the index status that workspace search
reads to decide whether the index is fresh (its commit is HEAD's), and
DIR/.ctxkit/manifest.json, what the next run compares against; the
directory ignores itself in git. With --state DIR they are written under
DIR instead (DIR/.ctxkit/index.json, ...) and the tree is only read: for
read-only trees. 'ctxkit serve --workspace' reads the status from the tree,
so it reports an index kept with --state as missing.

On a terminal, the progress (files done of those found, and the rate) is
shown on standard error.

Flags:
  --repo DIR        the repository (required) (env CTXKIT_REPO)
  --name NAME       the repository's name (default: DIR's base name)
                    (env CTXKIT_NAME)
  --server URL      a ctxkit server to write to, with --token (env CTXKIT_SERVER)
  --token T         bearer token with the emitter role (env CTXKIT_TOKEN)
  --data DIR        without --server: the local data directory (default ./.ctxkit)
                    (env CTXKIT_DATA)
  --db URL          without --server: the database, as for 'ctxkit serve'
                    (env CTXKIT_DB)
  --owner O         without --server: the owner to write as (default "default")
                    (env CTXKIT_OWNER)
  --max-bytes N     content kept per file (default 65536) (env CTXKIT_MAX_BYTES)
  --state DIR       keep the index status, manifest and instance id under DIR
                    (created if missing; outside --repo), not in the tree
                    (env CTXKIT_STATE)
  --json            print the summary as one JSON object instead of a sentence
                    (env CTXKIT_JSON)
`,
		run: runIndex,
	})
}

func runIndex(ctx context.Context, e *env, args []string) error {
	fs := newFlags("index")
	repo := fs.String("repo", "", "")
	name := fs.String("name", "", "")
	serverURL := fs.String("server", "", "")
	token := fs.String("token", "", "")
	data := fs.String("data", ".ctxkit", "")
	dbURL := fs.String("db", "", "")
	owner := fs.String("owner", "default", "")
	maxBytes := fs.Int64("max-bytes", workspace.DefaultMaxBytes, "")
	stateDir := fs.String("state", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *repo == "" {
		return usagef("--repo is required")
	}
	if *stateDir != "" {
		absState, err1 := filepath.Abs(*stateDir)
		absRepo, err2 := filepath.Abs(*repo)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if within(realPath(absRepo), realPath(absState)) {
			return usagef("--state %s is inside --repo: it keeps the state outside the tree", *stateDir)
		}
		if err := os.MkdirAll(*stateDir, 0o755); err != nil {
			return fmt.Errorf("--state: %w", err)
		}
	}
	if *maxBytes <= 0 || *maxBytes > store.MaxContextBytes/2 {
		return usagef("--max-bytes must be between 1 and %d", store.MaxContextBytes/2)
	}
	if *serverURL != "" && *token == "" {
		return usagef("--server needs --token (or CTXKIT_TOKEN)")
	}
	if *name != "" && (strings.ContainsAny(*name, "/\\ \t\n") || *name == "." || *name == "..") {
		return fmt.Errorf("--name: %q must be one word without slashes", *name)
	}
	var target workspace.Target
	if *serverURL != "" {
		target = workspace.NewServerTarget(*serverURL, *token, nil)
	} else {
		if err := os.MkdirAll(*data, 0o700); err != nil {
			return fmt.Errorf("--data: %w", err)
		}
		db, desc, err := openStore(ctx, *dbURL, *data, newLogger(e))
		if err != nil {
			return err
		}
		defer db.Close()
		target = workspace.NewStoreTarget(db, desc, store.Actor{OwnerID: *owner, AgentID: "ctxkit-index", Curator: true})
	}
	opts := workspace.Options{Repo: *repo, Name: *name, MaxBytes: *maxBytes, Now: time.Now, State: *stateDir}
	started := time.Now()
	var bar *progress
	if isTerminal(e.stderr) {
		bar = &progress{w: e.stderr, started: started}
		opts.Progress = bar.update
	}
	st, stats, err := workspace.Index(ctx, target, opts)
	bar.finish()
	if err != nil {
		return err
	}
	if *asJSON {
		out, err := json.Marshal(indexSummary{
			Repo: st.Repo, Commit: st.LastIndexedCommit, State: string(st.IndexState),
			Files: stats.Files, Created: stats.Created, Updated: stats.Updated, Unchanged: stats.Unchanged,
			Removed: stats.Removed, Binary: stats.Binary, Skipped: stats.Skipped, Kept: stats.Kept,
			Seconds: time.Since(started).Seconds(),
		})
		if err != nil {
			return err
		}
		if _, err := e.stdout.Write(append(out, '\n')); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "indexed %s at %s: %d files (%d new, %d changed, %d unchanged, %d removed); skipped %d binary, %d other\n",
			st.Repo, shortCommit(st.LastIndexedCommit), stats.Files, stats.Created, stats.Updated, stats.Unchanged, stats.Removed, stats.Binary, stats.Skipped)
	}
	if stats.Kept > 0 {
		fmt.Fprintf(e.stderr, "ctxkit index: kept %d breadcrumbs of deleted files: removing them needs the curator role\n", stats.Kept)
	}
	return nil
}

// indexSummary is what --json prints: the counts of workspace.Stats.
type indexSummary struct {
	Repo      string  `json:"repo"`
	Commit    string  `json:"commit"` // "" when the tree is not a git repository
	State     string  `json:"index_state"`
	Files     int     `json:"files"`
	Created   int     `json:"created"`
	Updated   int     `json:"updated"`
	Unchanged int     `json:"unchanged"`
	Removed   int     `json:"removed"`
	Binary    int     `json:"skipped_binary"`
	Skipped   int     `json:"skipped_other"`
	Kept      int     `json:"kept"`
	Seconds   float64 `json:"seconds"`
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// progress draws "files done / total, rate" on one terminal line,
// redrawn at most every progressEvery.
type progress struct {
	w       io.Writer
	started time.Time
	last    time.Time
	drawn   bool
}

const progressEvery = 100 * time.Millisecond

func (p *progress) update(done, total int) {
	now := time.Now()
	if done < total && now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	rate := float64(done) / max(now.Sub(p.started).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "\r\x1b[Kindexing: %d/%d files, %.0f files/s", done, total, rate)
	p.drawn = true
}

// finish ends the progress line; p may be nil (no terminal).
func (p *progress) finish() {
	if p != nil && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func shortCommit(c string) string {
	if c == "" {
		return "no commit"
	}
	return c[:min(12, len(c))]
}
