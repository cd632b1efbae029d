package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/console"
	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/connlimit"
	"github.com/ctxkit/ctxkit/internal/webhook"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run the breadcrumb server (HTTP API)",
		usage: `Usage: ctxkit serve [--addr 127.0.0.1:8700] [--data DIR] [--db URL] [--key FILE] [--max-body BYTES] [--config FILE]
                    [--workspace DIR]... [--max-conns N] [--webhook-allow-private]

Serves the breadcrumb API. With no flags it keeps everything in ./.ctxkit: the
SQLite database (ctxkit.db) and the signing key for bearer tokens
(signing.key); a data directory serve creates gets a .gitignore ignoring
it all. The configuration and the address are checked before anything is
created. The start that creates the signing key prints an admin (curator)
token; every later start says how to mint one ('ctxkit token --admin').

Every flag may come from the environment instead: CTXKIT_ and the flag's
name in capitals (CTXKIT_ADDR, CTXKIT_MAX_CONNS, ...; CTXKIT_KEY_FILE for
--key; CTXKIT_WORKSPACE a list separated by ':'). The command line wins.

Flags:
  --addr HOST:PORT   where to listen (default 127.0.0.1:8700; port 0 picks a free one)
                     (env CTXKIT_ADDR)
  --data DIR         data directory (default ./.ctxkit; env CTXKIT_DATA)
  --db URL           database: a SQLite file path, sqlite:PATH, or postgres://USER:PASS@HOST/DB
                     (default DIR/ctxkit.db; env CTXKIT_DB)
  --key FILE         signing key (default DIR/signing.key; env CTXKIT_KEY_FILE); replicas
                     on one PostgreSQL database share one key file
  --max-body BYTES   request body limit (default 1048576) (env CTXKIT_MAX_BODY)
  --max-conns N      most connections open at once (default: from the file-descriptor
                     limit, leaving room for the database, files and upstreams); near
                     it idle keep-alive connections are closed, and a few slots stay
                     kept to answer GET /health (env CTXKIT_MAX_CONNS)
  --view-memory SIZE bound on the heap while views are computed, as in 512MiB or
                     1GiB (default 1GiB; at least 64MiB): a view that needs more
                     is refused with view_too_costly (422 for a preview, its
                     fallback when read) (env CTXKIT_VIEW_MEMORY)
  --expire-every D   how often expired breadcrumbs are removed (default 30s)
                     (env CTXKIT_EXPIRE_EVERY)
  --config FILE      the gateway's upstream providers (JSON, or YAML as .yaml/.yml;
                     env CTXKIT_CONFIG): serves POST /v1/messages, POST
                     /v1/chat/completions and GET /v1/models
  --workspace DIR    a repository GET /workspace/search and the MCP tool
                     workspace_search may read (repeatable); named by its
                     'ctxkit index --name', else its base name. Nothing
                     outside these directories is read. (env CTXKIT_WORKSPACE)
  --webhook-allow-private
                     let webhooks target loopback, private, link-local and
                     metadata addresses, and plain http (tests, internal
                     networks; said on stderr at start)
                     (env CTXKIT_WEBHOOK_ALLOW_PRIVATE)
  --webhook-timeout D  time for one delivery attempt (default 10s)
                     (env CTXKIT_WEBHOOK_TIMEOUT)
  --webhook-retry-for D  how long a delivery is retried before it goes to
                     the dead-letter list, and how long an endpoint fails
                     in a row before it is paused (default 24h)
                     (env CTXKIT_WEBHOOK_RETRY_FOR)
  --webhook-in-flight N  delivery attempts in flight at once (default 256),
                     at most --webhook-per-endpoint N (default 4) for one
                     webhook (env CTXKIT_WEBHOOK_IN_FLIGHT,
                     env CTXKIT_WEBHOOK_PER_ENDPOINT)
  --webhook-per-owner N  attempts in flight for one owner's webhooks
                     together (default a quarter of --webhook-in-flight),
                     so one tenant's slow receivers leave the rest room;
                     slots no other owner wants are lent past it, all
                     but one share (env CTXKIT_WEBHOOK_PER_OWNER)
  --webhook-backlog N  pending deliveries kept per webhook (default 10000);
                     the oldest beyond are dead-lettered (env CTXKIT_WEBHOOK_BACKLOG)

Webhooks (POST /webhooks) are delivered by every server: new events are
fanned out to the webhooks whose selectors match, and each delivery is
made by one replica at a time; a stop releases the attempts in flight.

MCP clients connect to /mcp (streamable HTTP) with the same bearer tokens.

Several servers (replicas) may share one PostgreSQL database: each sees
every write and every event. Connect as an ordinary role that owns the
schema; a superuser or BYPASSRLS role skips row-level security, and serve
warns when it finds one.

One server at a time serves a SQLite database: serve locks it (the file
DB.lock beside it holds the server's pid), and a second serve on it exits 1.
serve refuses to start on a damaged database file (it checks it first) and
on an empty one beside an existing signing key (lost data), saying why.

Logs go to standard error: text on a terminal, JSON otherwise. SIGINT or
SIGTERM stops the server after in-flight requests finish.
`,
		run: runServe,
	})
}

