package store_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/ctxkit/ctxkit/store"
)

// TestEventDeliveryID: the id of an event's delivery to a webhook is the
// same every time it is made, differs between webhooks and events, is a
// UUID of version 8, and sorts as the events do.
func TestEventDeliveryID(t *testing.T) {
	a, b := "01a220fe-a9a8-74a2-adc5-f5c6017f9488", "01a220fe-a9a8-7778-a659-a9267106e79c"
	first := store.EventDeliveryID(a, 7)
	if again := store.EventDeliveryID(a, 7); again != first {
		t.Fatalf("%s, then %s, for the same webhook and event", first, again)
	}
	seen := map[string]bool{}
	var ids []string
	for seq := int64(1); seq <= 300; seq++ {
		for _, w := range []string{a, b} {
			id := store.EventDeliveryID(w, seq)
			if seen[id] {
				t.Fatalf("%s made twice", id)
			}
			seen[id] = true
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 8 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("%s: version %d, variant %v, %v", id, u.Version(), u.Variant(), err)
			}
			if w == a {
				ids = append(ids, id)
			}
		}
	}
	if !slices.IsSorted(ids) {
		t.Fatal("one webhook's delivery ids do not sort as their events")
	}
	if store.EventDeliveryID(a, 1<<40) <= store.EventDeliveryID(a, 1<<40-1) {
		t.Fatal("large sequence numbers out of order")
	}
}
