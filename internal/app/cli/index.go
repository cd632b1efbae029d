package cli

import (
	"context"
	"fmt"
	"os"
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

Stores each tracked text file of the repository at DIR (git ls-files; every
file under DIR when it is not a git repository) as a breadcrumb of schema
file.v1 tagged repo:NAME, whose context holds the path, language, size,
sha256 and content (cut at --max-bytes). Binary files are skipped and
counted. A second run writes only the files that changed and removes the
breadcrumbs of files that are gone (which needs the curator role).

It writes DIR/.ctxkit/index.json, the index status that workspace search
reads to decide whether the index is fresh (its commit is HEAD's), and
DIR/.ctxkit/manifest.json, what the next run compares against; the
directory ignores itself in git.

Flags:
  --repo DIR        the repository (required)
  --name NAME       the repository's name (default: DIR's base name)
  --server URL      a ctxkit server to write to, with --token (env CTXKIT_SERVER)
  --token T         bearer token with the emitter role (env CTXKIT_TOKEN)
  --data DIR        without --server: the local data directory (default ./.ctxkit)
  --db URL          without --server: the database, as for 'ctxkit serve'
  --owner O         without --server: the owner to write as (default "default")
  --max-bytes N     content kept per file (default 65536)
`,
		run: runIndex,
	})
}

func runIndex(ctx context.Context, e *env, args []string) error {
	fs := newFlags("index")
	repo := fs.String("repo", "", "")
	name := fs.String("name", "", "")
	serverURL := fs.String("server", os.Getenv("CTXKIT_SERVER"), "")
	token := fs.String("token", os.Getenv("CTXKIT_TOKEN"), "")
	data := fs.String("data", envOr("CTXKIT_DATA", ".ctxkit"), "")
	dbURL := fs.String("db", os.Getenv("CTXKIT_DB"), "")
	owner := fs.String("owner", "default", "")
	maxBytes := fs.Int64("max-bytes", workspace.DefaultMaxBytes, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *repo == "" {
		return usagef("--repo is required")
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
	st, stats, err := workspace.Index(ctx, target, workspace.Options{Repo: *repo, Name: *name, MaxBytes: *maxBytes, Now: time.Now})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "indexed %s at %s: %d files (%d new, %d changed, %d unchanged, %d removed); skipped %d binary, %d other\n",
		st.Repo, shortCommit(st.LastIndexedCommit), stats.Files, stats.Created, stats.Updated, stats.Unchanged, stats.Removed, stats.Binary, stats.Skipped)
	if stats.Kept > 0 {
		fmt.Fprintf(e.stderr, "ctxkit index: kept %d breadcrumbs of deleted files: removing them needs the curator role\n", stats.Kept)
	}
	return nil
}

func shortCommit(c string) string {
	if c == "" {
		return "no commit"
	}
	return c[:min(12, len(c))]
}
