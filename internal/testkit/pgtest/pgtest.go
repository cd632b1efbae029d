// Package pgtest starts a throwaway PostgreSQL server for tests: initdb into
// a temporary directory, the server on a free loopback port, removed when
// the tests end. It uses the server binaries of Debian's postgresql package
// (or any on PATH). Started as root, the server runs as the postgres system
// user (or nobody), since PostgreSQL refuses to run as root.
//
// Without the binaries a test is skipped with a message saying how to get
// them; under CI=true it fails instead, because CI must run these tests.
//
// CTXKIT_TEST_POSTGRES=postgres://... uses an existing server instead; its
// user must be allowed to create roles and databases. CTXKIT_TEST_POSTGRES=off
// starts none, so the tests skip as without the binaries (`./scripts/test
// quick`); under CI=true they fail, as they always do without PostgreSQL.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	// AdminURL connects as a superuser.
	AdminURL string
	host     string
	port     int
	cmd      *exec.Cmd
	exited   chan struct{}
	dir      string
	stderr   *os.File
	bin      string
	cred     *syscall.Credential
	starts   int // log files written, one per start of the server process
}

var (
	once    sync.Once
	shared  *Server
	skipMsg string
	dbSeq   atomic.Int64
)

// Shared returns the server for this test binary, starting it on first use.
// Stop it in TestMain with Stop after m.Run.
func Shared(t testing.TB) *Server {
	t.Helper()
	once.Do(func() {
		var err error
		shared, err = start()
		if err != nil {
			skipMsg = err.Error()
		}
	})
	if shared == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required under CI: %s", skipMsg)
		}
		t.Skipf("PostgreSQL not available, skipping: %s (install Debian's postgresql package, or set CTXKIT_TEST_POSTGRES)", skipMsg)
	}
	return shared
}

// Stop stops the shared server, if one was started, and removes its files.
func Stop() {
	if shared != nil {
		shared.stop()
	}
}

// NewDatabase creates a fresh database owned by a fresh ordinary
// (non-superuser) role and returns the URL that connects as that role. The
// database is dropped when the test ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	n := dbSeq.Add(1)
	name := fmt.Sprintf("ctxkit_%d_%d", os.Getpid(), n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, s.AdminURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{
		`CREATE ROLE ` + name + ` LOGIN PASSWORD 'ctxkit' NOSUPERUSER NOBYPASSRLS`,
		`CREATE DATABASE ` + name + ` OWNER ` + name + ` TEMPLATE template0`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("pgtest: %s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		admin, err := pgx.Connect(ctx, s.AdminURL)
		if err != nil {
			t.Errorf("pgtest: %v", err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
		}
		admin.Exec(ctx, `DROP ROLE IF EXISTS `+name)
	})
	u, _ := url.Parse(s.AdminURL)
	u.User = url.UserPassword(name, "ctxkit")
	u.Path = "/" + name
	return u.String()
}

// binDir finds the directory of initdb and postgres.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb on PATH or in /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start() (*Server, error) {
	if u := os.Getenv("CTXKIT_TEST_POSTGRES"); u == "off" {
		return nil, errors.New("CTXKIT_TEST_POSTGRES=off")
	} else if u != "" {
		return &Server{AdminURL: u}, nil
	}
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ctxkit-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, host: "127.0.0.1"}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			if u, err = user.Lookup("nobody"); err != nil {
				os.RemoveAll(dir)
				return nil, errors.New("running as root and no postgres or nobody user to run the server as")
			}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	s.bin, s.cred = bin, cred
	data := filepath.Join(dir, "data")
	init := s.command("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions")
	if out, err := init.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	for attempt := 0; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.AdminURL = fmt.Sprintf("postgres://postgres@%s:%d/postgres?sslmode=disable", s.host, s.port)
		log, err := s.run()
		if err == nil {
			return s, nil
		}
		if attempt == 2 {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgres did not start: %v: %s", err, log)
		}
	}
}

// command is a server binary run as the user the server runs as.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// run starts the server process on s.port and waits until it accepts
// connections; on failure it returns the server's log.
func (s *Server) run() (log []byte, err error) {
	logPath := filepath.Join(s.dir, fmt.Sprintf("postgres-%d.log", s.starts))
	s.starts++
	if s.stderr, err = os.Create(logPath); err != nil {
		return nil, err
	}
	if s.cred != nil {
		os.Chown(logPath, int(s.cred.Uid), int(s.cred.Gid))
	}
	s.cmd = s.command("postgres", "-D", filepath.Join(s.dir, "data"), "-h", s.host, "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "max_connections=300", "-c", "shared_buffers=128MB", "-c", "log_min_messages=warning")
	s.cmd.Stdout, s.cmd.Stderr = s.stderr, s.stderr
	if err := s.cmd.Start(); err != nil {
		s.stderr.Close()
		return nil, fmt.Errorf("postgres: %v", err)
	}
	if err = s.waitReady(30 * time.Second); err == nil {
		return nil, nil
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.stderr.Close()
	log, _ = os.ReadFile(logPath)
	return log, err
}

// Start starts a PostgreSQL server of the test's own, stopped when the test
// ends: for tests that stop or restart the server, which would disturb the
// other tests on the shared one. It skips (or fails under CI=true) as
// Shared does, and skips when CTXKIT_TEST_POSTGRES names a server this
// process cannot restart.
func Start(t testing.TB) *Server {
	t.Helper()
	if u := os.Getenv("CTXKIT_TEST_POSTGRES"); u != "" && u != "off" {
		t.Skip("CTXKIT_TEST_POSTGRES names an existing server, which this test would have to restart")
	}
	s, err := start()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required under CI: %v", err)
		}
		t.Skipf("PostgreSQL not available, skipping: %v (install Debian's postgresql package)", err)
	}
	t.Cleanup(s.stop)
	return s
}

// Restart stops the server the way `pg_ctl stop -m immediate` does
// (SIGQUIT: every backend ends at once, connections drop mid-statement,
// and the next start recovers from the WAL), waits down for the given
// time, in which connections are refused, and starts it again on the same
// port. Only a server from Start may be restarted.
func (s *Server) Restart(t testing.TB, down time.Duration) {
	t.Helper()
	if s == shared {
		t.Fatal("pgtest: the shared server is not restarted: use Start")
	}
	s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.stderr.Close()
	time.Sleep(down)
	// The port was this server's a moment ago; it may take a few tries
	// before the kernel lets the new process bind it.
	var (
		log []byte
		err error
	)
	for attempt := 0; attempt < 3; attempt++ {
		if log, err = s.run(); err == nil {
			return
		}
	}
	t.Fatalf("pgtest: restart: %v: %s", err, log)
}

func (s *Server) waitReady(limit time.Duration) error {
	s.exited = make(chan struct{})
	var werr error
	go func() { werr = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.AdminURL)
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("server exited: %v", werr)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	// SIGINT is PostgreSQL's fast shutdown.
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.stderr.Close()
	os.RemoveAll(s.dir)
}