// adminTokenTTL is the lifetime of the token printed on first start.
const adminTokenTTL = 30 * 24 * time.Hour

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags("serve")
	addr := fs.String("addr", "127.0.0.1:8700", "")
	data := fs.String("data", ".ctxkit", "")
	dbURL := fs.String("db", "", "")
	keyFile := fs.String("key", "", "")
	maxBody := fs.Int64("max-body", 1<<20, "")
	expireEvery := fs.Duration("expire-every", 30*time.Second, "")
	configFile := fs.String("config", "", "")
	maxConns := fs.Int("max-conns", 0, "")
	viewMemory := byteSize(server.DefaultViewMemory)
	fs.Var(&viewMemory, "view-memory", "")
	var workspaces stringList
	fs.Var(&workspaces, "workspace", "")
	hookPrivate := fs.Bool("webhook-allow-private", false, "")
	hookTimeout := fs.Duration("webhook-timeout", webhook.DefaultTimeout, "")
	hookRetryFor := fs.Duration("webhook-retry-for", 24*time.Hour, "")
	hookInFlight := fs.Int("webhook-in-flight", 256, "")
	hookPerEndpoint := fs.Int("webhook-per-endpoint", 4, "")
	hookPerOwner := fs.Int("webhook-per-owner", 0, "")
	hookBacklog := fs.Int("webhook-backlog", 10_000, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkWebhookFlags(*hookTimeout, *hookRetryFor, *hookInFlight, *hookPerEndpoint, *hookPerOwner, *hookBacklog); err != nil {
		return err
	}
	for i, w := range workspaces {
		abs, err := filepath.Abs(w)
		if err == nil {
			var st os.FileInfo
			if st, err = os.Stat(abs); err == nil && !st.IsDir() {
				err = errors.New("not a directory")
			}
		}
		if err != nil {
			return fmt.Errorf("--workspace %s: %v", w, err)
		}
		workspaces[i] = abs
	}
	if err := checkWorkspaces(workspaces, *data); err != nil {
		return err
	}
	if *keyFile != "" {
		keyAbs, err := filepath.Abs(*keyFile)
		if err != nil {
			return fmt.Errorf("--key: %w", err)
		}
		keyReal := realPath(keyAbs)
		for _, w := range workspaces {
			if within(realPath(w), keyReal) {
				return usagef("--key %s lies inside the workspace %s: every agent may search a workspace, so keep the signing key outside it",
					*keyFile, relOrAbs(w))
			}
		}
	}
	if *maxBody <= 0 || *expireEvery <= 0 {
		return usagef("--max-body and --expire-every must be positive")
	}
	nofile, err := connlimit.FileLimit()
	if err != nil {
		return fmt.Errorf("reading the file-descriptor limit: %w", err)
	}
	if err := checkMaxConns(fs, *maxConns, nofile); err != nil {
		return err
	}
	if *maxConns == 0 {
		*maxConns = connlimit.Default(nofile)
	}
	if viewMemory < minViewMemory {
		return usagef("--view-memory %s is too small: it must be at least 64MiB", byteCount(int64(viewMemory)))
	}
	log := newLogger(e)

	// Everything that can fail for a reason the user must fix is checked
	// before anything is created: a start that creates the signing key
	// and then fails would lose the admin token it prints.
	var gw *gateway.Gateway
	if *configFile != "" {
		cfg, err := gateway.LoadConfig(*configFile)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		gw = gateway.New(cfg, gateway.Options{Logger: log})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	defer ln.Close()

	// The data directory is made only when something lives in it: with
	// --db and --key both given, nothing does.
	if *keyFile == "" || sqliteFile(*dbURL, *data) == filepath.Join(*data, "ctxkit.db") {
		if err := makeDataDir(*data); err != nil {
			return err
		}
	}
	if *keyFile == "" {
		*keyFile = filepath.Join(*data, server.KeyFile)
	}
	if path := sqliteFile(*dbURL, *data); path != "" {
		release, err := claimSQLite(path, *keyFile)
		if err != nil {
			return err
		}
		defer release()
	}
	db, dbDesc, err := openStore(ctx, *dbURL, *data, log)
	if err != nil {
		return err
	}
	defer db.Close()
	key, created, err := server.LoadOrCreateKey(*keyFile)
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	url := "http://" + ln.Addr().String()
	// One write, so a reader never sees the URL without the token that
	// follows it; printed at once, before anything else can fail.
	banner := fmt.Sprintf("ctxkit serving on %s (data in %s)\n", url, dataDesc(*data, *dbURL, *keyFile))
	if created {
		tok, err := server.Mint(key, server.Principal{OwnerID: "default", AgentID: "admin", Roles: []string{server.RoleCurator}}, adminTokenTTL, time.Now())
		if err != nil {
			return err
		}
		banner += fmt.Sprintf("new signing key in %s; admin token (owner default, curator, valid %s), shown only now:\n%s\n", *keyFile, adminTokenTTL, tok)
	} else {
		banner += fmt.Sprintf("tokens: ctxkit token --admin --key %s (or --owner O --agent A --roles R)\n", shellQuote(*keyFile))
	}
	if gw != nil {
		banner += "gateway models: " + strings.Join(gw.ModelNames(), ", ") + "\n"
	}
	for _, w := range workspaces {
		banner += "workspace: " + w + "\n"
	}
	fmt.Fprint(e.stdout, banner)
	// A login link for the admin agent's console, one use within minutes
	// (its code is in the fragment, which never reaches a server's log).
	// On standard error: standard output stays the URL and the token that
	// scripts read.
	if code, err := server.MintLoginCode(key, server.Principal{OwnerID: "default", AgentID: "admin", Roles: []string{server.RoleCurator}}, server.LoginCodeTTL, time.Now()); err == nil {
		fmt.Fprintf(e.stderr, "console: %s%s#login=%s (admin, one use within %s; more: ctxkit token --console --admin)\n", url, console.Prefix, code, server.LoginCodeTTL)
	}

	api := server.New(server.Options{Store: db, Key: key, Logger: log, MaxBodyBytes: *maxBody, Gateway: gw,
		Workspaces: workspaces, ViewMemory: int64(viewMemory),
		Webhooks: server.WebhookOptions{AllowPrivate: *hookPrivate, Timeout: *hookTimeout,
			Policy:      webhook.Policy{Horizon: *hookRetryFor, PauseAfter: *hookRetryFor},
			MaxInFlight: *hookInFlight, PerEndpoint: *hookPerEndpoint, PerOwner: *hookPerOwner, Backlog: *hookBacklog,
			// A replica that dies mid-attempt holds its deliveries this
			// long; an attempt ends within the timeout.
			Lease: max(10*time.Second, 3*(*hookTimeout))}})
	if *hookPrivate {
		fmt.Fprintln(e.stderr, "webhooks: --webhook-allow-private: targets on loopback, private and metadata addresses, and plain http, are allowed")
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(api.StopStreams)
	ln = connlimit.Wrap(srv, ln, connlimit.Options{Max: *maxConns,
		Admit: func(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == "/health" }})
	log.Info("serving", "url", url, "db", dbDesc)

	go expireLoop(ctx, db, *expireEvery, log)
	// Webhook delivery stops with the server; its attempts in flight are
	// released (due again at once) before serve returns.
	hookCtx, stopHooks := context.WithCancel(ctx)
	hooksDone := make(chan struct{})
	go func() {
		defer close(hooksDone)
		if err := api.RunWebhooks(hookCtx); err != nil {
			log.Error("webhooks", "err", err)
		}
	}()
	defer func() { stopHooks(); <-hooksDone }()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	shutErr := srv.Shutdown(shutdownCtx)
	// The traffic records already queued are written even when some
	// request outlasted the shutdown (they are of answers already
	// given), within a few seconds of their own if it took all its time.
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelDrain()
	if shutErr == nil {
		drainCtx = shutdownCtx
	}
	if err := api.DrainRecords(drainCtx); err != nil {
		log.Warn("shutdown", "err", err.Error())
	}
	if shutErr != nil {
		return fmt.Errorf("shutdown: %w", shutErr)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkMaxConns validates --max-conns (0 when not given) against the
// descriptor limit nofile.
func checkMaxConns(fs *flag.FlagSet, n int, nofile uint64) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "max-conns" })
	if !given {
		return nil
	}
	if n < 2 {
		return usagef("--max-conns %d: give at least 2 connections", n)
	}
	if def := connlimit.Default(nofile); n > def {
		return usagef("--max-conns %d: the file-descriptor limit %d leaves room for at most %d; raise it (ulimit -n) or give fewer", n, nofile, def)
	}
	return nil
}

func expireLoop(ctx context.Context, s store.Store, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	corrupt := false // a damaged store refuses every expiry: said once
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n, err := s.Expire(ctx, now)
			if err != nil && ctx.Err() == nil {
				if store.IsCode(err, store.CodeCorrupt) {
					if corrupt {
						continue
					}
					corrupt = true
				}
				log.Error("expiring breadcrumbs", "err", err)
			} else if n > 0 {
				log.Info("expired breadcrumbs", "count", n)
			}
		}
	}
}

