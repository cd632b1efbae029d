package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
)

// BenchmarkHistoryReads: History of one breadcrumb of 200 (5 versions of
// some 2 KiB each), and a webhook's page of 100 events with contexts
// (each joined to its history row).
func BenchmarkHistoryReads(b *testing.B) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(b.TempDir(), "ctxkit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	a := store.Actor{OwnerID: "o", AgentID: "a"}
	var ids []string
	for i := range 200 {
		bc, _, err := d.Create(ctx, a, store.Breadcrumb{Title: fmt.Sprintf("r%d", i), Context: json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 2000)))}, store.Idempotency{})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, bc.ID)
	}
	for v := range 4 {
		for _, id := range ids {
			if _, err := d.Update(ctx, a, id, 0, func(bc *store.Breadcrumb) error {
				bc.Context = json.RawMessage(fmt.Sprintf(`{"v":%d,"text":%q}`, v, strings.Repeat("y", 2000)))
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	sel, _ := store.ParseSelector([]byte(`{}`))
	w, _, err := d.CreateWebhook(ctx, a, store.Webhook{URL: "https://example.com/", Selector: sel})
	if err != nil {
		b.Fatal(err)
	}
	latest, _ := d.LatestSeq(ctx)
	b.Run("History", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			h, err := d.History(ctx, a, ids[(i*37)%len(ids)])
			if err != nil || len(h) != 5 {
				b.Fatal(len(h), err)
			}
		}
	})
	b.Run("ChangesWithContext", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			w.Cursor = int64((i * 97) % 800)
			cs, _, err := d.WebhookChanges(ctx, w, latest, 100, true)
			if err != nil || len(cs) != 100 {
				b.Fatal(len(cs), err)
			}
		}
	})
}
