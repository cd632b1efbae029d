package webhook

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestLentSlotsTakenBack: MaxInFlight 8, a share of 2. Owner A's hanging
// endpoints are lent the slots no one else wants, up to 6 (all but one
// share). Owner B's hanging endpoints then take the share kept free, and
// two lent slots are taken back, no more, so a share is free again (A
// keeps its share and 2 lent): owner C's delivery goes out while A's and
// B's attempts still hang.
func TestLentSlotsTakenBack(t *testing.T) {
	release := make(chan struct{})
	hanging := func(n *atomic.Int64) *receiver {
		return newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
			n.Add(1)
			defer n.Add(-1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return true
		})
	}
	var aIn, bIn atomic.Int64
	slowA, slowB := hanging(&aIn), hanging(&bIn)
	defer close(release)
	fast := newReceiver(t, false, nil)
	q := &MemQueue{}
	add := func(owner, endpoint string, rc *receiver, n int) {
		for j := range n {
			if err := q.Enqueue(Delivery{Endpoint: endpoint, Owner: owner, URL: rc.srv.URL,
				Message: Message{ID: fmt.Sprintf("msg_%s_%d", endpoint, j), Body: []byte(`{}`), Secrets: []Secret{rc.secret}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 8 {
		add("tenant-a", fmt.Sprintf("a%d", i), slowA, 4)
	}
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true, Timeout: 10 * time.Minute})
	defer c.Close()
	run(t, q, DispatcherOptions{Client: c, MaxInFlight: 8, PerEndpoint: 4, Poll: 10 * time.Millisecond}) // PerOwner: 8/4
	waitFor(t, "owner A in the lent slots", func() bool { return aIn.Load() == 6 })
	add("tenant-b", "b0", slowB, 2)
	add("tenant-b", "b1", slowB, 2)
	waitFor(t, "owner B in its share, two of owner A's lent slots taken back", func() bool { return bIn.Load() == 2 && aIn.Load() == 4 })
	add("tenant-c", "c0", fast, 1)
	waitFor(t, "owner C's delivery", func() bool { return fast.got.Load() == 1 })
	// C's attempt took one more lent slot back; slots being given back
	// are counted, so no more than that was taken.
	if a, b := aIn.Load(), bIn.Load(); a < 3 || a > 4 || b != 2 {
		t.Errorf("in flight: owner A %d, owner B %d; want 3 or 4, and 2", a, b)
	}
}
