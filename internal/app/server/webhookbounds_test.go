package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
)

// TestWebhookSlowTenantLeavesRoom: one owner's 16 webhooks at a receiver
// that never answers hold their share (PerOwner) and the slots no one else
// wants, all but one share of them, so another owner's healthy webhook is
// delivered while they hang.
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
	waitUntil(t, "mallory's attempts in the lent slots", func() bool { return inFlight.Load() >= 12 })
	e.write(alice, `{"title": "healthy", "context": {"k": "ALICE-HEALTHY"}}`)
	waitUntil(t, "alice's delivery", func() bool { return countFor(fast, "ALICE-HEALTHY") > 0 })
	if m := most.Load(); m > 12 {
		t.Errorf("%d of mallory's attempts in flight at once, want at most 12 (16 less a share of 4)", m)
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

// hookSeries is the webhook label values of the attempt series a curator
// of the token's owner reads on /metrics, with the attempts they count.
func hookSeries(t *testing.T, e *hookEnv, curator string) map[string]float64 {
	t.Helper()
	r := e.do("GET", "/metrics", curator, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", r.status, r.body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(r.body), "\n") {
		if !strings.HasPrefix(line, "ctxkit_webhook_attempts_total{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `webhook="`)
		hook, _, _ := strings.Cut(rest, `"`)
		var v float64
		fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
		out[hook] += v
	}
	return out
}

// TestWebhookMetricSlotsPerOwner: one owner's many webhooks get at most
// 10 series of their own, the rest summed under its "other"; another
// owner's webhook still gets its own; deleting webhooks drops their
// series and gives their slots back.
func TestWebhookMetricSlotsPerOwner(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	rc := newReceiver(t, nil)
	mal := e.token("evil", "mallory", server.RoleEmitter)
	malRoot := e.token("evil", "root", server.RoleCurator)
	var ids []string
	for range 30 {
		ids = append(ids, e.createHook(mal, rc.srv.URL, `{}`, "view").ID)
	}
	e.write(mal, `{"title": "m", "context": {}}`)
	var got map[string]float64
	waitUntil(t, "30 attempts counted", func() bool {
		got = hookSeries(t, e, malRoot)
		sum := 0.0
		for _, v := range got {
			sum += v
		}
		return sum == 30
	})
	if len(got) != 11 || got["other"] != 20 {
		t.Fatalf("mallory's 30 webhooks: series %v, want 10 of their own and other=20", got)
	}
	alice := e.token("acme", "alice", server.RoleEmitter)
	aliceRoot := e.token("acme", "root", server.RoleCurator)
	fast := newReceiver(t, nil)
	h := e.createHook(alice, fast.srv.URL, `{}`, "view")
	e.write(alice, `{"title": "a", "context": {}}`)
	waitUntil(t, "alice's attempt counted", func() bool { return hookSeries(t, e, aliceRoot)[h.ID] == 1 })
	if s := hookSeries(t, e, aliceRoot); len(s) != 1 {
		t.Errorf("alice's curator reads series %v, want only her webhook's", s)
	}

	for _, id := range ids {
		want(t, e.do("DELETE", "/webhooks/"+id, mal, nil), 204, "")
	}
	e.write(alice, `{"title": "b", "context": {}}`) // the fan-out notices the deletions
	waitUntil(t, "mallory's series dropped", func() bool { return len(hookSeries(t, e, malRoot)) == 0 })
	// Slots given back: a new webhook of mallory's has a series of its own.
	h2 := e.createHook(mal, rc.srv.URL, `{}`, "view")
	e.write(mal, `{"title": "m2", "context": {}}`)
	waitUntil(t, "mallory's new webhook's series", func() bool { return hookSeries(t, e, malRoot)[h2.ID] == 1 })
}

// contextReads is a store that notes the most context bytes one
// WebhookChanges call returned.
type contextReads struct {
	store.Store
	most atomic.Int64
}

func (s *contextReads) WebhookChanges(ctx context.Context, w store.Webhook, mark int64, limit int, withContext bool) ([]store.Change, int64, error) {
	cs, missed, err := s.Store.WebhookChanges(ctx, w, mark, limit, withContext)
	n := int64(0)
	for _, c := range cs {
		n += int64(len(c.Context))
	}
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	return cs, missed, err
}

// TestWebhookFanOutContextPages: a webhook whose selector reads contexts
// is fanned out in pages holding at most 8 MiB of contexts, however many
// large records are waiting, and every matching event is still delivered.
func TestWebhookFanOutContextPages(t *testing.T) {
	open := reopenableStore(t)
	big := func(o *server.Options) { o.MaxBodyBytes = 2 << 20 }
	// 1: the server takes the writes and fans nothing out.
	e1 := newHookEnv(t, open(t), nil, false, big)
	rc := newReceiver(t, nil)
	mal := e1.token("evil", "mallory", server.RoleEmitter)
	h := e1.createHook(mal, rc.srv.URL, `{"context_match": [{"path": "$.hit", "op": "exists"}]}`, "view")
	// Paused, the deliveries wait; the fan-out still reads every event.
	want(t, e1.do("PATCH", "/webhooks/"+h.ID, mal, map[string]any{"paused": true}), 200, "")
	pad := strings.Repeat("x", 900<<10)
	for i := range 24 {
		hit := ""
		if i%3 == 0 {
			hit = `"hit": true, `
		}
		e1.write(mal, fmt.Sprintf(`{"title": "m%d", "context": {%s"pad": %q}}`, i, hit, pad))
	}
	e1.stop()
	// 2: a restart finds 24 large events waiting.
	db := &contextReads{Store: open(t)}
	e := newHookEnv(t, db, e1.key, true, big)
	waitUntil(t, "8 deliveries made", func() bool { return len(deliveryIDs(t, e, mal, h.ID, "pending")) == 8 })
	if m := db.most.Load(); m > 8<<20 {
		t.Errorf("one read of the webhook's events held %d MiB of contexts, want at most 8", m>>20)
	}
	if m := db.most.Load(); m < 900<<10 {
		t.Errorf("the contexts were not read (at most %d bytes at once)", m)
	}
}
