package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/store"
)

// TestScopeEndsWithTransaction: after reads (one pipeline) and writes (a
// transaction) for an owner, no pooled connection still names that owner,
// and the statement bounds are in force.
func TestScopeEndsWithTransaction(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "acme", AgentID: "x"}
	for i := 0; i < 20; i++ {
		b, _, err := d.Create(ctx, a, store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`)}, store.Idempotency{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Get(ctx, a, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	conns := d.pool.AcquireAllIdle(ctx)
	if len(conns) == 0 {
		t.Fatal("no idle connections to inspect")
	}
	for _, c := range conns {
		var owner, sys *string
		var timeout string
		err := c.QueryRow(ctx, `SELECT current_setting('ctxkit.owner_id', true), current_setting('ctxkit.system', true), current_setting('statement_timeout')`).Scan(&owner, &sys, &timeout)
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
		if (owner != nil && *owner != "") || (sys != nil && *sys != "") {
			t.Errorf("a pooled connection still carries owner %q system %q", deref(owner), deref(sys))
		}
		if timeout != "30s" {
			t.Errorf("statement_timeout %q", timeout)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// TestListenerPings: a listening connection that stays silent is pinged
// (or replaced), and what other replicas write still arrives promptly, well
// before the poll that is the safety net would bring it.
func TestListenerPings(t *testing.T) {
	saved := listenPing
	listenPing = 50 * time.Millisecond
	defer func() { listenPing = saved }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := pgtest.Shared(t).NewDatabase(t)
	a, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	actor := store.Actor{OwnerID: "o", AgentID: "x"}
	events := a.Events(ctx, actor, -1, nil)
	time.Sleep(300 * time.Millisecond) // several silent periods, several pings
	go func() {
		time.Sleep(100 * time.Millisecond)
		b.Create(ctx, actor, store.Breadcrumb{Title: "t", Context: json.RawMessage(`{}`)}, store.Idempotency{})
	}()
	start := time.Now()
	for e, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind != store.Created {
			t.Fatalf("event %+v", e)
		}
		break
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the event took %v: the listener was lost", d)
	}
}

// TestFailMapsDatabaseErrors: what PostgreSQL refuses becomes the error a
// client can act on.
func TestFailMapsDatabaseErrors(t *testing.T) {
	d := &DB{}
	ctx := context.Background()
	for code, want := range map[string]store.Code{
		"22003": store.CodeInvalid,             // numeric out of range (a context number)
		"22P05": store.CodeInvalid,             // untranslatable character
		"54000": store.CodeTooLarge,            // index row too large
		"40P01": store.CodeUnavailable,         // deadlock
		"40001": store.CodeUnavailable,         // serialization failure
		"57014": store.CodeUnavailable,         // statement timeout
		"57P01": store.CodeUnavailable,         // administrator shutdown
		"53300": store.CodeUnavailable,         // too many connections
		"55P03": store.CodeUnavailable,         // lock not available
		"57P02": store.CodeUnavailable,         // crash shutdown
		"57P03": store.CodeUnavailable,         // cannot connect now (starting up)
		"08006": store.CodeUnavailable,         // connection failure
		"08P01": store.CodeUnavailable,         // protocol violation (a cut stream)
		"53200": store.CodeUnavailable,         // out of memory: passes
		"53100": store.CodeInsufficientStorage, // disk full
	} {
		err := d.fail(ctx, fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "m"}))
		if !store.IsCode(err, want) {
			t.Errorf("%s: %v, want %s", code, err, want)
		}
	}
	// A connection lost mid-statement surfaces as the driver's or the
	// network's error, not PostgreSQL's.
	for _, lost := range []error{
		io.ErrUnexpectedEOF, io.EOF, pgconn.ErrConnClosed,
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
		&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE},
	} {
		if err := d.fail(ctx, fmt.Errorf("batch: %w", lost)); !store.IsCode(err, store.CodeUnavailable) {
			t.Errorf("%v: %v, want unavailable", lost, err)
		}
	}
	other := &pgconn.PgError{Code: "42P01", Message: "undefined table"}
	if err := d.fail(ctx, other); err != other {
		t.Errorf("a programming error was turned into %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.fail(cancelled, &pgconn.PgError{Code: "57014"}); store.IsCode(err, store.CodeUnavailable) {
		t.Errorf("a cancelled request is reported as the database's fault")
	}
}