// openStore reads --db: empty for the data directory's SQLite database, a
// file path or sqlite:PATH, or a postgres:// URL. It returns the store and a
// description for the log that leaves out any password.
func openStore(ctx context.Context, db, data string, log *slog.Logger) (store.Store, string, error) {
	path := sqliteFile(db, data)
	switch {
	case path != "":
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		u, err := url.Parse(db)
		if err != nil {
			// url.Parse's error repeats the URL, password and all.
			var (
				ue  *url.Error
				esc url.EscapeError
			)
			switch {
			case errors.As(err, &esc):
				err = errors.New("it holds an invalid %-escape")
			case errors.As(err, &ue):
				err = ue.Err
			}
			return nil, "", usagef("--db: not a valid URL: %v", err)
		}
		desc := "postgres://" + u.Host + u.Path
		pg, err := postgres.Open(ctx, db)
		if err != nil {
			return nil, "", err
		}
		// Row-level security does not bind these roles: owner isolation
		// then rests on the queries alone.
		if su, err := pg.Superuser(ctx); err != nil {
			pg.Close()
			return nil, "", fmt.Errorf("postgres: %w", err)
		} else if su {
			log.Warn("connected to PostgreSQL as a superuser or a BYPASSRLS role: row-level security does not apply to it; connect as an ordinary role that owns the ctxkit schema")
		}
		return pg, desc, nil
	default:
		return nil, "", usagef("--db: %q is not a database ctxkit knows; give a SQLite file path or a postgres:// URL", redact(db))
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, "", err
	}
	return s, path, nil
}

