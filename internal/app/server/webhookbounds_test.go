package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// TestWebhookSlowTenantLeavesRoom: one owner's 16 webhooks at a receiver
// that never answers hold at most PerOwner of the in-flight slots, so
// another owner's healthy webhook is delivered while they hang.
func TestWebhookSlowTenantLeavesRoom(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true, func(o *server.Options) {
		o.Webhooks.Timeout = 10 * time.Minute // the hanging attempts outlast the test
		o.Webhooks.MaxInFlight = 16           // one per slow webhook would take every slot
		o.Webhooks.PerOwner = 4
	})
	hang := make(chan struct{})
	var inFlight, most atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); slow.Close() })
	fast := newReceiver(t, nil)
	mal := e.token("evil", "mallory", server.RoleEmitter)
	alice := e.token("acme", "alice", server.RoleEmitter)
	for i := range 16 {
		e.createHook(mal, fmt.Sprintf("%s/%d", slow.URL, i), `{}`, "view")
	}
	e.createHook(alice, fast.srv.URL, `{}`, "view")
	for i := range 8 {
		e.write(mal, fmt.Sprintf(`{"title": "m%d", "context": {}}`, i))
	}
	waitUntil(t, "mallory's attempts in flight", func() bool { return inFlight.Load() >= 4 })
	e.write(alice, `{"title": "healthy", "context": {"k": "ALICE-HEALTHY"}}`)
	waitUntil(t, "alice's delivery", func() bool { return countFor(fast, "ALICE-HEALTHY") > 0 })
	if m := most.Load(); m > 4 {
		t.Errorf("%d of mallory's attempts in flight at once, want at most 4 (PerOwner)", m)
	}
}

// countFor counts requests whose body mentions s.
func countFor(rc *receiver, s string) int {
	n := 0
	for _, q := range rc.requests() {
		if strings.Contains(string(q.body), s) {
			n++
		}
	}
	return n
}
