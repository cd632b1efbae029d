package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ctxkit/ctxkit/store"
)

// TestEventDeliveryID: the id of an event's delivery to a webhook is the
// same every time it is made, differs between webhooks and events, is a
// UUIDv7 of the event's time, and sorts as the events do: by time, and
// within a millisecond by number.
func TestEventDeliveryID(t *testing.T) {
	a, b := "01a220fe-a9a8-74a2-adc5-f5c6017f9488", "01a220fe-a9a8-7778-a659-a9267106e79c"
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	first := store.EventDeliveryID(a, 7, at)
	if again := store.EventDeliveryID(a, 7, at); again != first {
		t.Fatalf("%s, then %s, for the same webhook and event", first, again)
	}
	seen := map[string]bool{}
	var ids []string
	for seq := int64(1); seq <= 3000; seq++ {
		when := at.Add(time.Duration(seq/7) * time.Millisecond) // several events a millisecond
		for _, w := range []string{a, b} {
			id := store.EventDeliveryID(w, seq, when)
			if seen[id] {
				t.Fatalf("%s made twice", id)
			}
			seen[id] = true
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("%s: version %d, variant %v, %v", id, u.Version(), u.Variant(), err)
			}
			if sec, nsec := u.Time().UnixTime(); time.Unix(sec, nsec).UnixMilli() != when.UnixMilli() {
				t.Fatalf("%s: time %v, want %v", id, time.Unix(sec, nsec), when)
			}
			if w == a {
				ids = append(ids, id)
			}
		}
	}
	if !slices.IsSorted(ids) {
		t.Fatal("one webhook's delivery ids do not sort as their events")
	}
	// Beside UUIDv7 ids made before and after the event's time.
	before, _ := uuid.NewV7()
	time.Sleep(2 * time.Millisecond)
	mid := store.EventDeliveryID(a, 1, time.Now())
	time.Sleep(2 * time.Millisecond)
	after, _ := uuid.NewV7()
	if !(before.String() < mid && mid < after.String()) {
		t.Fatalf("%s, %s, %s: not in the order they were made", before, mid, after)
	}
}