// sqliteFile is the SQLite database file --db names (empty: the data
// directory's), or "" when it names a database of another kind.
func sqliteFile(db, data string) string {
	switch {
	case db == "":
		return filepath.Join(data, "ctxkit.db")
	case strings.HasPrefix(db, "sqlite:"):
		return strings.TrimPrefix(strings.TrimPrefix(db, "sqlite:"), "//")
	case strings.Contains(db, "://"):
		return ""
	}
	return db
}

// redact drops the password from a URL for messages.
func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

// stringList is a repeatable string flag; its environment variable is a
// list (flagsFromEnv).
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// newLogger logs to stderr: text on a terminal, JSON otherwise.
func newLogger(e *env) *slog.Logger {
	if f, ok := e.stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return slog.New(slog.NewTextHandler(f, nil))
		}
	}
	return slog.New(slog.NewJSONHandler(e.stderr, nil))
}

// checkWorkspaces refuses a workspace that holds the data directory (every
// agent of the server may search a workspace; the data directory holds
// the database and the signing key) or lies inside it. workspaces are
// absolute; data is as given.
func checkWorkspaces(workspaces []string, data string) error {
	dataAbs, err := filepath.Abs(data)
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	dataReal := realPath(dataAbs)
	for _, w := range workspaces {
		wsReal := realPath(w)
		switch {
		case within(wsReal, dataReal):
			return usagef("--workspace %s holds the data directory %s: every agent may search a workspace, so keep the data directory (the database and the signing key) outside it",
				relOrAbs(w), data)
		case within(dataReal, wsReal):
			return usagef("--workspace %s lies inside the data directory %s: give a directory outside it", relOrAbs(w), data)
		}
	}
	return nil
}

