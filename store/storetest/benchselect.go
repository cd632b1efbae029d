package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// BenchSelectorStreams measures what a change costs with 100 live streams
// of its owner open, each with the selector src (b.Run once per selector):
// one op is a create and its delivery to every stream. Run with a tag
// selector and one with context conditions, the ratio of the two is what
// matching on the record's context costs (the reader loads the context
// with the change, and decodes it once for all the streams).
func BenchSelectorStreams(b *testing.B, s store.Store) {
	const streams = 100
	for _, c := range []struct{ name, src string }{
		{"tag", `{"all_tags":["bench"]}`},
		{"context", `{"all_tags":["bench"],"context_match":[{"path":"$.status","op":"eq","value":"open"},{"path":"$.n","op":"gt","value":0}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			sel, err := store.ParseSelector([]byte(c.src))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start, err := s.LatestSeq(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var (
				got atomic.Int64
				wg  sync.WaitGroup
			)
			for range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, err := range s.Events(ctx, alice, start, sel) {
						if err != nil {
							return
						}
						got.Add(1)
					}
				}()
			}
			in := store.Breadcrumb{Title: "bench", Tags: []string{"bench"},
				Context: json.RawMessage(`{"status":"open","n":3,"items":[{"sku":"a","qty":1},{"sku":"b","qty":2}],"note":"a context of a few hundred bytes, as records commonly are"}`)}
			want := int64(0)
			for b.Loop() {
				if _, _, err := s.Create(ctx, alice, in, store.Idempotency{}); err != nil {
					b.Fatal(err)
				}
				want += streams
				for deadline := time.Now().Add(time.Minute); got.Load() < want; {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d deliveries", got.Load(), want)
					}
					time.Sleep(50 * time.Microsecond)
				}
			}
			cancel()
			wg.Wait()
		})
	}
}
