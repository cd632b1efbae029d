package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/server"
)

func init() {
	register(&command{
		name:    "token",
		summary: "mint a bearer token for an agent",
		usage: `Usage: ctxkit token (--data DIR | --key FILE) --owner O --agent A --roles r1,r2 [--ttl 24h]

Prints a bearer token (and nothing else) signed with the server's key.
Roles: curator (everything, including delete), emitter (read, create,
update), subscriber (read, stream events).

Flags:
  --data DIR     data directory whose signing.key to use (default ./.ctxkit; env CTXKIT_DATA)
  --key FILE     the signing key itself (env CTXKIT_KEY_FILE)
  --owner O      the owner the agent acts for
  --agent A      the agent's id (the token's subject)
  --roles LIST   comma-separated roles
  --ttl D        lifetime (default 24h)
`,
		run: runToken,
	})
}

func runToken(_ context.Context, e *env, args []string) error {
	flags := newFlags("token")
	data := flags.String("data", envOr("CTXKIT_DATA", ".ctxkit"), "")
	keyFile := flags.String("key", os.Getenv("CTXKIT_KEY_FILE"), "")
	owner := flags.String("owner", "", "")
	agent := flags.String("agent", "", "")
	roles := flags.String("roles", "", "")
	ttl := flags.Duration("ttl", 24*time.Hour, "")
	if err := parseFlags(flags, args); err != nil {
		return err
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
	tok, err := server.Mint(key, server.Principal{OwnerID: *owner, AgentID: *agent, Roles: list}, *ttl, time.Now())
	if err != nil {
		return usagef("%v", err)
	}
	fmt.Fprintln(e.stdout, tok)
	return nil
}