// realPath is p with symlinks resolved as far as the path exists.
func realPath(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// relOrAbs is p relative to the working directory when it lies below it.
func relOrAbs(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && within(wd, p) {
			return rel
		}
	}
	return p
}

// makeDataDir creates the data directory, and in a directory it creates a
// .gitignore ignoring everything, so that a data directory made inside a
// repository (./.ctxkit by default) never lands in a commit.
func makeDataDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("# ctxkit's data: the database and the signing key\n*\n"), 0o600); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}

// dataDesc says where the server keeps its data, for the first line.
func dataDesc(data, db, keyFile string) string {
	if db == "" {
		return data
	}
	return "database " + redact(db) + ", key " + keyFile
}

// shellQuote quotes p for a command line the user may paste, when it
// needs it.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@+=,") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// checkWebhookFlags refuses webhook knobs that cannot work, naming the
// flag.
func checkWebhookFlags(timeout, retryFor time.Duration, inFlight, perEndpoint, perOwner, backlog int) error {
	switch {
	case timeout <= 0 || timeout > 5*time.Minute:
		return usagef("--webhook-timeout %s: use more than 0 and at most 5m", timeout)
	case retryFor < time.Minute || retryFor > 30*24*time.Hour:
		return usagef("--webhook-retry-for %s: use 1m to 720h", retryFor)
	case inFlight < 1 || inFlight > 10_000:
		return usagef("--webhook-in-flight %d: use 1 to 10000", inFlight)
	case perEndpoint < 1 || perEndpoint > inFlight:
		return usagef("--webhook-per-endpoint %d: use 1 to --webhook-in-flight (%d)", perEndpoint, inFlight)
	case perOwner < 0 || perOwner > inFlight:
		return usagef("--webhook-per-owner %d: use 1 to --webhook-in-flight (%d), or 0 for a quarter of it", perOwner, inFlight)
	case backlog < 1 || backlog > 10_000_000:
		return usagef("--webhook-backlog %d: use 1 to 10000000", backlog)
	}
	return nil
}
