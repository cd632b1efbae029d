package webhook

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// FuzzMemQueueClaim: whatever the endpoints, owners, failing endpoints
// and in-flight counts, Due takes no more than the claim's limit, than
// an endpoint's room (1 while failing) or than an owner's room, never
// the same delivery twice; and it stops short of the limit only when
// every endpoint left is out of room.
func FuzzMemQueueClaim(f *testing.F) {
	f.Add([]byte{0x12, 0x34, 0x56, 0x78, 0x9a}, uint8(10), uint8(4), uint8(5))
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2}, uint8(3), uint8(1), uint8(0))
	f.Add([]byte{0xff, 0x0f, 0xf0}, uint8(0), uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, spec []byte, limit, perEndpoint, perOwner uint8) {
		if len(spec) > 256 {
			spec = spec[:256]
		}
		ctx := context.Background()
		now := time.Unix(1_700_000_000, 0)
		q := &MemQueue{Now: func() time.Time { return now }}
		// Each byte: an endpoint (low 3 bits), its owner (endpoint mod
		// 3), whether it fails (bit 3), and busy counts (bits 4-5).
		busy, ownerBusy, failing := map[string]int{}, map[string]int{}, map[string]bool{}
		ownerOf := func(e string) string { return fmt.Sprint("o", e[1]%3) }
		for i, b := range spec {
			e := fmt.Sprint("e", b&7)
			if err := q.Enqueue(Delivery{Endpoint: e, Owner: ownerOf(e), URL: "https://x.example.com/",
				Message: Message{ID: fmt.Sprint("m", i)}, FirstDue: now.Add(-time.Duration(len(spec)-i) * time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
			if b&8 != 0 {
				failing[e] = true
			}
			busy[e] = int(b>>4) & 3
			ownerBusy[ownerOf(e)] = int(b>>6) & 3
		}
		q.mu.Lock()
		for e := range failing {
			q.failing(e, now)
		}
		q.mu.Unlock()
		failingNow := failing
		c := Claim{Limit: int(limit), PerEndpoint: int(perEndpoint), Busy: busy, PerOwner: int(perOwner), OwnerBusy: ownerBusy}
		got, err := q.Due(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > c.Limit {
			t.Fatalf("%d claimed, limit %d", len(got), c.Limit)
		}
		taken, ownerTaken, seen := map[string]int{}, map[string]int{}, map[string]bool{}
		for _, d := range got {
			if seen[d.ID] {
				t.Fatalf("delivery %s claimed twice", d.ID)
			}
			seen[d.ID] = true
			taken[d.Endpoint]++
			ownerTaken[d.Owner]++
		}
		for e, n := range taken {
			if n > max(c.Room(e, failingNow[e]), 0) {
				t.Fatalf("endpoint %s: %d claimed, room %d (failing %v)", e, n, c.Room(e, failingNow[e]), failingNow[e])
			}
		}
		for o, n := range ownerTaken {
			if n > max(c.OwnerRoom(o), 0) {
				t.Fatalf("owner %s: %d claimed, room %d", o, n, c.OwnerRoom(o))
			}
		}
		if len(got) < c.Limit {
			for id, e := range q.endpoints {
				if e.due.Len() > 0 && taken[id] < c.Room(id, failingNow[id]) && ownerTaken[ownerOf(id)] < c.OwnerRoom(ownerOf(id)) {
					t.Fatalf("endpoint %s left with room (%d of %d taken, owner %d of %d) and the claim short (%d of %d)",
						id, taken[id], c.Room(id, failingNow[id]), ownerTaken[ownerOf(id)], c.OwnerRoom(ownerOf(id)), len(got), c.Limit)
				}
			}
		}
	})
}
