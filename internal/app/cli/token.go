package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/console"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
)

func init() {
	register(&command{
		name:    "token",
		summary: "mint a bearer token for an agent; revoke tokens, list revocations",
		usage: `Usage: ctxkit token (--data DIR | --key FILE) --owner O --agent A --roles r1,r2 [--ttl 24h]
       ctxkit token (--data DIR | --key FILE) --admin [--owner O] [--ttl 720h]
       ctxkit token (--data DIR | --key FILE) --console [--server URL] (--admin | --owner O --agent A --roles r1,r2)
       ctxkit token revoke (--data DIR | --db URL) (--id ID | --agent A [--before TIME]) [--owner O]
       ctxkit token revocations (--data DIR | --db URL)

Prints a bearer token (and nothing else) signed with the server's key; its
id, by which it can be revoked, goes to standard error.
Roles: curator (everything, including delete), emitter (read, create,
update), subscriber (read, stream events).
--admin mints the token 'ctxkit serve' prints on its first start (agent
admin, curator of owner default or --owner O, valid 30 days): the way to
get one again at any time from the signing key.
--console prints a console login link instead of a token: URL/ui/#login=CODE,
where CODE works once, within 10 minutes, on any server with this signing
key, for a token of the agent valid 12 hours (kept in the browser tab only).

'ctxkit token revoke' records a revocation in the server's database: the
token with id ID (of any owner, or only of --owner O), or every token of
agent A (of owner O, or of every owner without --owner) issued before TIME
(RFC 3339, default now; tokens carry their issue time to the microsecond;
older tokens in whole seconds, which count as issued at the second's
start). Every server on the database refuses them (401 token_revoked)
within a second. It prints the revocation as a JSON line.
Revocations cannot be undone: mint new tokens instead.
'ctxkit token revocations' prints every revocation as a JSON line, oldest
first. A curator can also revoke its own owner's tokens with POST
/tokens/revoke.

Flags:
  --data DIR     data directory whose signing.key (and SQLite database) to use
                 (default ./.ctxkit; env CTXKIT_DATA)
  --key FILE     the signing key itself (env CTXKIT_KEY_FILE)
  --db URL       revoke, revocations: the server's database, as for 'ctxkit serve' (env CTXKIT_DB)
  --admin        an admin token: --agent admin --roles curator, owner default
                 (env CTXKIT_ADMIN)
  --console      a one-time console login link rather than a token (env CTXKIT_CONSOLE)
  --server URL   --console: the server's URL (default http://127.0.0.1:8700) (env CTXKIT_SERVER)
  --owner O      the owner the agent acts for (env CTXKIT_OWNER)
  --agent A      the agent's id (the token's subject) (env CTXKIT_AGENT)
  --roles LIST   comma-separated roles (env CTXKIT_ROLES)
  --ttl D        lifetime (default 24h) (env CTXKIT_TTL)
  --id ID        revoke: the token's id (env CTXKIT_ID)
  --before TIME  revoke: with --agent, the tokens issued before TIME (default now)
                 (env CTXKIT_BEFORE)
`,
		run: runToken,
	})
}

