package feed_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/feed"
)

// TestReviewContextStreamLoadsOnlyItsOwnersContexts: one stream with a
// context condition, of one owner, must not make the reader load the
// contexts (up to store.MaxContextBytes each, read from history) of every
// other owner's changes, nor cut every other stream's reads to
// ContextPage. Today Load's withContext is one switch for the whole page:
// with a single context stream of acme's open, each of globex's changes
// comes with its context, which no stream of globex's reads.
func TestReviewContextStreamLoadsOnlyItsOwnersContexts(t *testing.T) {
	log := &memLog{}
	var foreign atomic.Int64 // context bytes loaded for globex's changes
	src := log.source()
	load := src.Load
	src.Load = func(ctx context.Context, after int64, limit int, withContext bool) ([]store.Change, error) {
		cs, err := load(ctx, after, limit, withContext)
		for _, c := range cs {
			if c.OwnerID == "globex" {
				foreign.Add(int64(len(c.Context)))
			}
		}
		return cs, err
	}
	f := feed.New(src, feed.Options{})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sel, err := store.ParseSelector([]byte(`{"context_match":[{"path":"$.n","op":"eq","value":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	acme := store.Actor{OwnerID: "acme", AgentID: "alice"}
	globex := store.Actor{OwnerID: "globex", AgentID: "bob"}
	open(ctx, f, acme, sel, 0, nil)
	plain := open(ctx, f, globex, nil, 0, nil)
	deadline := time.Now().Add(10 * time.Second)
	for f.Streams() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	big := json.RawMessage(`{"n":1,"pad":"` + strings.Repeat("x", 64<<10) + `"}`)
	for range 40 {
		log.add(f, store.Change{Event: store.Event{Kind: store.Created, Version: 1, At: time.Now()},
			OwnerID: "globex", Visibility: store.Team, CreatedBy: "bob", Context: big})
	}
	plain.waitFor(t, log.expected(globex, nil, 0))
	if n := foreign.Load(); n > 0 {
		t.Errorf("a context stream of acme's made the reader load %d bytes of globex's contexts", n)
	}
}
