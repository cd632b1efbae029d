package webhook

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestLentSlotsStarveThirdOwner: MaxInFlight 8, a share of 2. Owner A's
// hanging endpoints are lent slots up to 6 (8 less one share); owner B's
// hanging endpoints then take the one share kept free. Owner C's single
// delivery now finds no slot until A's lent attempts time out (the
// client's timeout, up to minutes), although A holds three shares and C
// none: the reserve is one share for all other owners together, so a
// lender starves every owner after the first. Without the lending C
// would have been served at once (A 2, B 2, C 1 of 8). C should get a
// slot while A holds lent ones (lent slots given back first, or a share
// kept per owner waiting).
func TestLentSlotsStarveThirdOwner(t *testing.T) {
	release := make(chan struct{})
	var inFlight atomic.Int64
	slow := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	defer close(release)
	fast := newReceiver(t, false, nil)
	q := &MemQueue{}
	add := func(owner, endpoint, url string, s Secret, n int) {
		for j := range n {
			if err := q.Enqueue(Delivery{Endpoint: endpoint, Owner: owner, URL: url,
				Message: Message{ID: fmt.Sprintf("msg_%s_%d", endpoint, j), Body: []byte(`{}`), Secrets: []Secret{s}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 8 {
		add("tenant-a", fmt.Sprintf("a%d", i), slow.srv.URL, slow.secret, 4)
	}
	c := NewClient(ClientOptions{AllowPrivate: true, AllowHTTP: true, Timeout: 10 * time.Minute})
	defer c.Close()
	run(t, q, DispatcherOptions{Client: c, MaxInFlight: 8, PerEndpoint: 4, Poll: 10 * time.Millisecond}) // PerOwner: 8/4
	waitFor(t, "owner A in the lent slots", func() bool { return inFlight.Load() == 6 })
	add("tenant-b", "b0", slow.srv.URL, slow.secret, 2)
	add("tenant-b", "b1", slow.srv.URL, slow.secret, 2)
	waitFor(t, "owner B in its share", func() bool { return inFlight.Load() == 8 })
	add("tenant-c", "c0", fast.srv.URL, fast.secret, 1)
	deadline := time.Now().Add(15 * time.Second)
	for fast.got.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("owner C's delivery got no slot in 15s while owner A holds 6 of 8 (3 shares) and C none")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