func runToken(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "revoke":
			return runRevoke(ctx, e, args[1:])
		case "revocations":
			return runRevocations(ctx, e, args[1:])
		}
	}
	flags := newFlags("token")
	data := flags.String("data", ".ctxkit", "")
	keyFile := flags.String("key", "", "")
	owner := flags.String("owner", "", "")
	agent := flags.String("agent", "", "")
	roles := flags.String("roles", "", "")
	ttl := flags.Duration("ttl", 24*time.Hour, "")
	admin := flags.Bool("admin", false, "")
	consoleLink := flags.Bool("console", false, "")
	serverURL := flags.String("server", "http://127.0.0.1:8700", "")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	if *admin {
		set := map[string]bool{}
		flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["agent"] || set["roles"] {
			return usagef("--admin mints the admin agent's curator token: give --agent and --roles without it")
		}
		*agent, *roles = "admin", server.RoleCurator
		if !set["owner"] {
			*owner = "default"
		}
		if !set["ttl"] {
			*ttl = adminTokenTTL
		}
	}
	switch {
	case *owner == "":
		return usagef("--owner is required")
	case *agent == "":
		return usagef("--agent is required")
	case *roles == "":
		return usagef("--roles is required: some of %s", strings.Join(server.ValidRoles, ", "))
	case *ttl <= 0:
		return usagef("--ttl must be positive")
	}
	var list []string
	for _, r := range strings.Split(*roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			list = append(list, r)
		}
	}
	path := *keyFile
	if path == "" {
		path = filepath.Join(*data, server.KeyFile)
	}
	key, err := server.LoadKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no signing key at %s: start 'ctxkit serve' once to create it, or pass --key", path)
	}
	if err != nil {
		return err
	}
	if *consoleLink {
		set := map[string]bool{}
		flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["ttl"] {
			return usagef("--ttl does not apply to --console: a login code lasts %s, its token %s", server.LoginCodeTTL, server.ConsoleTokenTTL)
		}
		base := strings.TrimRight(*serverURL, "/")
		if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
			return usagef("--server: %q is not an http:// or https:// URL", *serverURL)
		}
		code, err := server.MintLoginCode(key, server.Principal{OwnerID: *owner, AgentID: *agent, Roles: list}, server.LoginCodeTTL, time.Now())
		if err != nil {
			return usagef("%v", err)
		}
		fmt.Fprintln(e.stdout, base+console.Prefix+"#login="+code)
		fmt.Fprintf(e.stderr, "one use, within %s\n", server.LoginCodeTTL)
		return nil
	}
	tok, id, err := server.MintWithID(key, server.Principal{OwnerID: *owner, AgentID: *agent, Roles: list}, *ttl, time.Now())
	if err != nil {
		return usagef("%v", err)
	}
	// Standard output stays the token alone, for scripts; the id is what
	// an operator needs later to revoke just this token.
	fmt.Fprintln(e.stdout, tok)
	fmt.Fprintf(e.stderr, "token id %s (revoke it with: ctxkit token revoke --id %s)\n", id, id)
	return nil
}

// revocationStore opens the database that --data or --db names. The data
// directory's database must exist already: revoking into a new, empty one
// that no server reads would silently do nothing.
func revocationStore(ctx context.Context, e *env, data, db string) (store.Store, error) {
	if db == "" {
		path := filepath.Join(data, "ctxkit.db")
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("no database at %s: give the server's --data directory or its --db", path)
		}
	}
	s, _, err := openStore(ctx, db, data, newLogger(e))
	return s, err
}

func runRevoke(ctx context.Context, e *env, args []string) error {
	flags := newFlags("token revoke")
	data := flags.String("data", ".ctxkit", "")
	db := flags.String("db", "", "")
	id := flags.String("id", "", "")
	owner := flags.String("owner", "", "")
	agent := flags.String("agent", "", "")
	before := flags.String("before", "", "")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	now := time.Now()
	r := store.Revocation{OwnerID: *owner, TokenID: *id, AgentID: *agent, RevokedBy: "cli"}
	switch {
	case *id == "" && *agent == "":
		return usagef("revoke: give --id, or --agent (with --owner, or in every owner)")
	case *id != "" && *agent != "":
		return usagef("revoke: give --id or --agent, not both")
	case *before != "" && *agent == "":
		return usagef("revoke: --before applies to --agent")
	case *before != "":
		t, err := store.ParseRevocationBefore(*before, now)
		if err != nil {
			return usagef("revoke: --%v", err)
		}
		r.Before = t
	case *agent != "":
		r.Before = now
	}
	s, err := revocationStore(ctx, e, *data, *db)
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := s.Revoke(ctx, r)
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(out)
}

func runRevocations(ctx context.Context, e *env, args []string) error {
	flags := newFlags("token revocations")
	data := flags.String("data", ".ctxkit", "")
	db := flags.String("db", "", "")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	s, err := revocationStore(ctx, e, *data, *db)
	if err != nil {
		return err
	}
	defer s.Close()
	rs, err := s.Revocations(ctx, 0)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(e.stdout)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
